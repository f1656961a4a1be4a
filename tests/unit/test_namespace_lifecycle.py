"""The NamespaceLifecycle check of creates (``Registry.check_namespace``) against a watch cache that has not seen a
namespace's deletion yet: kube's forceLiveLookupCache — for a while after a namespace's DELETE, a create in it reads
the namespace afresh instead of trusting the cache."""

from __future__ import annotations

from typing import Any, cast

import orjson
import pytest

from apimachinery import errors
from apiserver.registry.registry import Registry
from apiserver.registry.store import ResourceStore
from apiserver.storage.cacher import CachedObject


class LaggingNamespaces:
    """The namespaces store as the check reads it: its cache shows ``ns`` active until ``wait_fresh`` (the cache
    catching up with etcd) reveals the deletion already stored."""

    qualified = "namespaces"

    def __init__(self) -> None:
        self.cache = self
        self.caught_up = False
        self.fresh_reads = 0

    def etcd_key(self, namespace: str | None, name: str) -> bytes:
        return f"/registry/namespaces/{name}".encode()

    def get(self, key: bytes) -> CachedObject:
        obj: dict[str, Any] = {"metadata": {"name": "ns"}, "status": {"phase": "Active"}}
        if self.caught_up:
            obj = {"metadata": {"name": "ns", "deletionTimestamp": "2026-12-07T00:00:00Z"},
                   "status": {"phase": "Terminating"}}
        return CachedObject("ns", None, orjson.dumps(obj), 2 if self.caught_up else 1, {}, {})

    async def wait_fresh(self) -> None:
        self.fresh_reads += 1
        self.caught_up = True


async def test_a_create_just_after_the_namespaces_delete_is_refused_though_the_cache_lags() -> None:
    registry = Registry([], storage=cast(Any, None))
    namespaces = LaggingNamespaces()
    registry.stores[("", "namespaces")] = cast(ResourceStore, namespaces)
    await registry.check_namespace("ns", "pods", "early")  # no deletion known: the cache is trusted
    assert namespaces.fresh_reads == 0
    registry.deleting(cast(ResourceStore, namespaces), "ns")
    with pytest.raises(errors.StatusError) as refused:
        await registry.check_namespace("ns", "pods", "late")
    assert refused.value.code == 403 and "because it is being terminated" in refused.value.message
    assert namespaces.fresh_reads == 1
