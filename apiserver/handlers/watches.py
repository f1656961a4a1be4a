"""``GET /debug/watches``: every watch stream this apiserver is serving — who, what, how far behind etcd.

Each stream ``serve_watch`` opens registers a ``WatchStream`` here and drops it when it ends; the stream itself
only adds to two integers per event written (``sent`` and ``rv``), so the registry costs nothing while nobody
asks. A request for the document asks etcd once per watched resource how far the
resource's watch cache is (``WatchCache.position``) and renders every stream:

* ``resourceVersion``: the last revision written to the client;
* ``lag.revisions``: etcd's revision minus the stream's position — the position of its resource's watch cache
  while nothing waits in its queue (a cache with nothing in flight is at etcd's revision: lag 0), else the last
  revision written to it; ``lag.seconds``: for how long events have been waiting in its queue (0 when none
  wait);
* ``eventsSent`` and ``eventsPerSecond`` (over the stream's life, or the last ``RATE_WINDOW`` seconds).

``GET /debug/watches/deliveries`` serves the record of deliveries (``storage/deliveries.py``): which watcher — the
watch cache, or a stream's user, user agent and resource — received which object version, and when (µs); and when
etcd's transaction stored each version (type ``STORED``).
``namespace``, ``name``, ``resource`` and ``resourceVersion`` select; ``limit`` (1..5000) keeps the newest.

Both are non-resource paths, authorized as any other (kube's ``cluster-admin`` has ``nonResourceURLs: ["*"]``,
``system:masters`` passes). The documents are this project's (kube-apiserver has no such endpoints).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apimachinery import errors

from ..storage.cacher import CacheWatcher, WatchCache
from ..storage.deliveries import MAX_ITEMS, RING

__all__ = ["ACTIVE", "WatchStream", "deliveries", "document", "register"]

RATE_WINDOW = 10.0


@dataclass(eq=False)
class WatchStream:
    user: str
    user_agent: str
    resource: str
    namespace: str
    label_selector: str
    field_selector: str
    watcher: CacheWatcher
    cache: WatchCache
    started: float = field(default_factory=time.time)
    sent: int = 0
    rv: int = 0
    _marks: list[tuple[float, int]] = field(default_factory=list)  # (monotonic, sent) sampled when asked

    def wrote(self, events: int, rv: int) -> None:
        self.sent += events
        self.rv = max(self.rv, rv)

    def rate(self) -> float:
        now = time.monotonic()
        self._marks = [m for m in self._marks if now - m[0] <= RATE_WINDOW * 2]
        self._marks.append((now, self.sent))
        earlier = next((m for m in self._marks if now - m[0] >= 1.0), None)
        if earlier is None:
            age = max(time.time() - self.started, 1e-3)
            return self.sent / age
        return (self.sent - earlier[1]) / (now - earlier[0])

    def to_dict(self, etcd_revision: int, cache_position: int) -> dict[str, Any]:
        pending = not self.watcher.queue.empty()
        position = self.rv if pending else max(self.rv, cache_position)
        return {"user": self.user, "userAgent": self.user_agent, "resource": self.resource,
                "namespace": self.namespace, "labelSelector": self.label_selector,
                "fieldSelector": self.field_selector, "resourceVersion": str(self.rv),
                "startTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started)),
                "eventsSent": self.sent, "eventsPerSecond": round(self.rate(), 2),
                "queued": self.watcher.queue.qsize(),
                "lag": {"revisions": max(etcd_revision - position, 0),
                        "seconds": round(time.monotonic() - self.watcher.pending_since, 3) if pending else 0.0}}


ACTIVE: set[WatchStream] = set()


def register(stream: WatchStream) -> WatchStream:
    ACTIVE.add(stream)
    return stream


async def document(etcd_revision: int) -> dict[str, Any]:
    """The ``/debug/watches`` body; ``etcd_revision`` is used when no stream is open."""
    streams = list(ACTIVE)
    caches = list({id(s.cache): s.cache for s in streams}.values())
    positions = dict(zip((id(c) for c in caches), await asyncio.gather(*(c.position() for c in caches)), strict=False))
    etcd_revision = max([etcd_revision, *(revision for revision, _ in positions.values())])
    items = sorted((s.to_dict(etcd_revision, positions[id(s.cache)][1]) for s in streams),
                   key=lambda d: (d["resource"], d["user"], d["userAgent"]))
    return {"kind": "WatchList", "etcdRevision": etcd_revision, "items": items}


def deliveries(params: Mapping[str, str]) -> dict[str, Any]:
    """The ``/debug/watches/deliveries`` body for the query ``params``; a bad number is a 400 Status."""
    def number(key: str, low: int, high: int) -> int | None:
        text = params.get(key)
        if text is None or text == "":
            return None
        if not text.isdigit() or not low <= int(text) <= high:
            raise errors.BadRequest(f'{key}: Invalid value: "{text}": must be an integer from {low} to {high}')
        return int(text)

    return RING.document(namespace=params.get("namespace") or None, name=params.get("name") or None,
                         resource=params.get("resource") or None,
                         resource_version=number("resourceVersion", 1, 2**63 - 1),
                         limit=number("limit", 1, MAX_ITEMS) or MAX_ITEMS)
