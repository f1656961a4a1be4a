"""The watch cache (kube-apiserver's ``Cacher``): one etcd watch per resource, fanned out to every watcher.

For each resource the cache holds the current objects (decoded once, with their JSON bytes encoded once) and a
ring buffer of recent events. LISTs are answered from memory and watches are fed from it, so a thousand watchers
cost one etcd watch.

Guarantees:
- Events reach watchers in revision order, each exactly once; a watch that starts at resourceVersion R gets every
  change after R (exclusive), replayed from the ring buffer when it still holds them, else from etcd's history
  through a watch of its own; if etcd has compacted that history, the watch fails with 410 Expired.
- ``wait_fresh()`` returns once the cache reflects everything etcd had committed when it was called, so
  consistent reads can be served from memory. One etcd read gives the prefix's key count and highest
  mod_revision: events arrive in revision order, so once the cache has applied that revision it has seen every
  put, and a matching key count rules out a delete still in flight.
- A lost etcd watch is re-established from the last revision seen, so no event is lost or repeated; if that
  history was compacted meanwhile, the cache relists and emits the difference as events.
- A watcher that cannot keep up (its buffer fills) is closed, as kube-apiserver closes slow watchers; the client
  re-watches from the last resourceVersion it saw.
- A value the decoder cannot read (encrypted with a key this apiserver lacks, a conversion webhook that fails)
  does not stop the cache: the key is remembered with its error, a LIST that would include it fails with that
  error, as kube-apiserver's LIST fails on an object it cannot transform, and a watch that would have seen the
  change ends with it (an ERROR event), as kube's watch ends on an object it cannot decode; every other object
  and resource keeps being served.
- With a batch decoder (objects converted outside the process, a CRD's conversion webhook), each batch of etcd
  events is decoded in one call, in order, before it is applied; keys it could not decode are tried again every
  ``HEAL_SECONDS`` and come back as an event once they decode.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from apimachinery.errors import Gone, StatusError, Timeout

from .deliveries import RING, Watcher
from .etcd3 import Compacted, EtcdStorage, KeyValue, StorageError, WatchChange
from .metrics import WatchCacheCounters

log = logging.getLogger(__name__)
HEAL_SECONDS = 1.0  # how often keys a batch decoder failed on are tried again


class CachedObject:
    """One stored object version: its JSON bytes and what filters need; ``obj`` decodes the bytes afresh.

    Only the encoding is kept (once, shared by the store, the event ring buffer, LIST responses and every
    watcher's events): a decoded pod dict takes ~5× its JSON in memory, and the ring buffer holds several
    versions of each object, so keeping both cost ~96 MB of apiserver RSS per 1,000 pods. Each ``obj`` access
    is a new dict the caller owns and may change (an update's working copy needs no deep copy), so read it once
    where it is used several times.
    """

    __slots__ = ("key", "raw", "rv", "labels", "fields", "stale")

    def __init__(self, key: str, obj: Mapping[str, Any] | None, raw: bytes, rv: int, labels: Mapping[str, str],
                 fields: Mapping[str, str], stale: bool = False) -> None:
        """``raw`` must be ``obj``'s JSON encoding: ``obj`` itself is not kept (it may be None)."""
        self.key = key
        self.raw = raw
        self.rv = rv
        self.labels = labels
        self.fields = fields
        self.stale = stale  # stored in a form a write would not produce now (an older encryption key): rewrite it

    @property
    def obj(self) -> dict[str, Any]:
        """The object, decoded from ``raw`` on each access (a fresh dict)."""
        decoded: dict[str, Any] = orjson.loads(self.raw)
        return decoded

    def __repr__(self) -> str:
        return f"CachedObject({self.key!r}, rv={self.rv})"


@dataclass(slots=True)
class CacheEvent:
    type: str  # ADDED | MODIFIED | DELETED
    obj: CachedObject
    prev: CachedObject | None
    rv: int


# etcd key + value + mod_revision -> CachedObject (the registry owns decoding: RV stamping, fields).
Decoder = Callable[[bytes, bytes, int], CachedObject]
Restamper = Callable[[CachedObject, int], CachedObject]
# Many values at once (asynchronously): each one's object, or the error that value is answered with.
BatchDecoder = Callable[[list[KeyValue]], Awaitable[list["CachedObject | StatusError"]]]


class ObjectFilter:
    """What a list or watch selects: namespace, label selector, field selector (all optional)."""

    __slots__ = ("namespace", "labels", "fields", "trigger")

    def __init__(self, namespace: str | None = None, labels: Any = None, fields: Any = None,
                 trigger_fields: Iterable[str] = ()) -> None:
        self.namespace = namespace
        self.labels = labels if labels is not None and not labels.empty() else None
        self.fields = fields if fields is not None and not fields.empty() else None
        # An exact field requirement the cache can index on (kubelets watch spec.nodeName=<node>).
        self.trigger: tuple[str, str] | None = None
        if self.fields is not None:
            for name in trigger_fields:
                value = self.fields.exact(name)
                if value is not None:
                    self.trigger = (name, value)
                    break

    def matches(self, co: CachedObject) -> bool:
        if self.namespace is not None and co.fields.get("metadata.namespace") != self.namespace:
            return False
        if self.labels is not None and not self.labels.matches(co.labels):
            return False
        return not (self.fields is not None and not self.fields.matches(co.fields))


class CacheWatcher:
    """One watch: a bounded queue of encoded events, filled by the cache and drained by the HTTP stream."""

    def __init__(self, filter: ObjectFilter, capacity: int, restamp: Restamper) -> None:
        self.filter = filter
        self.queue: asyncio.Queue[tuple[str, CachedObject] | None] = asyncio.Queue(maxsize=capacity)
        self.closed = False
        # Set when the watch ended on an error the client must see (410 Expired from etcd's history).
        self.error: StatusError | None = None
        self._restamp = restamp
        self._on_stop: Callable[[CacheWatcher], None] | None = None
        self.pending_since = 0.0  # since when the queue has been non-empty (for /debug/watches)
        # Set by the stream while it is parked on an empty queue: delivers an event at once (True) or declines it
        # (False: it is queued). Events still go in order: it is only called with nothing queued.
        self.direct: Callable[[str, CachedObject], bool] | None = None

    def offer(self, event: CacheEvent) -> None:
        """Convert a cache event as the watcher's selectors see it, and enqueue it (never blocks)."""
        if self.closed:
            return
        cur = self.filter.matches(event.obj)
        prev = event.prev is not None and self.filter.matches(event.prev)
        if event.type == "DELETED":
            if not cur:
                return
            out = ("DELETED", event.obj)
        elif cur and (prev or event.type == "MODIFIED" and event.prev is None):
            out = ("MODIFIED", event.obj)
        elif cur:
            out = ("ADDED", event.obj)
        elif prev:
            assert event.prev is not None
            # The object left the selection: DELETED carrying its last matching state at the new revision.
            out = ("DELETED", self._restamp(event.prev, event.rv))
        else:
            return
        try:
            if self.queue.empty():
                if self.direct is not None and self._deliver_now(out):
                    return
                self.pending_since = time.monotonic()
            self.queue.put_nowait(out)
        except asyncio.QueueFull:
            log.warning("closing a watcher that fell %d events behind", self.queue.maxsize)
            self.close()

    def _deliver_now(self, out: tuple[str, CachedObject]) -> bool:
        assert self.direct is not None
        try:
            return self.direct(*out)
        except Exception:  # one stream's failure must not stop the dispatch to the others: it takes the queue
            log.exception("writing a watch event straight to its stream failed")
            self.direct = None
            return False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        while True:
            try:
                self.queue.put_nowait(None)
                break
            except asyncio.QueueFull:
                self.queue.get_nowait()
        if self._on_stop is not None:
            self._on_stop(self)

    async def next(self) -> tuple[str, CachedObject] | None:
        """The next (type, object), or None once the watch is closed."""
        return await self.queue.get()


class WatchCache:
    """Objects of one resource (one etcd prefix), kept current by one etcd watch."""

    def __init__(self, storage: EtcdStorage, prefix: bytes, decode: Decoder, restamp: Restamper,
                 capacity: int = 10_000, watcher_capacity: int = 10_000,
                 indexed_fields: Iterable[str] = (), decode_batch: BatchDecoder | None = None,
                 resource: str = "") -> None:
        self._storage = storage
        self._counters = WatchCacheCounters(resource or prefix.decode())  # apiserver_watch_cache_*{resource}
        # The cache as the receiver of etcd's watch, in the record of deliveries (storage/deliveries.py).
        self._receiver = Watcher("system:apiserver", "watch-cache", resource or prefix.decode(), time.time(),
                                 watch_cache=True)
        self._prefix = prefix
        self._decode = decode
        self._decode_batch = decode_batch
        self._healer: asyncio.Task[None] | None = None
        self._restamp = restamp
        self._capacity = capacity
        self._watcher_capacity = watcher_capacity
        self.indexed_fields = tuple(indexed_fields)
        self.store: dict[bytes, CachedObject] = {}
        self.rv = 0  # the cache reflects etcd at this revision
        self.start_rv = 0  # the ring buffer holds every event with rv > start_rv
        self._events: deque[CacheEvent] = deque()
        self._event_rvs: deque[int] = deque()
        self._watchers: set[CacheWatcher] = set()
        self._indexed: dict[tuple[str, str], set[CacheWatcher]] = {}
        self._advanced = asyncio.Condition()
        self._stream: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._sorted: list[CachedObject] | None = None
        self._sorted_keys: list[str] = []
        # Objects this apiserver just wrote, by (etcd key, revision): their watch event reuses them instead of
        # decoding and re-encoding the same bytes.
        self._primed: dict[tuple[bytes, int], CachedObject] = {}
        # Keys whose stored value could not be decoded, with the error a read of them answers.
        self.broken: dict[bytes, StatusError] = {}

    # --- lifecycle ------------------------------------------------------------------------------------------
    async def start(self) -> None:
        await self._relist(emit=False)
        self._task = asyncio.create_task(self._run(), name=f"watch-cache {self._prefix.decode()}")
        if self._decode_batch is not None:
            self._healer = asyncio.create_task(self._heal(), name=f"watch-cache heal {self._prefix.decode()}")
        self._ready.set()

    async def stop(self) -> None:
        if self._stream is not None:
            self._stream.cancel()
        for task in (self._task, self._healer):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        for watcher in list(self._watchers):
            watcher.close()

    @property
    def capacity(self) -> int:
        return self._capacity

    async def _relist(self, emit: bool) -> None:
        self._counters.initializations.inc()
        kvs: list[KeyValue] = []
        start: bytes | None = None
        revision = 0
        while True:
            page, rev, more = await self._storage.list(self._prefix, start=start, revision=revision, limit=10_000)
            revision = revision or rev
            kvs.extend(page)
            if not more:
                break
            start = page[-1].key + b"\0"
        fresh: dict[bytes, CachedObject] = {}
        self.broken = {}
        for kv, co in zip(kvs, await self._decode_all(kvs), strict=False):
            if isinstance(co, StatusError):
                self._mark_broken(kv.key, co)
            else:
                fresh[kv.key] = co
        if emit:
            old = self.store
            for key, co in fresh.items():
                prev = old.get(key)
                if prev is None:
                    self._emit(CacheEvent("ADDED", co, None, revision))
                elif prev.rv != co.rv:
                    self._emit(CacheEvent("MODIFIED", co, prev, revision))
            for key, prev in old.items():
                if key not in fresh:
                    self._emit(CacheEvent("DELETED", self._restamp(prev, revision), prev, revision))
        self.store = fresh
        self._primed.clear()
        self._sorted = None
        self.rv = max(self.rv, revision)
        if not emit:
            self.start_rv = self.rv
        await self._notify()

    async def _run(self) -> None:
        backoff = 0.1
        while True:
            self._stream = self._storage.watch(self._prefix, self.rv + 1)
            try:
                async for changes in self._stream.batches():
                    arrived = time.time()
                    backoff = 0.1
                    decoded = await self._predecode(changes) if self._decode_batch is not None else {}
                    for change in changes:
                        self._apply(change, decoded, arrived)
                    await self._notify()
            except asyncio.CancelledError:
                raise
            except Compacted:
                log.warning("etcd history for %s compacted while the watch was down: relisting", self._prefix)
                await self._relist(emit=True)
            except StorageError as err:
                log.warning("etcd watch on %s lost (%s); re-establishing from revision %d",
                            self._prefix.decode(), err, self.rv + 1)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                self._stream.cancel()

    async def _decode_all(self, kvs: list[KeyValue]) -> list[CachedObject | StatusError]:
        if self._decode_batch is not None:
            return await self._decode_batch(kvs) if kvs else []
        out: list[CachedObject | StatusError] = []
        for kv in kvs:
            try:
                out.append(self._decode(kv.key, kv.value, kv.mod_revision))
            except StatusError as err:
                out.append(err)
        return out

    async def _predecode(self, changes: list[WatchChange]) -> dict[tuple[bytes, int], CachedObject | StatusError]:
        """Every put of the batch this cache will apply: the ones it wrote itself as primed (taken now, so no
        ``prime`` meanwhile can drop them), the others decoded in one call."""
        decoded: dict[tuple[bytes, int], CachedObject | StatusError] = {}
        kvs: list[KeyValue] = []
        for change in changes:
            kv = change.kv
            if change.kind == "delete" or kv.mod_revision <= self.rv:
                continue
            primed = self._primed.pop((kv.key, kv.mod_revision), None)
            if primed is not None:
                decoded[(kv.key, kv.mod_revision)] = primed
            else:
                kvs.append(kv)
        cos = await self._decode_all(kvs)
        decoded.update(((kv.key, kv.mod_revision), co) for kv, co in zip(kvs, cos, strict=True))
        return decoded

    def _apply(self, change: WatchChange,
               decoded: Mapping[tuple[bytes, int], CachedObject | StatusError] | None = None,
               arrived: float | None = None) -> None:
        rv = change.kv.mod_revision
        if rv <= self.rv:
            return  # already seen (a re-established watch never repeats an event)
        self._counters.received.inc()
        prev = self.store.get(change.kv.key)
        self.broken.pop(change.kv.key, None)
        if change.kind == "delete":
            if prev is None:
                self.rv = rv
                return
            del self.store[change.kv.key]
            event = CacheEvent("DELETED", self._restamp(prev, rv), prev, rv)
        else:
            try:
                co = self._primed.pop((change.kv.key, rv), None) or (decoded or {}).get((change.kv.key, rv)) or \
                    self._decode(change.kv.key, change.kv.value, rv)
                if isinstance(co, StatusError):
                    raise co
            except StatusError as err:
                self._mark_broken(change.kv.key, err)
                if self.store.pop(change.kv.key, None) is not None:
                    self._sorted = None
                self.rv = rv
                if self._decode_batch is not None:
                    self._end_watches(change.kv.key, err)
                return
            self.store[change.kv.key] = co
            event = CacheEvent("MODIFIED" if prev is not None else "ADDED", co, prev, rv)
        self._sorted = None
        self.rv = rv
        self._emit(event, arrived)

    def _end_watches(self, key: bytes, err: StatusError) -> None:
        """Watchers that could see ``key`` end with ``err``: they cannot be sent its change."""
        for watcher in [*self._watchers, *(w for ws in self._indexed.values() for w in ws)]:
            namespace = watcher.filter.namespace
            if namespace is None or key.startswith(self._prefix + f"{namespace}/".encode()):
                watcher.error = err
                watcher.close()

    async def _heal(self) -> None:
        """Keys a batch decoder failed on, read and decoded again until they decode (the webhook is back)."""
        while True:
            await asyncio.sleep(HEAL_SECONDS)
            if not self.broken:
                continue
            failures = dict(self.broken)
            try:
                kvs = [kv for kv in [await self._storage.get(key) for key in failures] if kv is not None]
                decoded = await self._decode_all(kvs)
            except StorageError as err:
                log.warning("retrying objects of %s that did not decode: %s", self._prefix.decode(), err)
                continue
            for kv, co in zip(kvs, decoded, strict=False):
                if isinstance(co, StatusError) or self.broken.get(kv.key) is not failures[kv.key] or \
                        kv.mod_revision > self.rv:
                    continue  # still failing, changed (or failed again) meanwhile, or a newer event is on its way
                del self.broken[kv.key]
                prev = self.store.get(kv.key)
                self.store[kv.key] = co
                self._sorted = None
                self._emit(CacheEvent("MODIFIED" if prev is not None else "ADDED", co, prev, self.rv))
            await self._notify()  # (a key deleted meanwhile left ``broken`` with its delete event)

    def _mark_broken(self, key: bytes, err: StatusError) -> None:
        log.error("cannot decode %s: %s", key.decode(errors="replace"), err.message)
        self.broken[key] = err

    def _emit(self, event: CacheEvent, arrived: float | None = None) -> None:
        """Buffer ``event`` and offer it to every watcher; ``arrived``: when etcd's watch delivered it (else now)."""
        RING.record(self._receiver, time.time() if arrived is None else arrived,
                    ((event.type, event.obj.key, event.rv),))
        if len(self._events) >= self._capacity:
            self._events.popleft()
            self.start_rv = self._event_rvs.popleft()
        self._events.append(event)
        self._event_rvs.append(event.rv)
        self._counters.dispatched.inc()
        for watcher in self._targets(event):
            watcher.offer(event)

    def _targets(self, event: CacheEvent) -> Iterable[CacheWatcher]:
        if not self._indexed:
            return list(self._watchers)
        targets = set(self._watchers)
        for name in self.indexed_fields:
            for co in (event.obj, event.prev):
                if co is not None:
                    targets |= self._indexed.get((name, co.fields.get(name, "")), set())
        return targets

    async def _notify(self) -> None:
        async with self._advanced:
            self._advanced.notify_all()

    def prime(self, key: bytes, co: CachedObject) -> None:
        """Offer the object a write produced, for reuse when its own watch event arrives. Most often that event
        has already been applied (etcd's watch stream answers as soon as the transaction's reply): then there is
        nothing to offer it to, and keeping it would hold a copy of the object nothing reads."""
        if co.rv <= self.rv:
            return
        if len(self._primed) >= self._capacity:
            self._primed.clear()  # events that never came (a relist): drop them all
        self._primed[(key, co.rv)] = co

    def rewrite(self, fn: Callable[[CachedObject], CachedObject]) -> None:
        """Replace every cached object by ``fn(object)`` (same key and revision, no event): the resource is now
        read with other rules (a custom resource's schema changed), as a fresh relist would decode it."""
        self.store = {key: fn(co) for key, co in self.store.items()}
        self._sorted = None

    # --- reads ----------------------------------------------------------------------------------------------
    async def wait_fresh(self, timeout: float = 10.0) -> None:
        """Wait until the cache has seen everything etcd had committed when this was called (504 past timeout)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            revision, count, latest = await self._storage.prefix_state(self._prefix)
            if self.rv >= latest and len(self.store) + len(self.broken) == count:
                # Nothing in flight up to `revision`: the cache reflects etcd at that revision.
                self.rv = max(self.rv, revision)
                return
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise Timeout(f"the watch cache of {self._prefix.decode()} is not catching up with etcd",
                              retry_after=1)
            async with self._advanced:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._advanced.wait(), min(remaining, 0.05))

    async def position(self) -> tuple[int, int]:
        """(etcd's revision, the revision this cache reflects) — equal when nothing of this resource is in flight
        (the test of ``wait_fresh``, one etcd read); for ``/debug/watches``."""
        revision, count, latest = await self._storage.prefix_state(self._prefix)
        if self.rv >= latest and len(self.store) + len(self.broken) == count:
            return revision, revision
        return revision, self.rv

    async def wait_rv(self, rv: int, timeout: float = 3.0) -> None:
        """Wait until the cache is at revision ``rv`` or later; 504 Timeout past ``timeout`` (kube-apiserver's
        "Too large resource version")."""
        if self.rv >= rv:
            return
        await self.wait_fresh(timeout)
        if self.rv < rv:
            raise Timeout(f"Too large resource version: {rv}, current: {self.rv}", retry_after=1)

    def get(self, key: bytes) -> CachedObject | None:
        return self.store.get(key)

    def list(self, filter: ObjectFilter | None = None) -> list[CachedObject]:
        """Current objects in key order, filtered; the error of an undecodable object the list would hold."""
        if self.broken:
            within = self._prefix + (f"{filter.namespace}/".encode() if filter and filter.namespace else b"")
            for key, err in self.broken.items():
                if key.startswith(within):
                    raise err
        if self._sorted is None:
            self._sorted = [self.store[k] for k in sorted(self.store)]
            self._sorted_keys = [co.key for co in self._sorted]
        if filter is None:
            return self._sorted
        candidates = self._sorted
        if filter.namespace is not None:
            lo = bisect.bisect_left(self._sorted_keys, f"{filter.namespace}/")
            hi = bisect.bisect_left(self._sorted_keys, f"{filter.namespace}0")  # '0' sorts right after '/'
            candidates = self._sorted[lo:hi]
        return [co for co in candidates if filter.matches(co)]

    # --- watch ----------------------------------------------------------------------------------------------
    def watch(self, from_rv: int | None, filter: ObjectFilter) -> CacheWatcher:
        """Start a watch. ``from_rv`` None: the current state as ADDED, then changes. Else changes after it.

        Raises ``Gone`` when ``from_rv`` is older than the ring buffer (callers then try etcd's history).
        """
        watcher = CacheWatcher(filter, self._watcher_capacity, self._restamp)
        if from_rv is None:
            initial = self.list(filter)
            watcher.queue = asyncio.Queue(maxsize=max(self._watcher_capacity, len(initial) + self._watcher_capacity))
            for co in initial:
                watcher.queue.put_nowait(("ADDED", co))
        else:
            if from_rv < self.start_rv:
                raise Gone(f"too old resource version: {from_rv} ({self.start_rv})")
            lo = bisect.bisect_right(self._event_rvs, from_rv)
            for i in range(lo, len(self._events)):
                watcher.offer(self._events[i])
        self._register(watcher)
        return watcher

    def _register(self, watcher: CacheWatcher) -> None:
        if watcher.filter.trigger is not None and watcher.filter.trigger[0] in self.indexed_fields:
            self._indexed.setdefault(watcher.filter.trigger, set()).add(watcher)
        else:
            self._watchers.add(watcher)
        watcher._on_stop = self._unregister

    def _unregister(self, watcher: CacheWatcher) -> None:
        self._watchers.discard(watcher)
        trigger = watcher.filter.trigger
        if trigger is not None and trigger in self._indexed:
            self._indexed[trigger].discard(watcher)
            if not self._indexed[trigger]:
                del self._indexed[trigger]

    async def _decode_raising(self, kv: KeyValue) -> CachedObject:
        co = (await self._decode_all([kv]))[0]
        if isinstance(co, StatusError):
            raise co
        return co

    def watch_from_storage(self, from_rv: int, filter: ObjectFilter) -> CacheWatcher:
        """A watch older than the ring buffer, served from etcd's own history by a dedicated etcd watch."""
        watcher = CacheWatcher(filter, self._watcher_capacity, self._restamp)
        stream = self._storage.watch(self._prefix, from_rv + 1)

        async def pump() -> None:
            try:
                async for changes in stream.batches():
                    for change in changes:
                        rv = change.kv.mod_revision
                        prev = (await self._decode_raising(change.prev) if change.prev is not None else None)
                        if change.kind == "delete":
                            if prev is None:
                                continue
                            event = CacheEvent("DELETED", self._restamp(prev, rv), prev, rv)
                        else:
                            co = await self._decode_raising(change.kv)
                            created = change.kv.create_revision == rv
                            event = CacheEvent("ADDED" if created else "MODIFIED", co, prev, rv)
                        watcher.offer(event)
                    if watcher.closed:
                        return
            except Compacted as err:
                watcher.error = Gone(f"too old resource version: {from_rv} ({err.compact_revision})")
            except StatusError as err:  # a value that cannot be decoded ends the watch with its error
                watcher.error = err
            except StorageError as err:
                log.warning("etcd history watch ended: %s", err)
            finally:
                stream.cancel()
                watcher.close()

        task = asyncio.create_task(pump())

        def stop_pump(_: CacheWatcher) -> None:
            if not task.done() and task is not asyncio.current_task():
                task.cancel()

        watcher._on_stop = stop_pump
        return watcher

