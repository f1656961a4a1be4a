"""Updates start from the watch cache's object; one behind etcd (another apiserver wrote meanwhile) must never show.

Two ``ResourceStore``s over one real etcd, as two apiservers with their own watch caches; the first's cache is
stopped, so it keeps an old version of the object while the second writes newer ones.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from apimachinery import errors
from apiserver.registry.configmaps import ConfigMapStrategy
from apiserver.registry.store import ResourceStore
from apiserver.storage.etcd3 import EtcdStorage
from kubelab.etcd import EtcdServer


@pytest.fixture()
async def stores(etcd: EtcdServer) -> AsyncIterator[tuple[ResourceStore, ResourceStore]]:
    storages = [EtcdStorage([etcd.url]), EtcdStorage([etcd.url])]
    pair = []
    for storage in storages:
        await storage.connect()
        store = ResourceStore(ConfigMapStrategy(), storage)
        await store.cache.start()
        pair.append(store)
    yield pair[0], pair[1]
    for store, storage in zip(pair, storages, strict=False):
        await store.cache.stop()
        await storage.close()


def configmap(name: str, count: int) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"count": str(count)}}


async def behind(stores: tuple[ResourceStore, ResourceStore]) -> tuple[ResourceStore, str, str, int]:
    """``stale`` holds version 1 of a ConfigMap in its cache while etcd holds version 2 (written by ``fresh``)."""
    stale, fresh = stores
    ns, name = f"cached-{uuid.uuid4().hex[:6]}", "cm"
    first = await stale.create(configmap(name, 1), ns)
    await stale.cache.wait_rv(first.rv)
    await stale.cache.stop()  # its cache keeps version 1 from now on

    def bump(obj: dict) -> dict:
        obj["data"]["count"] = str(int(obj["data"]["count"]) + 1)
        return obj

    second = await fresh.guaranteed_update(ns, name, bump)
    assert stale.cache.get(stale.etcd_key(ns, name)).rv == first.rv < second.rv
    return stale, ns, name, second.rv


async def test_an_update_from_a_stale_cache_applies_to_etcds_current_object(stores) -> None:
    stale, ns, name, rv = await behind(stores)

    def bump(obj: dict) -> dict:
        obj["data"]["count"] = str(int(obj["data"]["count"]) + 1)
        return obj

    result = await stale.guaranteed_update(ns, name, bump)
    assert result.obj["data"] == {"count": "3"} and result.rv > rv  # 1 + 1 by the other, + 1 here


async def test_a_no_op_on_a_stale_cache_answers_etcds_current_object(stores) -> None:
    stale, ns, name, rv = await behind(stores)
    result = await stale.guaranteed_update(ns, name, lambda obj: obj)
    assert result.rv == rv and result.obj["data"] == {"count": "2"}


async def test_preconditions_are_checked_against_etcd_not_a_stale_cache(stores) -> None:
    stale, ns, name, rv = await behind(stores)

    def touch(obj: dict) -> dict:
        obj["data"]["touched"] = "yes"
        return obj

    assert (await stale.guaranteed_update(ns, name, touch, precondition_rv=str(rv))).obj["data"]["touched"] == "yes"
    with pytest.raises(errors.Conflict):  # the version the stale cache holds is not current
        await stale.guaranteed_update(ns, name, touch,
                                      precondition_rv=str(stale.cache.get(stale.etcd_key(ns, name)).rv))
