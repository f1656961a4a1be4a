"""events.k8s.io/v1 Events as client-go's new recorder (``k8s.io/client-go/tools/events``) writes them.

``EventsV1Recorder.eventf(regarding, related, type, reason, action, note)`` queues an event whose ``eventTime`` is
the moment of the call (MicroTime, µs), named ``<regarding name>.<hex ns>``, with ``reportingController`` (kube's
component name: ``default-scheduler``…) and ``reportingInstance`` (``<controller>-<hostname>``).

Repeats become a series, as the new recorder's isomorphic events do: an event with the same ``regarding``
(including its resourceVersion), ``related``, ``action``, ``reason`` and ``reportingController`` as one written
within ``window`` seconds (client-go finishes a series after 6 minutes) PATCHes that event's
``series: {count, lastObservedTime}`` (count 2 on the first repeat) instead of creating a new one; the ``note``
is not part of the key. If the earlier event is gone, a new one is created. The queue, the writer task, dropping
and the cache are ``kubeclient.events.QueuedRecorder``'s.
"""

from __future__ import annotations

import socket
from datetime import datetime
from typing import TYPE_CHECKING, Any

from apimachinery.errors import NotFound
from apimachinery.meta import format_micro_time
from kubeclient.clock import REAL_CLOCK, Clock
from kubeclient.events import EventType, QueuedRecorder, _name_suffix, object_reference
from kubeclient.types import Object

if TYPE_CHECKING:
    from kubeclient.client import ResourceClient

__all__ = ["EventsV1Recorder", "make_event_v1"]


def make_event_v1(regarding: Object, related: Object | None, *, event_type: EventType, reason: str, action: str,
                  note: str, controller: str, instance: str, now: datetime) -> Object:
    """A new events.k8s.io/v1 Event (no series yet), in the regarding object's namespace (``default`` if none)."""
    ref = object_reference(regarding)
    event: Object = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{ref.get('name', 'unknown')}.{_name_suffix()}",
                     "namespace": ref.get("namespace") or "default"},
        "eventTime": format_micro_time(now),
        "reportingController": controller,
        "reportingInstance": instance,
        "action": action,
        "reason": reason,
        "regarding": ref,
        "note": note,
        "type": event_type,
    }
    if related is not None:
        event["related"] = object_reference(related)
    return event


class EventsV1Recorder(QueuedRecorder):
    """Records events.k8s.io/v1 Events for ``controller``; see the module docstring."""

    def __init__(self, events: ResourceClient, controller: str, instance: str | None = None, *,
                 window: float = 360.0, cache_size: int = 4096, queue_size: int = 1000,
                 clock: Clock = REAL_CLOCK) -> None:
        super().__init__(window=window, cache_size=cache_size, queue_size=queue_size, clock=clock)
        self._events = events
        self.controller = controller
        self.instance = instance or f"{controller}-{socket.gethostname()}"

    def eventf(self, regarding: Object, related: Object | None, event_type: EventType, reason: str, action: str,
               note: str) -> None:
        """Queue an event now (its eventTime is this call's moment) without waiting."""
        now = self._clock.now()

        async def write() -> Object:
            return await self.record(regarding, related, event_type, reason, action, note, now=now)

        name = (regarding.get("metadata") or {}).get("name")
        self._enqueue(write, f"{event_type} event {reason} ({action}) on {name}: {note}")

    async def record(self, regarding: Object, related: Object | None, event_type: EventType, reason: str,
                     action: str, note: str, *, now: datetime | None = None) -> Object:
        """Write the event, or extend its series, now; returns it as stored and raises on API errors."""
        key = self._key(regarding, related, reason, action)
        async with self._lock:
            now = now or self._clock.now()
            seen = self._recent(key)
            if seen is not None:
                count = seen.count + 1
                series = {"count": count, "lastObservedTime": format_micro_time(now)}
                try:
                    stored = await self._events.patch(seen.name, {"series": series}, "merge", seen.namespace)
                except NotFound:
                    pass
                else:
                    self._remember(key, stored, count)
                    return stored
            event = make_event_v1(regarding, related, event_type=event_type, reason=reason, action=action,
                                  note=note, controller=self.controller, instance=self.instance, now=now)
            stored = await self._events.create(event)
            self._remember(key, stored if stored.get("metadata") else event, 1)
            return stored

    def _key(self, regarding: Object, related: Object | None, reason: str, action: str) -> tuple[Any, ...]:
        """client-go's ``getKey``: regarding, related, action, reason, reportingController (not the note)."""
        def frozen(obj: Object | None) -> tuple[tuple[str, Any], ...]:
            return tuple(sorted(object_reference(obj).items())) if obj is not None else ()
        return (frozen(regarding), frozen(related), action, reason, self.controller)
