"""``SharedInformer``: one reflector and one indexed cache per list/watch, fanned out to many handlers.

Guarantees:

* Each handler sees every change of the cache, in order: ``on_add(obj)``, ``on_update(old, new)``,
  ``on_delete(obj_or_tombstone)`` (a ``DeletedFinalStateUnknown`` when the delete was missed during a relist).
* The cache is updated before handlers hear of a change, so a handler reading ``indexer`` never sees a state
  older than the notification it is handling.
* A handler registered after the cache was filled first receives ``on_add`` for every cached object.
* Every ``resync_period`` seconds each handler receives ``on_update(obj, obj)`` for every cached object
  (the same object twice: compare ``resourceVersion`` to tell a resync from a change).
* Handlers may be plain functions or coroutine functions.  Plain ones run inline, right after the cache write,
  and must be quick (compute a key, enqueue it).  A registration with any coroutine callback gets its own
  ordered buffer and task, so a slow handler never stalls the watch or the other handlers.
* A handler that raises is logged; the informer and the other handlers carry on.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kubeclient.backoff import Backoff
from kubeclient.client import ResourceClient
from kubeclient.clock import REAL_CLOCK, Clock
from kubeclient.informer.listwatch import ListWatch
from kubeclient.informer.reflector import Delta, Reflector
from kubeclient.informer.store import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    IndexFunc,
    namespace_index_func,
)
from kubeclient.types import Object

log = logging.getLogger(__name__)

AddFunc = Callable[[Object], Awaitable[None] | None]
UpdateFunc = Callable[[Object, Object], Awaitable[None] | None]
DeleteFunc = Callable[[Object | DeletedFinalStateUnknown], Awaitable[None] | None]


def _is_async(fn: Callable[..., Any] | None) -> bool:
    return fn is not None and (inspect.iscoroutinefunction(fn)
                               or inspect.iscoroutinefunction(type(fn).__call__))


class HandlerRegistration:
    """One registered handler: its callbacks and, when any is async, its ordered buffer and delivery task.

    (client-go splits this into ``ResourceEventHandler`` and ``processorListener``.)
    """

    def __init__(self, on_add: AddFunc | None, on_update: UpdateFunc | None, on_delete: DeleteFunc | None,
                 name: str) -> None:
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete
        self._name = name
        self._async = any(_is_async(f) for f in (on_add, on_update, on_delete))
        self._buffer: deque[Delta] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def notify(self, delta: Delta) -> None:
        """Deliver ``delta`` now (plain handlers) or queue it for this registration's task (async ones)."""
        if not self._async:
            try:
                self._call(delta)
            except Exception:
                log.exception("%s: event handler failed on %s", self._name, delta.type)
            return
        self._buffer.append(delta)
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._deliver(), name=f"{self._name} handler")

    def _call(self, delta: Delta) -> Awaitable[None] | None:
        if delta.type == "Added":
            return self.on_add(delta.object) if self.on_add else None  # type: ignore[arg-type]
        if delta.type == "Updated":
            return self.on_update(delta.old, delta.object) if self.on_update else None  # type: ignore[arg-type]
        return self.on_delete(delta.object) if self.on_delete else None

    async def _deliver(self) -> None:
        while True:
            while self._buffer:
                delta = self._buffer.popleft()
                try:
                    result = self._call(delta)
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("%s: event handler failed on %s", self._name, delta.type)
            self._wake.clear()
            await self._wake.wait()

    def pending(self) -> int:
        """Notifications queued but not yet delivered (always 0 for plain handlers)."""
        return len(self._buffer)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self._buffer.clear()


class SharedInformer:
    """List/watch ``client``'s resource (optionally one namespace, selectors) into ``indexer``; see module doc.

    ``indexers`` defaults to the namespace index (``NAMESPACE_INDEX``), as client-go's factory sets up.
    """

    def __init__(
        self,
        client: ResourceClient,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync_period: float | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        page_size: int | None = 500,
        min_watch_timeout: float = 300.0,
        backoff: Backoff | None = None,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self.client = client
        self.resource = client.resource
        self.indexer = Indexer({NAMESPACE_INDEX: namespace_index_func} if indexers is None else indexers)
        self.resync_period = resync_period
        self._clock = clock
        lw = ListWatch(client, namespace=namespace, label_selector=label_selector, field_selector=field_selector)
        self._reflector = Reflector(lw, self.indexer, on_delta=self._distribute, name=repr(lw),
                                    page_size=page_size, min_watch_timeout=min_watch_timeout,
                                    backoff=backoff, clock=clock)
        self._handlers: list[HandlerRegistration] = []
        self._started = False

    @property
    def store(self) -> Indexer:
        return self.indexer

    @property
    def last_sync_resource_version(self) -> str:
        return self._reflector.last_sync_resource_version

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        self.indexer.add_indexers(indexers)

    def add_event_handler(self, on_add: AddFunc | None = None, on_update: UpdateFunc | None = None,
                          on_delete: DeleteFunc | None = None) -> HandlerRegistration:
        """Register callbacks; returns the registration (for ``remove_event_handler``)."""
        handler = HandlerRegistration(on_add, on_update, on_delete, self._reflector.name)
        for obj in self.indexer.list():
            handler.notify(Delta("Added", obj))
        self._handlers.append(handler)
        return handler

    async def remove_event_handler(self, handler: HandlerRegistration) -> None:
        self._handlers.remove(handler)
        await handler.stop()

    def has_synced(self) -> bool:
        """True once the first complete list is in the cache and has been handed to the handlers."""
        return self._reflector.has_synced()

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait for ``has_synced``; False if ``timeout`` seconds pass first."""
        try:
            await asyncio.wait_for(self._reflector.wait_for_sync(), timeout)
        except TimeoutError:
            return False
        return True

    def _distribute(self, delta: Delta) -> None:
        for handler in tuple(self._handlers):
            handler.notify(delta)

    async def run(self, stop: asyncio.Event) -> None:
        """Run the reflector (and resync timer) until ``stop`` is set; an informer runs at most once."""
        if self._started:
            raise RuntimeError(f"{self._reflector.name}: informer already started")
        self._started = True
        resync = (asyncio.create_task(self._resync_loop(), name=f"resync {self._reflector.name}")
                  if self.resync_period else None)
        try:
            await self._reflector.run(stop)
        finally:
            if resync is not None:
                resync.cancel()
                await asyncio.gather(resync, return_exceptions=True)
            for handler in self._handlers:
                await handler.stop()

    async def _resync_loop(self) -> None:
        assert self.resync_period
        await self._reflector.wait_for_sync()
        while True:
            await self._clock.sleep(self.resync_period)
            for obj in self.indexer.list():
                self._distribute(Delta("Updated", obj, obj))


async def wait_for_cache_sync(*informers: SharedInformer, timeout: float | None = None,
                              stop: asyncio.Event | None = None) -> bool:
    """Wait until every informer has synced; False if ``timeout`` seconds pass or ``stop`` is set first (client-go's
    ``WaitForCacheSync(stopCh, ...)``: a process told to stop must not wait for an apiserver that is away)."""
    synced = asyncio.ensure_future(asyncio.gather(*(i.wait_for_sync() for i in informers)))
    waiters: set[asyncio.Future[Any]] = {synced, *([asyncio.ensure_future(stop.wait())] if stop is not None else [])}
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
    return synced.done() and not synced.cancelled() and synced.exception() is None
