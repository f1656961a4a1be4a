"""The console's view of the cluster: informers on nodes, pods and events, and the subscribers of its stream.

Every informer change marks the view dirty; one task renders it at most every ``INTERVAL`` seconds and hands the
same encoded message to every subscriber (a bounded queue each: a browser that does not read loses old
messages, never blocks the feed). A new subscriber gets the current view at once. Objects are cut down to what
the pages show (``node_view``, ``pod_view``, ``event_view``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from kubeclient import Clientset
from kubeclient.informer import SharedInformer, wait_for_cache_sync

__all__ = ["Feed", "event_view", "node_view", "pod_view"]

Object = dict[str, Any]
INTERVAL = 0.2  # seconds between two renders of a changing view
EVENTS_SHOWN = 200
QUEUE = 16


def _conditions(obj: Object) -> dict[str, str]:
    return {c.get("type", ""): c.get("status", "") for c in (obj.get("status") or {}).get("conditions") or []}


def node_view(node: Object) -> Object:
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    return {"name": meta.get("name"), "ready": _conditions(node).get("Ready", "Unknown"),
            "unschedulable": bool(spec.get("unschedulable")), "taints": spec.get("taints") or [],
            "labels": meta.get("labels") or {}, "allocatable": status.get("allocatable") or {}}


def pod_view(pod: Object) -> Object:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    waiting = [s["state"]["waiting"].get("reason", "") for s in status.get("containerStatuses") or []
               if "waiting" in (s.get("state") or {})]
    return {"namespace": meta.get("namespace"), "name": meta.get("name"), "uid": meta.get("uid"),
            "node": spec.get("nodeName") or "", "phase": status.get("phase") or "Pending",
            "conditions": _conditions(pod), "reason": waiting[0] if waiting else status.get("reason") or "",
            "terminating": bool(meta.get("deletionTimestamp")), "created": meta.get("creationTimestamp"),
            "labels": meta.get("labels") or {}}


def event_view(event: Object) -> Object:
    meta, involved = event.get("metadata") or {}, event.get("involvedObject") or {}
    source = event.get("reportingComponent") or (event.get("source") or {}).get("component") or ""
    return {"namespace": meta.get("namespace"), "name": meta.get("name"), "type": event.get("type"),
            "reason": event.get("reason"), "message": event.get("message"), "source": source,
            "object": f"{involved.get('kind', '')}/{involved.get('name', '')}", "count": event.get("count") or 1,
            "time": event.get("eventTime") or event.get("lastTimestamp") or event.get("firstTimestamp")
            or meta.get("creationTimestamp")}


class Feed:
    """Informers → one rendered view → every subscriber's queue (see the module docstring)."""

    def __init__(self, client: Clientset) -> None:
        self.nodes = SharedInformer(client.nodes)
        self.pods = SharedInformer(client.pods)
        self.events = SharedInformer(client.events)
        self._dirty = asyncio.Event()
        self._subscribers: set[asyncio.Queue[bytes]] = set()
        self._current = b""
        for informer in (self.nodes, self.pods, self.events):
            informer.add_event_handler(lambda _: self._dirty.set(), lambda _o, _n: self._dirty.set(),
                                       lambda _: self._dirty.set())

    def view(self) -> Object:
        nodes = sorted((node_view(n) for n in self.nodes.store.list()), key=lambda n: n["name"] or "")
        pods = sorted((pod_view(p) for p in self.pods.store.list()),
                      key=lambda p: (p["namespace"] or "", p["name"] or ""))
        events = sorted((event_view(e) for e in self.events.store.list()), key=lambda e: e["time"] or "")
        return {"nodes": nodes, "pods": pods, "events": events[-EVENTS_SHOWN:]}

    def pod(self, namespace: str, name: str) -> Object | None:
        obj = self.pods.store.get_by_key(f"{namespace}/{name}")
        return None if obj is None else pod_view(obj)

    def _render(self) -> bytes:
        return b"event: cluster\ndata: " + json.dumps(self.view()).encode() + b"\n\n"

    def subscribe(self) -> asyncio.Queue[bytes]:
        queue: asyncio.Queue[bytes] = asyncio.Queue(QUEUE)
        queue.put_nowait(self._current or self._render())
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[bytes]) -> None:
        self._subscribers.discard(queue)

    async def run(self, stop: asyncio.Event) -> None:
        """The informers and the render loop, until ``stop``."""
        tasks = [asyncio.create_task(i.run(stop)) for i in (self.nodes, self.pods, self.events)]
        try:
            await wait_for_cache_sync(self.nodes, self.pods, self.events, stop=stop)
            while not stop.is_set():
                waiter = asyncio.create_task(self._dirty.wait())
                stopper = asyncio.create_task(stop.wait())
                await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                stopper.cancel()
                if stop.is_set():
                    break
                self._dirty.clear()
                self._current = self._render()
                for queue in list(self._subscribers):
                    if queue.full():
                        with contextlib.suppress(asyncio.QueueEmpty):
                            queue.get_nowait()
                    queue.put_nowait(self._current)
                await asyncio.sleep(INTERVAL)
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
