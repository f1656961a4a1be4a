"""NoExecute taint eviction (kube-controller-manager's taint-eviction-controller).

A pod on a node with a NoExecute taint it does not tolerate is deleted at once; a pod that tolerates the taint
with ``tolerationSeconds`` is deleted when that time has passed, counted from when this controller first saw
the taint on the node (``timeAdded`` when the taint carries it); removing the taint in time cancels the
eviction. Each eviction leaves a ``TaintManagerEviction`` event. Handlers only enqueue pod keys; ``sync``
re-reads the caches, so a requeued key simply re-decides.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from apimachinery.errors import NotFound
from apimachinery.meta import Object, parse_time
from apimachinery.taints import tolerates
from kubeclient import NODES, PODS, Clientset, EventRecorder, InformerFactory

from controllers.base import Controller, key_of, unwrap

log = logging.getLogger(__name__)


def noexecute_taints(node: Object) -> list[dict[str, Any]]:
    return [t for t in (node.get("spec", {}).get("taints") or []) if t.get("effect") == "NoExecute"]


def eviction_delay(pod: Object, taints: list[dict[str, Any]]) -> float | None:
    """Seconds the pod may stay (0: now), or None when it tolerates every NoExecute taint forever."""
    tolerations = pod.get("spec", {}).get("tolerations") or []
    delay: float | None = None
    for taint in taints:
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return 0.0
        bounded = [float(t["tolerationSeconds"]) for t in matching if t.get("tolerationSeconds") is not None]
        if len(bounded) == len(matching):  # every matching toleration is time-limited: the shortest wins
            delay = min(bounded) if delay is None else min(delay, min(bounded))
    return delay


class TaintEvictionController(Controller):
    name = "taint-eviction-controller"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 2) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.recorder = EventRecorder(clientset.events, "taint-eviction-controller")
        self.nodes = factory.informer(NODES)
        self.pods = factory.informer(PODS)
        self.informers = [self.nodes, self.pods]
        self.first_seen: dict[tuple[str, str, str], float] = {}  # (node, key, effect) → when seen
        self.pods.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new), None)
        self.nodes.add_event_handler(self._node_changed, lambda old, new: self._node_changed(new), None)

    def _node_changed(self, node: Object) -> None:
        name = node["metadata"]["name"]
        for pod in self.pods.indexer.list():
            if pod.get("spec", {}).get("nodeName") == name:
                self.enqueue(pod)

    def _taint_added_at(self, node: Object, taint: dict[str, Any]) -> float:
        if taint.get("timeAdded"):
            return parse_time(taint["timeAdded"]).timestamp()
        key = (node["metadata"]["name"], taint.get("key", ""), taint.get("value", ""))
        return self.first_seen.setdefault(key, time.time())

    async def sync(self, key: str) -> None:
        pod = self.pods.indexer.get_by_key(key)
        if pod is None:
            return
        pod = unwrap(pod)
        node_name = pod.get("spec", {}).get("nodeName")
        if not node_name or pod["metadata"].get("deletionTimestamp"):
            return
        node = self.nodes.indexer.get_by_key(node_name)
        if node is None:
            return
        taints = noexecute_taints(node)
        delay = eviction_delay(pod, taints)
        if delay is None:
            return
        since = min((self._taint_added_at(node, t) for t in taints), default=time.time())
        remaining = since + delay - time.time()
        if remaining > 0:
            self.enqueue_after(pod, remaining)
            return
        meta = pod["metadata"]
        self.recorder.event(pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {key_of(pod)}")
        try:
            await self.clientset.pods.delete(meta["name"], meta["namespace"], preconditions={"uid": meta["uid"]})
        except NotFound:
            pass
        log.info("evicted %s from %s (NoExecute taint)", key, node_name)
