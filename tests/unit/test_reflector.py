"""kubeclient.informer.reflector against the in-memory fake: list, watch, re-watch, 410 relist, backoff."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager

from apimachinery.errors import ServiceUnavailable
from kubeclient.backoff import Backoff
from kubeclient.client import Clientset
from kubeclient.fake import FakeAPIServer
from kubeclient.informer.listwatch import ListWatch
from kubeclient.informer.reflector import Delta, Reflector, list_all_pages
from kubeclient.informer.store import DeletedFinalStateUnknown, Store
from kubeclient.rest import Unreachable
from kubeclient.types import Object, WatchEvent


def pod(name: str, ns: str = "default", **labels: str) -> Object:
    return {"metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def until(predicate: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


def fast_backoff() -> Backoff:
    return Backoff(initial=0.01, cap=0.05, jitter=0.1)


class Harness:
    def __init__(self, page_size: int | None = 500, backoff: Backoff | None = None, **list_watch: str) -> None:
        self.fake = FakeAPIServer()
        self.cs = Clientset(self.fake)
        self.store = Store()
        self.deltas: list[Delta] = []
        self.reflector = Reflector(ListWatch(self.cs.pods, **list_watch), self.store, on_delta=self.deltas.append,
                                   page_size=page_size, backoff=backoff or fast_backoff())

    def names(self) -> list[str]:
        return sorted(o["metadata"]["name"] for o in self.store.list())

    def actions(self, verb: str) -> list[dict[str, str]]:
        return [a.params for a in self.fake.actions if a.verb == verb]

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Harness]:
        stop = asyncio.Event()
        task = asyncio.create_task(self.reflector.run(stop))
        try:
            await asyncio.wait_for(self.reflector.wait_for_sync(), 2)
            yield self
        finally:
            stop.set()
            await asyncio.wait_for(task, 2)


async def test_lists_from_rv_0_then_watches_from_the_lists_rv() -> None:
    h = Harness()
    await h.cs.pods.create(pod("a"))
    await h.cs.pods.create(pod("b"))
    async with h.running():
        assert h.names() == ["a", "b"]
        assert all(o["kind"] == "Pod" and o["apiVersion"] == "v1" for o in h.store.list())  # restored on list
        assert h.actions("GET")[0]["resourceVersion"] == "0"
        await until(lambda: bool(h.actions("WATCH")))
        watch = h.actions("WATCH")[0]
        assert watch["resourceVersion"] == "3" and watch["allowWatchBookmarks"] == "true"
        assert 300 <= int(watch["timeoutSeconds"]) < 600
        assert [d.type for d in h.deltas] == ["Added", "Added"]

        await h.cs.pods.create(pod("c"))
        await h.cs.pods.patch("a", {"metadata": {"labels": {"x": "y"}}}, namespace="default")
        await h.cs.pods.delete("b", "default")
        await until(lambda: h.names() == ["a", "c"])
        assert h.store.get_by_key("default/a")["metadata"]["labels"] == {"x": "y"}  # type: ignore[index]
        assert [d.type for d in h.deltas[2:]] == ["Added", "Updated", "Deleted"]
        updated = h.deltas[3]
        assert updated.old is not None and updated.old["metadata"].get("labels") == {}
        assert h.reflector.last_sync_resource_version == str(h.fake.resource_version)


async def test_paginates_the_list_with_limit_and_continue() -> None:
    h = Harness(page_size=2)
    for i in range(5):
        await h.cs.pods.create(pod(f"p{i}"))
    async with h.running():
        assert h.names() == [f"p{i}" for i in range(5)]
        lists = h.actions("GET")
        assert len(lists) == 3
        assert all(p["limit"] == "2" for p in lists)
        assert "continue" not in lists[0] and "continue" in lists[1]
        assert "resourceVersion" not in lists[1]  # continue pins the version; sending one is an error


async def test_rewatches_from_last_rv_when_the_stream_ends_without_relisting() -> None:
    h = Harness()
    await h.cs.pods.create(pod("a"))
    async with h.running():
        await until(lambda: bool(h.actions("WATCH")))
        await h.cs.pods.create(pod("b"))
        await until(lambda: h.names() == ["a", "b"])
        rv_before = h.reflector.last_sync_resource_version
        h.fake.close_watches()  # server timeout…
        await h.cs.pods.create(pod("c"))  # …and a change before the reflector is back
        await until(lambda: h.names() == ["a", "b", "c"])
        assert len(h.actions("GET")) == 1  # no relist
        assert h.actions("WATCH")[1]["resourceVersion"] == rv_before
        assert [d.type for d in h.deltas] == ["Added", "Added", "Added"]  # nothing lost, nothing repeated


async def test_bookmarks_advance_the_resume_point() -> None:
    h = Harness()
    async with h.running():
        await until(lambda: bool(h.actions("WATCH")))
        await h.cs.nodes.create({"metadata": {"name": "n1"}})  # other resources move the global version
        h.fake.bookmark()
        await until(lambda: h.reflector.last_sync_resource_version == str(h.fake.resource_version))
        h.fake.close_watches()
        await until(lambda: len(h.actions("WATCH")) == 2)
        assert h.actions("WATCH")[1]["resourceVersion"] == str(h.fake.resource_version)
        assert h.deltas == []  # a bookmark changes nothing in the store


async def test_410_relists_and_delivers_tombstones_for_deletes_missed_meanwhile() -> None:
    h = Harness()
    for name in ("a", "b", "c"):
        await h.cs.pods.create(pod(name))
    async with h.running():
        await until(lambda: bool(h.actions("WATCH")))
        last_b = h.store.get_by_key("default/b")
        # The watch drops; while it is down b is deleted, d created, a changed and history compacted.
        h.fake.close_watches()
        await h.cs.pods.delete("b", "default")
        await h.cs.pods.create(pod("d"))
        await h.cs.pods.patch("a", {"metadata": {"labels": {"v": "2"}}}, namespace="default")
        h.fake.compact()
        await until(lambda: h.names() == ["a", "c", "d"])
        assert len(h.actions("GET")) == 2  # one relist
        relist = h.deltas[3:]
        tombstones = [d for d in relist if d.type == "Deleted"]
        assert len(tombstones) == 1
        tomb = tombstones[0].object
        assert isinstance(tomb, DeletedFinalStateUnknown)
        assert tomb.key == "default/b" and tomb.obj is last_b
        kept = {(d.type, d.object["metadata"]["name"]) for d in relist if d.type != "Deleted"}  # type: ignore[index]
        assert kept == {("Updated", "a"), ("Updated", "c"), ("Added", "d")}
        # and the watch continues from the relist
        await h.cs.pods.create(pod("e"))
        await until(lambda: "e" in h.names())


async def test_list_errors_back_off_and_retry() -> None:
    h = Harness()
    await h.cs.pods.create(pod("a"))
    h.fake.fail_next(ServiceUnavailable("down"), verb="GET", times=3)
    async with h.running():
        assert h.names() == ["a"]
        assert len(h.actions("GET")) == 4


async def test_a_server_not_listening_yet_is_polled_at_start_and_backed_off_from_after() -> None:
    """Connection refused before the first list (the apiserver starting beside its clients): tried again every
    0.1 s, not after client-go's 0.8 s doubling backoff; once synced, the same error backs off as any other."""
    h = Harness(backoff=Backoff(initial=5.0, cap=5.0, jitter=0.0))
    await h.cs.pods.create(pod("a"))
    h.fake.fail_next(Unreachable("GET /api/v1/pods: connection refused"), verb="GET", times=3)
    async with h.running():  # synced within its 2 s, so no 5 s backoff was waited
        assert h.names() == ["a"]
        assert len(h.actions("GET")) == 4
        await h.cs.pods.create(pod("b"))  # an event, so the watch's end is not a short watch's error
        await until(lambda: h.names() == ["a", "b"])
        h.fake.fail_next(Unreachable("GET /api/v1/pods?watch=1: connection refused"), verb="WATCH", times=5)
        h.fake.close_watches()
        await until(lambda: len(h.actions("WATCH")) == 2)
        await asyncio.sleep(0.5)
        assert len(h.actions("WATCH")) == 2  # backing off (5 s), not polling


