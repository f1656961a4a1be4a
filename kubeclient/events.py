"""core/v1 Events: a builder, and an ``EventRecorder`` that correlates them like client-go's legacy recorder.

``QueuedRecorder`` holds what this recorder and the events.k8s.io/v1 one (``kubeclient.eventsv1``) share: the
queue, the writer task and the cache of recent events. The recorders' guarantees:

* ``event(...)`` never blocks and never raises: it queues the event for a background task (created on first
  use) and drops it — with a log line — when ``queue_size`` events are already waiting, so a controller under
  load keeps reconciling instead of waiting on event writes (client-go's broadcaster drops the same way).
* Events are correlated as client-go's ``EventCorrelator`` does (``kubeclient.eventcorrelator``): similar
  events (differing only in message) are combined after 10 into one ``(combined from similar events): ...``
  event, and a token bucket per source + object + type (burst 25, 1 per 300 s) drops the rest, so a controller
  creating 10,000 pods writes a few dozen events, not 10,000.
* Repeats are counted: an event with the same involved object (kind, namespace, name, uid, apiVersion,
  fieldPath), type, reason, message and source as one already written PATCHes that event's ``count``/
  ``lastTimestamp`` instead of creating a new object (the core/v1 recorder, like client-go's ``eventLogger``,
  has no time window; the events.k8s.io one aggregates within ``window`` seconds).  If the earlier event is
  gone (events expire), a new one is created.  The cache is an LRU of ``cache_size`` keys.
* Writes are serialized, so two repeats never race into two objects.  Failures are logged, not raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import socket
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from apimachinery.errors import NotFound, StatusError
from apimachinery.meta import format_micro_time
from kubeclient.clock import REAL_CLOCK, Clock, format_time
from kubeclient.eventcorrelator import (
    AGGREGATE_INTERVAL_SECONDS,
    AGGREGATE_MAX_EVENTS,
    MAX_LRU_CACHE_ENTRIES,
    SPAM_BURST,
    SPAM_QPS,
    Aggregator,
    SpamFilter,
    combined_message,
    lru_put,
)
from kubeclient.types import Object

if TYPE_CHECKING:
    from kubeclient.client import ResourceClient

log = logging.getLogger(__name__)

EventType = Literal["Normal", "Warning"]

_last_suffix = 0


def _name_suffix() -> str:
    """A strictly increasing nanosecond stamp in hex, as client-go names events ``<object>.<hex ns>``."""
    global _last_suffix
    _last_suffix = max(time.time_ns(), _last_suffix + 1)
    return f"{_last_suffix:x}"


def object_reference(obj: Object, field_path: str | None = None) -> Object:
    """A ``v1.ObjectReference`` to ``obj`` (empty fields omitted)."""
    meta = obj.get("metadata") or {}
    ref = {
        "kind": obj.get("kind"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "apiVersion": obj.get("apiVersion"),
        "resourceVersion": meta.get("resourceVersion"),
        "fieldPath": field_path,
    }
    return {k: v for k, v in ref.items() if v}


def make_event(
    involved: Object,
    *,
    event_type: EventType,
    reason: str,
    message: str,
    component: str,
    host: str | None = None,
    now: datetime | None = None,
    field_path: str | None = None,
) -> Object:
    """A new Event (count 1) about ``involved`` (or the part ``field_path`` names, such as
    ``spec.containers{web}``), in its namespace (``default`` for cluster-scoped objects)."""
    ref = object_reference(involved, field_path)
    ts = format_time(now or REAL_CLOCK.now())
    source = {"component": component, **({"host": host} if host else {})}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{ref.get('name', 'unknown')}.{_name_suffix()}",
                     "namespace": ref.get("namespace") or "default"},
        "involvedObject": ref,
        "reason": reason,
        "message": message,
        "type": event_type,
        "source": source,
        "firstTimestamp": ts,
        "lastTimestamp": ts,
        "count": 1,
        "reportingComponent": component,
        "reportingInstance": host or "",
    }


@dataclass(slots=True)
class _Seen:
    name: str
    namespace: str
    count: int
    last_seen: float


_Key = tuple[Any, ...]
_Write = Callable[[], Awaitable[Object | None]]


class QueuedRecorder:
    """What both recorders share: the bounded queue drained by one background task, serialized writes, and the
    LRU of recently written events that repeats aggregate into (see the module docstring)."""

    def __init__(self, *, window: float, cache_size: int, queue_size: int, clock: Clock) -> None:
        self._window = window
        self._cache_size = cache_size
        self._queue_size = queue_size
        self._clock = clock
        self._cache: OrderedDict[_Key, _Seen] = OrderedDict()
        self._pending: deque[tuple[_Write, str]] = deque()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._worker: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def _enqueue(self, write: _Write, what: str) -> None:
        """Queue ``write`` without waiting; drop it (logged as ``what``) when the queue is full."""
        if len(self._pending) >= self._queue_size:
            log.warning("event queue full, dropping %s", what)
            return
        self._pending.append((write, what))
        self._idle.clear()
        self._wakeup.set()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._drain(), name="event-recorder")

    def _recent(self, key: _Key) -> _Seen | None:
        """The event written for ``key`` within the window, if any."""
        seen = self._cache.get(key)
        return seen if seen is not None and self._clock.monotonic() - seen.last_seen <= self._window else None

    def _remember(self, key: _Key, stored: Object, count: int) -> None:
        meta = stored.get("metadata") or {}
        lru_put(self._cache, key, _Seen(meta.get("name", ""), meta.get("namespace", ""), count,
                                        self._clock.monotonic()), self._cache_size)

    async def _drain(self) -> None:
        while True:
            while self._pending:
                write, what = self._pending.popleft()
                try:
                    await write()
                except (StatusError, ValueError) as e:
                    log.warning("could not record %s: %s", what, e)
            self._idle.set()
            self._wakeup.clear()
            await self._wakeup.wait()

    async def flush(self) -> None:
        """Wait until every queued event has been written (or failed)."""
        await self._idle.wait()

    async def close(self) -> None:
        """Flush, then stop the background task."""
        await self.flush()
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None


class EventRecorder(QueuedRecorder):
    """Records core/v1 Events on behalf of ``component`` (running on ``host``); see the module docstring.

    With ``event_time`` each new event also carries ``eventTime`` (MicroTime, when it was recorded),
    ``reportingInstance`` (the host, else ``<component>-<hostname>``) and ``action`` (its reason), so the time
    is exact to the µs while ``kubectl get events`` and ``describe`` read ``firstTimestamp``/``lastTimestamp``/
    ``count`` as before (kube's legacy recorder sets no eventTime; kubelab's trace wants one).  An aggregate
    event carries none of these, as client-go's does not: it stands for several events, none of them exactly."""

    def __init__(
        self,
        events: ResourceClient,
        component: str,
        host: str | None = None,
        *,
        window: float = math.inf,
        cache_size: int = MAX_LRU_CACHE_ENTRIES,
        queue_size: int = 1000,
        clock: Clock = REAL_CLOCK,
        event_time: bool = False,
        spam_burst: int = SPAM_BURST,
        spam_qps: float = SPAM_QPS,
        similar_max: int = AGGREGATE_MAX_EVENTS,
        similar_interval: float = AGGREGATE_INTERVAL_SECONDS,
    ) -> None:
        super().__init__(window=window, cache_size=cache_size, queue_size=queue_size, clock=clock)
        self._events = events
        self.component = component
        self.host = host
        self.event_time = event_time
        self._aggregator = Aggregator(clock.monotonic, max_events=similar_max, max_interval=similar_interval,
                                      cache_size=cache_size)
        self._spam = SpamFilter(clock.monotonic, burst=spam_burst, qps=spam_qps, cache_size=cache_size)

    def event(self, obj: Object, event_type: EventType, reason: str, message: str, *,
              field_path: str | None = None) -> None:
        """Queue an event about ``obj`` without waiting (see the module docstring for dropping)."""
        now = self._clock.now()

        async def write() -> Object | None:
            return await self.record(obj, event_type, reason, message, field_path=field_path, now=now)

        self._enqueue(write, f"{event_type} event {reason} on {(obj.get('metadata') or {}).get('name')}: {message}")

    async def record(self, obj: Object, event_type: EventType, reason: str, message: str, *,
                     field_path: str | None = None, now: datetime | None = None) -> Object | None:
        """Correlate the event as client-go does (combine similar ones, count identical ones, drop spam), then
        write it now and return it as stored, or None when the spam filter dropped it; raises on API errors."""
        ref = object_reference(obj)
        involved = (self.component, self.host, ref.get("kind"), ref.get("namespace"), ref.get("name"),
                    ref.get("uid"), ref.get("apiVersion"), event_type)
        async with self._lock:
            now = now or self._clock.now()
            combined = self._aggregator.combine((*involved, reason), message)
            if combined:
                message = combined_message(message)
                key: _Key = ("combined", *involved, reason)
            else:
                key = (*involved, field_path, reason, message)
            seen = self._recent(key)
            if not self._spam.allow(involved):
                if seen is not None:
                    seen.count += 1  # client-go counts it before filtering: the next write shows it
                log.debug("event spam filter dropped %s event %s on %s: %s", event_type, reason, ref.get("name"),
                          message)
                return None
            if seen is not None:
                patch = {"count": seen.count + 1, "lastTimestamp": format_time(now), "message": message}
                try:
                    stored = await self._events.patch(seen.name, patch, "merge", seen.namespace)
                except NotFound:
                    pass
                else:
                    self._remember(key, stored, int(stored.get("count") or seen.count + 1))
                    return stored
            event = make_event(obj, event_type=event_type, reason=reason, message=message,
                               component=self.component, host=self.host, now=now, field_path=field_path)
            if combined:
                del event["reportingComponent"], event["reportingInstance"]
            elif self.event_time:
                event.update(eventTime=format_micro_time(now), action=reason,
                             reportingInstance=self.host or f"{self.component}-{socket.gethostname()}")
            stored = await self._events.create(event)
            self._remember(key, stored if stored.get("metadata") else event, int(stored.get("count") or 1))
            return stored
