"""Watch deliveries: which watcher received which object version, and when (µs) — for ``kubelab trace``.

The seed's steps 4, 5, 8 and 11 are deliveries: etcd's watch handing a change to the watch cache, and the cache
handing it down a client's watch stream. No other record has them (the audit log times requests; a component's
next write only bounds when it saw the change), so the apiserver writes each one down as it happens:

- a write records its version as ``STORED`` when etcd's transaction returned (``system:apiserver`` /
  ``etcd-txn``): "stored in etcd" (steps 3, 7, 10, 13), which the audit log's ``ResponseComplete`` only bounds;
- the watch cache records every event etcd's watch delivered to it, as the watcher ``system:apiserver`` /
  ``watch-cache``, at the moment the batch arrived;
- each watch stream records the events it wrote, with the stream's user, user agent and resource, at the moment
  the chunk was handed to the HTTP server.

Guarantees: bounded — a ring of the last ``CAPACITY`` deliveries (older ones are dropped, never an error); cheap —
a delivery is one tuple of references to strings that already exist (the object's cache key, the stream's
identity), appended without a lock (one event loop); the ring never holds an object's bytes. ``GET
/debug/watches/deliveries`` (``handlers/watches.py``) serves it, filtered, authorized as any non-resource path.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from apimachinery.meta import format_micro_time

__all__ = ["CAPACITY", "RING", "Deliveries", "Watcher"]

CAPACITY = 20_000
MAX_ITEMS = 5_000  # the most one request returns (the newest that match)


@dataclass(frozen=True, slots=True, eq=False)
class Watcher:
    """Who received a delivery: a watch stream's identity, or the watch cache itself (``watch_cache``)."""

    user: str
    user_agent: str
    resource: str
    requested: float  # when the watch request arrived (time.time())
    started: float = field(default_factory=time.time)  # when its stream began (after any list it waited for)
    watch_cache: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"user": self.user, "userAgent": self.user_agent, "watchCache": self.watch_cache,
                "requestReceived": format_micro_time(self.requested), "started": format_micro_time(self.started)}


Delivery = tuple[float, Watcher, str, str, int]  # (when, to whom, event type, cache key "ns/name" or "name", rv)


class Deliveries:
    """The ring of the last ``capacity`` deliveries."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._ring: deque[Delivery] = deque(maxlen=capacity)

    @property
    def capacity(self) -> int:
        return self._ring.maxlen or 0

    def record(self, watcher: Watcher, at: float, events: Iterable[tuple[str, str, int]]) -> None:
        """``events`` (type, cache key, resourceVersion) reached ``watcher`` at ``at``."""
        self._ring.extend((at, watcher, kind, key, rv) for kind, key, rv in events)

    def document(self, *, namespace: str | None = None, name: str | None = None, resource: str | None = None,
                 resource_version: int | None = None, limit: int = MAX_ITEMS) -> dict[str, Any]:
        """The ``/debug/watches/deliveries`` body: the matching deliveries, oldest first (the newest ``limit``)."""
        key = None if name is None else (f"{namespace}/{name}" if namespace else name)
        prefix = f"{namespace}/" if namespace and name is None else None
        found: list[Delivery] = []
        for delivery in reversed(self._ring):
            _, watcher, _, cache_key, rv = delivery
            if (key is not None and cache_key != key) or (prefix is not None and not cache_key.startswith(prefix)) \
                    or (resource is not None and watcher.resource != resource) \
                    or (resource_version is not None and rv != resource_version):
                continue
            found.append(delivery)
            if len(found) >= limit:
                break
        return {"kind": "WatchDeliveryList", "capacity": self.capacity, "items": [_item(d) for d in reversed(found)]}


def _item(delivery: Delivery) -> dict[str, Any]:
    at, watcher, kind, key, rv = delivery
    namespace, _, name = key.rpartition("/")
    return {"time": format_micro_time(at), "type": kind, "resource": watcher.resource, "namespace": namespace,
            "name": name, "resourceVersion": str(rv), "watcher": watcher.to_dict()}


RING = Deliveries()  # this apiserver's