async def test_watch_errors_back_off_and_resume_without_relist() -> None:
    h = Harness()
    async with h.running():
        await until(lambda: bool(h.actions("WATCH")))
        h.fake.fail_next(ServiceUnavailable("down"), verb="WATCH", times=2)
        h.fake.close_watches()
        await until(lambda: len(h.actions("WATCH")) == 4)
        await h.cs.pods.create(pod("a"))
        await until(lambda: h.names() == ["a"])
        assert len(h.actions("GET")) == 1


async def test_selectors_are_sent_and_objects_leaving_the_selection_are_deleted() -> None:
    h = Harness(label_selector="app=web")
    await h.cs.pods.create(pod("web", app="web"))
    await h.cs.pods.create(pod("db", app="db"))
    async with h.running():
        assert h.names() == ["web"]
        await until(lambda: bool(h.actions("WATCH")))
        assert h.actions("WATCH")[0]["labelSelector"] == "app=web"
        await h.cs.pods.patch("web", {"metadata": {"labels": {"app": "other"}}}, namespace="default")
        await until(lambda: h.names() == [])
        assert h.deltas[-1].type == "Deleted"


async def test_run_returns_when_stopped_and_closes_the_stream() -> None:
    h = Harness()
    async with h.running():
        await until(lambda: h.fake.watch_count == 1)
    assert h.fake.watch_count == 0


