"""What each reflector of this process has done, for ``GET /debug/informers`` on every component's debug port.

A ``ReflectorStats`` is owned by one reflector, which bumps its counters as it lists (the first list and every
relist), meets a 410 Gone, and applies watch events; the counters cost an integer add each. Reflectors register
their stats in ``REGISTRY`` (weakly: a reflector that is gone drops out), and ``snapshot()`` renders them only
when somebody asks. ``events_per_second`` is the rate over the last ``WINDOW`` seconds, from one-second buckets.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import Any

__all__ = ["REGISTRY", "ReflectorStats", "WINDOW", "snapshot"]

WINDOW = 10  # seconds the event rate is averaged over


@dataclass(eq=False)
class ReflectorStats:
    resource: str
    namespace: str = ""
    label_selector: str = ""
    field_selector: str = ""
    resource_version: str = ""
    lists: int = 0  # the first list and every relist
    gone: int = 0  # 410 Gone answers (expired resourceVersion or continue token)
    events: int = 0  # watch events applied (bookmarks excluded)
    last_event: float = 0.0  # wall-clock time of the last applied event
    _buckets: dict[int, int] = field(default_factory=dict, repr=False)

    def listed(self, resource_version: str) -> None:
        self.lists += 1
        self.resource_version = resource_version

    def event(self, resource_version: str | None) -> None:
        now = time.time()
        self.events += 1
        self.last_event = now
        if resource_version:
            self.resource_version = resource_version
        second = int(now)
        self._buckets[second] = self._buckets.get(second, 0) + 1
        if len(self._buckets) > WINDOW + 1:
            for old in [s for s in self._buckets if s <= second - WINDOW]:
                del self._buckets[old]

    def rate(self, now: float | None = None) -> float:
        second = int(now if now is not None else time.time())
        return sum(n for s, n in self._buckets.items() if second - WINDOW < s <= second) / WINDOW

    def to_dict(self) -> dict[str, Any]:
        return {"resource": self.resource, "namespace": self.namespace, "labelSelector": self.label_selector,
                "fieldSelector": self.field_selector, "resourceVersion": self.resource_version,
                "lists": self.lists, "relists": max(self.lists - 1, 0), "gone": self.gone, "events": self.events,
                "eventsPerSecond": round(self.rate(), 2),
                "lastEventTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.last_event))
                if self.last_event else None}


REGISTRY: weakref.WeakSet[ReflectorStats] = weakref.WeakSet()


def snapshot(component: str = "") -> dict[str, Any]:
    """The ``/debug/informers`` document: one entry per live reflector, by resource."""
    items = sorted((s.to_dict() for s in list(REGISTRY)), key=lambda d: (d["resource"], d["namespace"]))
    return {"kind": "InformerList", "component": component, "items": items}
