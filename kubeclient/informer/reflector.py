"""``Reflector``: keeps a ``Store`` equal to the server's collection by listing once and then watching.

The loop, and what each guarantee protects against:

1. **List** — the first list asks for ``resourceVersion=0`` (any cached state is fine: cheap for the server);
   later relists ask for at least the last version seen, or for a consistent read once the server said that
   version is gone.  Pages of ``page_size`` are followed through ``continue``; if a continue token expires
   mid-way, one unpaginated consistent list replaces the pages (client-go's pager fallback).
2. **Replace** — the store becomes exactly the list.  Every listed object is delivered as ``Added`` (new key)
   or ``Updated`` (known key); every key that vanished is delivered as ``Deleted`` with a
   ``DeletedFinalStateUnknown`` tombstone, because its delete happened while nobody was watching.
3. **Watch** from the list's resourceVersion, applying each event to the store before delivering it, and
   advancing the resume point with every event and ``BOOKMARK``.  When the stream ends (server timeout,
   EOF) the reflector re-watches at once from that point: no relist, no lost or repeated events.
4. **410 Expired** (as an HTTP error or an ``ERROR`` event) means the resume point is gone: relist (1).
5. **Other errors** back off (jittered, capped exponential, ``kubeclient.backoff``) and retry: transient
   ones (unreachable, timeout, 429, 5xx) resume the watch, anything else relists.  A watch that ends in
   under a second without a single event counts as an error, so a misbehaving server is not hammered.
   Except at the start: while the first list finds nothing listening (``Unreachable``, the apiserver still
   starting beside its clients), it waits for the address to accept connections (``until_listening``) for up
   to ``SERVER_WAIT`` and lists at once, as kube's components wait for the apiserver at start-up (kube-proxy
   polls for its Node every 200 ms, the controller-manager polls ``/healthz``), instead of backing off
   0.8–1.6 s after the apiserver came up.

The store is written only by this reflector; ``on_delta`` is called synchronously right after each write,
so a handler that reads the store sees at least the state the delta describes.  ``run(stop)`` returns once
``stop`` is set (the open stream is closed), which is how tests and components end it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from apimachinery.errors import Gone, ServiceUnavailable, StatusError
from kubeclient.backoff import Backoff
from kubeclient.clock import REAL_CLOCK, Clock
from kubeclient.informer.listwatch import ListerWatcher, describe
from kubeclient.informer.stats import REGISTRY
from kubeclient.informer.store import DeletedFinalStateUnknown, Store, meta_namespace_key
from kubeclient.rest import Unreachable, until_listening
from kubeclient.types import Object

log = logging.getLogger(__name__)

DeltaType = Literal["Added", "Updated", "Deleted"]


@dataclass(frozen=True, slots=True)
class Delta:
    """One change applied to the store: ``old`` is the previous state for ``Updated``."""

    type: DeltaType
    object: Object | DeletedFinalStateUnknown
    old: Object | None = None


DeltaHandler = Callable[[Delta], None]

_TRANSIENT_CODES = frozenset({429, 500, 503, 504})
_SHORT_WATCH = 1.0
SERVER_POLL = 0.1  # seconds between first lists while nothing listens (an error without the server's address)
SERVER_WAIT = 30.0  # how long from the reflector's start it waits for the server to listen; then the usual backoff


async def list_all_pages(lw: ListerWatcher, resource_version: str, page_size: int | None) -> tuple[list[Object], str]:
    """Every item of the collection and the list's resourceVersion, following ``continue`` tokens.

    A continue token that expires (410) mid-way is answered with one full consistent list instead.
    """
    first = await lw.list(resource_version=resource_version, limit=page_size, continue_=None)
    items: list[Object] = list(first.get("items") or ())
    meta = first.get("metadata") or {}
    list_rv: str = meta.get("resourceVersion") or ""
    token = meta.get("continue")
    while token:
        try:
            page = await lw.list(resource_version=None, limit=page_size, continue_=token)
        except Gone:
            log.info("%s: continue token expired, falling back to a full list", lw)
            full = await lw.list(resource_version="", limit=None, continue_=None)
            return list(full.get("items") or ()), (full.get("metadata") or {}).get("resourceVersion") or ""
        items.extend(page.get("items") or ())
        token = (page.get("metadata") or {}).get("continue")
    return items, list_rv


class Reflector:
    """Mirrors one list/watch into ``store``; see the module docstring for the guarantees."""

    def __init__(
        self,
        lw: ListerWatcher,
        store: Store,
        *,
        on_delta: DeltaHandler | None = None,
        name: str = "",
        page_size: int | None = 500,
        min_watch_timeout: float = 300.0,
        backoff: Backoff | None = None,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self._lw = lw
        self._store = store
        self._on_delta = on_delta
        self.name = name or repr(lw)
        self._page_size = page_size
        self._min_watch_timeout = min_watch_timeout
        self._clock = clock
        self._backoff = backoff or Backoff(clock=clock)
        self._rv = ""
        self._rv_unavailable = False
        self._synced = asyncio.Event()
        self.stats = describe(lw, self.name)  # for /debug/informers (kubeclient.informer.stats)
        REGISTRY.add(self.stats)

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the next watch resumes from ("" before the first list)."""
        return self._rv

    def has_synced(self) -> bool:
        """True once the first list has been applied to the store and delivered."""
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    async def run(self, stop: asyncio.Event) -> None:
        """List and watch until ``stop`` is set, then close the stream and return."""
        loop_task = asyncio.create_task(self._loop(), name=f"reflector {self.name}")
        stop_task = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({loop_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (loop_task, stop_task):
                task.cancel()
            await asyncio.gather(loop_task, stop_task, return_exceptions=True)
        if not loop_task.cancelled() and loop_task.exception() is not None:
            raise loop_task.exception()  # type: ignore[misc]

    async def _loop(self) -> None:
        need_list = True
        started = self._clock.monotonic()
        waiting = False  # for the server to listen, before the first list
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                    self._backoff.reset()
                await self._watch()
                continue
            except Gone as e:
                self.stats.gone += 1
                log.info("%s: resourceVersion %s expired (%s); relisting", self.name, self._rv, e.message)
                need_list = True
            except StatusError as e:
                left = SERVER_WAIT - (self._clock.monotonic() - started)
                if isinstance(e, Unreachable) and not self.has_synced() and left > 0:
                    if not waiting:
                        log.warning("%s: list failed, waiting for the server to listen: %s", self.name, e)
                        waiting = True
                    await self._until_listening(e, left)
                    continue
                transient = e.code in _TRANSIENT_CODES
                log.warning("%s: %s failed: %s", self.name, "list" if need_list else "watch", e)
                need_list = need_list or not transient
            except Exception:
                log.exception("%s: unexpected error; relisting", self.name)
                need_list = True
            await self._clock.sleep(self._backoff.next())

    async def _until_listening(self, refused: Unreachable, left: float) -> None:
        if refused.address is None:
            await self._clock.sleep(SERVER_POLL)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(until_listening(refused.address), left)

    async def _list(self) -> None:
        rv = "" if self._rv_unavailable else (self._rv or "0")
        try:
            items, list_rv = await list_all_pages(self._lw, rv, self._page_size)
        except Gone:
            self._rv_unavailable = True  # the next list must be a consistent read
            raise
        self._rv_unavailable = False
        previous = self._store.replace(items)
        self._rv = list_rv
        self.stats.listed(list_rv)
        emit = self._on_delta
        if emit is not None:
            for obj in items:
                old = previous.pop(meta_namespace_key(obj), None)
                emit(Delta("Added", obj) if old is None else Delta("Updated", obj, old))
            for key, old in previous.items():
                emit(Delta("Deleted", DeletedFinalStateUnknown(key, old)))
        self._synced.set()

    async def _watch(self) -> None:
        timeout = int(self._min_watch_timeout * (1.0 + random.random()))
        started = self._clock.monotonic()
        received = 0
        events = self._lw.watch(resource_version=self._rv, timeout_seconds=timeout, allow_bookmarks=True)
        store, emit = self._store, self._on_delta
        try:
            async for event in events:
                received += 1
                etype, obj = event.get("type"), event.get("object") or {}
                if etype == "ERROR":
                    raise StatusError.from_status(obj)
                if etype in ("ADDED", "MODIFIED"):
                    old = store.add(obj)
                    if emit is not None:
                        emit(Delta("Added", obj) if old is None else Delta("Updated", obj, old))
                elif etype == "DELETED":
                    store.delete(obj)
                    if emit is not None:
                        emit(Delta("Deleted", obj))
                elif etype != "BOOKMARK":
                    log.warning("%s: ignoring watch event of type %r", self.name, etype)
                    continue
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if rv:
                    self._rv = rv
                if etype == "BOOKMARK":
                    self.stats.resource_version = self._rv
                else:
                    self.stats.event(rv)
        finally:
            await events.aclose()
        if received == 0 and self._clock.monotonic() - started < _SHORT_WATCH:
            raise ServiceUnavailable(f"watch from {self._rv} ended after <{_SHORT_WATCH}s with no events")
        if received:
            self._backoff.reset()
