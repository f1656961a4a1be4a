"""kubeclient.informer.informer and factory: handler fan-out, ordering, replay, resync, sharing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from apimachinery.errors import ServiceUnavailable
from kubeclient.backoff import Backoff
from kubeclient.client import Clientset
from kubeclient.fake import FakeAPIServer
from kubeclient.informer.factory import InformerFactory
from kubeclient.informer.informer import SharedInformer, wait_for_cache_sync
from kubeclient.informer.store import NODE_NAME_INDEX, DeletedFinalStateUnknown, node_name_index_func
from kubeclient.resources import NODES, PODS
from kubeclient.types import Object


def pod(name: str, node: str = "") -> Object:
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}], **({"nodeName": node} if node else {})}}


def name_of(obj: Any) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return "tomb:" + obj.key
    return str(obj["metadata"]["name"])


async def until(predicate: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


@asynccontextmanager
async def running(informer: SharedInformer) -> AsyncIterator[SharedInformer]:
    stop = asyncio.Event()
    task = asyncio.create_task(informer.run(stop))
    try:
        assert await informer.wait_for_sync(2)
        yield informer
    finally:
        stop.set()
        await asyncio.wait_for(task, 2)


def make(cs: Clientset, **kwargs: Any) -> SharedInformer:
    return SharedInformer(cs.pods, backoff=Backoff(initial=0.01, cap=0.05), **kwargs)


async def test_handlers_see_every_change_in_order_after_the_cache() -> None:
    cs = Clientset(FakeAPIServer())
    await cs.pods.create(pod("a"))
    informer = make(cs)
    seen: list[tuple[str, str, bool]] = []

    def cached(obj: Any) -> bool:
        key = f"default/{name_of(obj)}"
        return informer.indexer.get_by_key(key) is not None

    informer.add_event_handler(
        on_add=lambda o: seen.append(("add", name_of(o), cached(o))),
        on_update=lambda old, new: seen.append(("update", name_of(new), cached(new))),
        on_delete=lambda o: seen.append(("delete", name_of(o), cached(o))),
    )
    assert not informer.has_synced()
    async with running(informer):
        assert informer.has_synced()
        assert seen == [("add", "a", True)]
        await cs.pods.create(pod("b"))
        await cs.pods.patch("b", {"metadata": {"labels": {"x": "1"}}}, namespace="default")
        await cs.pods.delete("b", "default")
        await until(lambda: len(seen) == 4)
    assert seen[1:] == [("add", "b", True), ("update", "b", True), ("delete", "b", False)]


async def test_async_handlers_are_ordered_and_do_not_block_plain_ones() -> None:
    cs = Clientset(FakeAPIServer())
    informer = make(cs)
    gate = asyncio.Event()
    slow: list[str] = []
    fast: list[str] = []

    async def slow_add(obj: Object) -> None:
        await gate.wait()
        slow.append(name_of(obj))

    informer.add_event_handler(on_add=slow_add)
    informer.add_event_handler(on_add=lambda o: fast.append(name_of(o)))
    async with running(informer):
        for name in ("a", "b", "c"):
            await cs.pods.create(pod(name))
        await until(lambda: fast == ["a", "b", "c"])
        assert slow == []
        gate.set()
        await until(lambda: slow == ["a", "b", "c"])


async def test_a_handler_added_late_is_replayed_the_cache() -> None:
    cs = Clientset(FakeAPIServer())
    for name in ("a", "b"):
        await cs.pods.create(pod(name))
    informer = make(cs)
    async with running(informer):
        late: list[str] = []
        informer.add_event_handler(on_add=lambda o: late.append(name_of(o)))
        assert sorted(late) == ["a", "b"]
        await cs.pods.create(pod("c"))
        await until(lambda: len(late) == 3)


async def test_failing_handler_does_not_stop_the_others() -> None:
    cs = Clientset(FakeAPIServer())
    informer = make(cs)
    seen: list[str] = []

    def boom(obj: Object) -> None:
        raise RuntimeError("handler bug")

    informer.add_event_handler(on_add=boom)
    informer.add_event_handler(on_add=lambda o: seen.append(name_of(o)))
    async with running(informer):
        await cs.pods.create(pod("a"))
        await cs.pods.create(pod("b"))
        await until(lambda: seen == ["a", "b"])


async def test_resync_redelivers_cached_objects_as_updates() -> None:
    cs = Clientset(FakeAPIServer())
    await cs.pods.create(pod("a"))
    informer = make(cs, resync_period=0.02)
    resyncs: list[tuple[str, bool]] = []
    informer.add_event_handler(on_update=lambda old, new: resyncs.append((name_of(new), old is new)))
    async with running(informer):
        await until(lambda: len(resyncs) >= 2)
    assert all(r == ("a", True) for r in resyncs)


async def test_remove_event_handler_stops_delivery() -> None:
    cs = Clientset(FakeAPIServer())
    informer = make(cs)
    seen: list[str] = []
    reg = informer.add_event_handler(on_add=lambda o: seen.append(name_of(o)))
    async with running(informer):
        await cs.pods.create(pod("a"))
        await until(lambda: seen == ["a"])
        await informer.remove_event_handler(reg)
        await cs.pods.create(pod("b"))
        await until(lambda: informer.indexer.get_by_key("default/b") is not None)
    assert seen == ["a"]


async def test_factory_shares_informers_and_syncs_them_together() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.pods.create(pod("a", node="n1"))
    await cs.nodes.create({"metadata": {"name": "n1"}})
    factory = InformerFactory(cs, backoff=Backoff(initial=0.01, cap=0.05))
    pods = factory.informer(PODS)
    assert factory.informer(PODS) is pods
    assert factory.informer(PODS, field_selector="spec.nodeName=n1") is not pods
    nodes = factory.informer(NODES)
    pods.add_indexers({NODE_NAME_INDEX: node_name_index_func})
    stop = asyncio.Event()
    factory.start(stop)
    factory.start(stop)  # idempotent
    try:
        assert await factory.wait_for_cache_sync(2)
        assert await wait_for_cache_sync(pods, nodes, timeout=1)
        assert [name_of(o) for o in pods.indexer.by_index(NODE_NAME_INDEX, "n1")] == ["a"]
        assert nodes.store.get_by_key("n1") is not None
        await until(lambda: fake.watch_count == 3)  # pods, pods on n1, nodes: one watch each, not one per request
        await asyncio.sleep(0.02)
        assert fake.watch_count == 3
    finally:
        stop.set()
        await asyncio.wait_for(factory.shutdown(), 2)


async def test_wait_for_sync_times_out_when_not_running() -> None:
    informer = make(Clientset(FakeAPIServer()))
    assert not await informer.wait_for_sync(0.01)


async def test_wait_for_cache_sync_gives_up_when_told_to_stop() -> None:
    """An apiserver that refuses every list: the wait ends (False) when ``stop`` is set or the timeout passes."""
    fake = FakeAPIServer()
    fake.fail_next(ServiceUnavailable("etcd is away"), verb="GET", times=1_000_000)
    informer = SharedInformer(Clientset(fake).pods, backoff=Backoff(initial=0.01, cap=0.05))
    stop = asyncio.Event()
    task = asyncio.create_task(informer.run(stop))
    try:
        assert not await wait_for_cache_sync(informer, timeout=0.1)
        waiting = asyncio.create_task(wait_for_cache_sync(informer, stop=stop))
        await asyncio.sleep(0.1)
        assert not waiting.done()  # nothing synced, no timeout: it waits...
        stop.set()
        assert await asyncio.wait_for(waiting, 2) is False  # ...until told to stop
    finally:
        stop.set()
        await task


async def test_the_factorys_wait_for_cache_sync_also_ends_when_told_to_stop() -> None:
    """A process told to stop before its informers synced (the DNS addon's, forbidden until its RBAC exists) stops
    then, not after a wait of its own."""
    fake = FakeAPIServer()
    fake.fail_next(ServiceUnavailable("forbidden for now"), verb="GET", times=1_000_000)
    factory = InformerFactory(Clientset(fake), backoff=Backoff(initial=0.01, cap=0.05))
    factory.informer(PODS)
    stop = asyncio.Event()
    factory.start(stop)
    try:
        waiting = asyncio.create_task(factory.wait_for_cache_sync(stop=stop))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        stop.set()
        assert await asyncio.wait_for(waiting, 2) is False
    finally:
        stop.set()
        await asyncio.wait_for(factory.shutdown(), 2)