class _CompactingListWatch:
    """Wraps a ListWatch; after the first page the store moves on and compacts, so the continue token expires."""

    def __init__(self, inner: ListWatch, fake: FakeAPIServer) -> None:
        self.inner, self.fake, self.calls = inner, fake, 0

    async def list(self, *, resource_version: str | None, limit: int | None, continue_: str | None) -> Object:
        self.calls += 1
        result = await self.inner.list(resource_version=resource_version, limit=limit, continue_=continue_)
        if self.calls == 1:
            await Clientset(self.fake).nodes.create({"metadata": {"name": "n1"}})
            self.fake.compact()
        return result

    def watch(self, *, resource_version: str, timeout_seconds: int | None,
              allow_bookmarks: bool) -> AsyncGenerator[WatchEvent, None]:
        return self.inner.watch(resource_version=resource_version, timeout_seconds=timeout_seconds,
                                allow_bookmarks=allow_bookmarks)


async def test_expired_continue_token_falls_back_to_one_full_list() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    for i in range(5):
        await cs.pods.create(pod(f"p{i}"))
    lw = _CompactingListWatch(ListWatch(cs.pods), fake)
    items, rv = await list_all_pages(lw, "0", 2)
    assert sorted(o["metadata"]["name"] for o in items) == [f"p{i}" for i in range(5)]
    assert rv == str(fake.resource_version)
    assert lw.calls == 3  # first page, expired continue, full list
    full = fake.actions[-1].params
    assert "limit" not in full and "continue" not in full


async def test_stats_count_lists_relists_410s_and_events_for_debug_informers() -> None:
    from kubeclient.informer import snapshot

    h = Harness(label_selector="app=web")
    await h.cs.pods.create(pod("a", app="web"))
    async with h.running():
        stats = h.reflector.stats
        assert (stats.resource, stats.namespace, stats.label_selector) == ("pods", "", "app=web")
        assert (stats.lists, stats.gone, stats.events) == (1, 0, 0)
        await until(lambda: bool(h.actions("WATCH")))
        await h.cs.pods.create(pod("b", app="web"))
        await until(lambda: stats.events == 1)
        assert stats.resource_version == h.reflector.last_sync_resource_version and stats.rate() > 0
        h.fake.close_watches()
        await h.cs.pods.create(pod("c", app="web"))
        h.fake.compact()
        await until(lambda: stats.lists == 2)
        assert stats.gone == 1
        (entry,) = [e for e in snapshot("test")["items"] if e["labelSelector"] == "app=web"]
        assert (entry["relists"], entry["gone"], entry["resource"]) == (1, 1, "pods")
