"""The pod garbage collector (``pkg/controller/podgc``): pods nobody else will ever clean up.

Every ``gc_period`` (20 s, and at once when a node is deleted):

* **orphaned** — pods bound to a node that does not exist.  A node missing from the cache is confirmed with a
  GET first (the cache may not have seen a brand-new node yet); then each pod gets ``DisruptionTarget``
  (reason ``DeletionByPodGC``), phase Failed if it had not finished, and is force-deleted (grace 0): no kubelet
  is left to finish a graceful deletion.
* **unscheduled terminating** — pods being deleted that were never bound: force-deleted.
* **terminated** — Succeeded/Failed pods beyond ``--terminated-pod-gc-threshold``: the oldest go first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from apimachinery.errors import NotFound
from apimachinery.meta import Object
from controllers.support.base import Controller, key_of
from controllers.support.podutil import fmt_time, get_condition, is_pod_terminal, meta, now_utc
from kubeclient import NODES, PODS, Clientset, InformerFactory

log = logging.getLogger(__name__)

GC_PERIOD = 20.0
ALL = "all"


class PodGCController(Controller):
    name = "pod-garbage-collector-controller"
    queue_name = "orphaned_pods_nodes"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, terminated_pod_threshold: int = 12500,
                 gc_period: float = GC_PERIOD) -> None:
        super().__init__(workers=1)
        self.clientset = clientset
        self.terminated_pod_threshold = terminated_pod_threshold
        self.gc_period = gc_period
        self.pod_informer = factory.informer(PODS)
        self.node_informer = factory.informer(NODES)
        self.informers = [self.pod_informer, self.node_informer]
        self.node_informer.add_event_handler(on_delete=lambda node: self.queue.add(ALL))

    def background(self) -> list[asyncio.Task[None]]:
        return [asyncio.create_task(self._tick(), name="pod gc")]

    async def _tick(self) -> None:
        while True:
            self.queue.add(ALL)
            await asyncio.sleep(self.gc_period)

    async def sync(self, key: str) -> None:
        pods = self.pod_informer.indexer.list()
        if self.terminated_pod_threshold > 0:
            await self._gc_terminated(pods)
        await self._gc_orphaned(pods)
        await self._gc_unscheduled_terminating(pods)

    async def _gc_terminated(self, pods: list[Object]) -> None:
        terminated = [p for p in pods if is_pod_terminal(p)]
        excess = len(terminated) - self.terminated_pod_threshold
        if excess <= 0:
            return
        terminated.sort(key=lambda p: meta(p).get("creationTimestamp") or "")
        log.info("garbage collecting %d terminated pods", excess)
        await asyncio.gather(*(self._delete(p, grace=None) for p in terminated[:excess]))

    async def _gc_orphaned(self, pods: list[Object]) -> None:
        missing: dict[str, bool] = {}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or self.node_informer.indexer.get_by_key(node) is not None:
                continue
            if node not in missing:
                missing[node] = await self._node_gone(node)
            if missing[node]:
                log.info("deleting pod %s: its node %s no longer exists", key_of(pod), node)
                await self._mark_failed(pod, "DeletionByPodGC", "PodGC: node no longer exists")
                await self._delete(pod, grace=0)

    async def _node_gone(self, name: str) -> bool:
        try:
            await self.clientset.nodes.get(name)
        except NotFound:
            return True
        return False

    async def _gc_unscheduled_terminating(self, pods: list[Object]) -> None:
        for pod in pods:
            if meta(pod).get("deletionTimestamp") and not (pod.get("spec") or {}).get("nodeName"):
                await self._delete(pod, grace=0)

    async def _mark_failed(self, pod: Object, reason: str, message: str) -> None:
        """``DisruptionTarget`` (and phase Failed unless finished), so owners and users see why it went: a
        strategic merge patch of ``pods/status`` from the cached pod, as kube's ``PatchPodStatus`` (its role may
        patch pod status, not get pods)."""
        m = meta(pod)
        condition = get_condition(pod.get("status") or {}, "DisruptionTarget")
        if condition is not None and condition.get("status") == "True" and is_pod_terminal(pod):
            return
        status: dict[str, Any] = {"conditions": [{
            "type": "DisruptionTarget", "status": "True", "reason": reason, "message": message,
            "lastTransitionTime": fmt_time(now_utc())}]}
        if not is_pod_terminal(pod):
            status["phase"] = "Failed"
        with contextlib.suppress(NotFound):
            await self.clientset.pods.patch(m["name"], {"metadata": {"uid": m["uid"]}, "status": status},
                                            "strategic", m["namespace"], subresource="status")

    async def _delete(self, pod: Object, *, grace: int | None) -> None:
        m = meta(pod)
        with contextlib.suppress(NotFound):
            await self.clientset.pods.delete(m["name"], m["namespace"], grace_period_seconds=grace,
                                             preconditions={"uid": m["uid"]})
