"""The scheduling loop: informers on nodes and pods, a queue of pods to place, filter → score → bind.

Pods to schedule have no ``spec.nodeName``, name this scheduler (``default-scheduler``) and are not being
deleted. Node usage comes from the pods bound to each node plus pods this scheduler has *assumed* (bound but not
yet seen bound in the watch), so two quick decisions never double-book a node. A pod nothing fits gets
``PodScheduled=False`` (reason Unschedulable) and a ``FailedScheduling`` event in Kubernetes' words, and waits
in the unschedulable set until a node or pod changes (no busy loop).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import Counter
from typing import Any

from apimachinery import errors
from apimachinery.meta import now_rfc3339
from kubeclient import Clientset
from kubeclient.events import EventRecorder
from kubeclient.informer import SharedInformer

from .framework import NodeInfo, Pod, Status, default_normalize_score
from .plugins import DEFAULT_FILTERS, DEFAULT_SCORES, REGISTRY

log = logging.getLogger(__name__)


def pod_key(pod: Pod) -> str:
    meta = pod["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


def failure_message(total: int, statuses: dict[str, Status]) -> str:
    """``0/3 nodes are available: 1 node(s) had untolerated taint {check: mycheck}, 2 Insufficient cpu.``"""
    counts = Counter(reason for s in statuses.values() for reason in s.reasons)
    parts = ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))  # as FitError sorts them
    return f"0/{total} nodes are available: {parts}." if parts else f"0/{total} nodes are available."


class Scheduler:
    def __init__(self, client: Clientset, name: str = "default-scheduler") -> None:
        self.client = client
        self.name = name
        self.filters = [REGISTRY[n]() for n in DEFAULT_FILTERS]
        self.scores = [(REGISTRY[n](), w) for n, w in DEFAULT_SCORES.items()]
        self.nodes: dict[str, NodeInfo] = {}
        self.assigned: dict[str, str] = {}  # pod key → node (bound or assumed)
        self._bound_pods: dict[str, Pod] = {}  # pod key → the pod as last seen bound (or assumed)
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.pending: dict[str, Pod] = {}
        self.unschedulable: set[str] = set()
        self.recorder = EventRecorder(client.events, self.name)
        self.node_informer = SharedInformer(client.nodes)
        self.pod_informer = SharedInformer(client.pods)
        self.node_informer.add_event_handler(self._node_changed, lambda o, n: self._node_changed(n),
                                             self._node_deleted)
        self.pod_informer.add_event_handler(self._pod_changed, lambda o, n: self._pod_changed(n), self._pod_deleted)

    # --- cache maintenance (informer handlers) ---------------------------------------------------------------
    def _node_changed(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        info = self.nodes.get(name)
        if info is None:
            info = self.nodes[name] = NodeInfo(node)
            for key, node_name in self.assigned.items():
                if node_name == name and key in self._bound_pods:
                    info.add_pod(key, self._bound_pods[key])
        else:
            info.node = node
        self._retry_unschedulable()

    def _node_deleted(self, node: Any) -> None:
        obj = getattr(node, "obj", node)
        self.nodes.pop(obj["metadata"]["name"], None)

    def _pod_changed(self, pod: Pod) -> None:
        key = pod_key(pod)
        node_name = pod.get("spec", {}).get("nodeName")
        if node_name:
            self.pending.pop(key, None)
            self.unschedulable.discard(key)
            if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                self._forget(key)
                self._retry_unschedulable()
                return
            self._bound_pods[key] = pod
            self.assigned[key] = node_name
            info = self.nodes.get(node_name)
            if info is not None:
                info.add_pod(key, pod)
            return
        if pod["metadata"].get("deletionTimestamp") or \
                pod.get("spec", {}).get("schedulerName", "default-scheduler") != self.name:
            return
        first = key not in self.pending
        self.pending[key] = pod
        if first and key not in self.unschedulable:
            self.queue.put_nowait(key)

    def _pod_deleted(self, pod: Any) -> None:
        obj = getattr(pod, "obj", pod)
        key = pod_key(obj)
        self.pending.pop(key, None)
        self.unschedulable.discard(key)
        self._forget(key)
        self._retry_unschedulable()

    def _forget(self, key: str) -> None:
        node_name = self.assigned.pop(key, None)
        self._bound_pods.pop(key, None)
        if node_name and node_name in self.nodes:
            self.nodes[node_name].remove_pod(key)

    def _retry_unschedulable(self) -> None:
        """Something changed that could help: move every unschedulable pod back to the active queue."""
        for key in list(self.unschedulable):
            self.unschedulable.discard(key)
            self.queue.put_nowait(key)

    # --- one scheduling cycle ---------------------------------------------------------------------------------
    def find_node(self, pod: Pod) -> tuple[str | None, dict[str, Status]]:
        """Filter every node, score the feasible ones, pick the best (ties at random)."""
        statuses: dict[str, Status] = {}
        feasible: list[NodeInfo] = []
        for info in self.nodes.values():
            for plugin in self.filters:
                status = plugin.filter(pod, info)
                if not status.ok:
                    statuses[info.name] = status
                    break
            else:
                feasible.append(info)
        if not feasible:
            return None, statuses
        totals = dict.fromkeys((n.name for n in feasible), 0)
        for plugin, weight in self.scores:
            raw = {n.name: plugin.score(pod, n) for n in feasible}
            normalized = default_normalize_score(raw, getattr(plugin, "reverse", False)) \
                if plugin.name in ("TaintToleration", "NodeAffinity") else raw
            for name, value in normalized.items():
                totals[name] += value * weight
        best = max(totals.values())
        return random.choice([n for n, v in totals.items() if v == best]), statuses

    async def schedule_one(self, key: str) -> None:
        pod = self.pending.get(key)
        if pod is None:
            return
        node_name, statuses = self.find_node(pod)
        if node_name is None:
            await self._unschedulable(key, pod, failure_message(len(self.nodes), statuses))
            return
        self.pending.pop(key, None)
        self.assigned[key] = node_name
        self._bound_pods[key] = pod
        self.nodes[node_name].add_pod(key, pod)  # assume: the node counts it before the bind lands
        asyncio.create_task(self._bind(key, pod, node_name))

    async def _bind(self, key: str, pod: Pod, node_name: str) -> None:
        try:
            await self.client.pods.bind(pod, node_name)
        except errors.StatusError as err:
            log.warning("binding %s to %s failed: %s", key, node_name, err)
            self._forget(key)
            if not isinstance(err, errors.NotFound):
                self.pending[key] = pod
                await asyncio.sleep(1)
                self.queue.put_nowait(key)
            return
        meta = pod["metadata"]
        self.recorder.event(pod, "Normal", "Scheduled",
                            f"Successfully assigned {meta['namespace']}/{meta['name']} to {node_name}")

    async def _unschedulable(self, key: str, pod: Pod, message: str) -> None:
        self.unschedulable.add(key)
        self.recorder.event(pod, "Warning", "FailedScheduling", message)
        meta = pod["metadata"]
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                     "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}
        try:
            await self.client.pods.patch(meta["name"], {"status": {"conditions": [condition]}}, "strategic",
                                         meta["namespace"], subresource="status")
        except errors.StatusError as err:
            log.info("could not mark %s unschedulable: %s", key, err)

    async def run(self, stop: asyncio.Event) -> None:
        tasks = [asyncio.create_task(self.node_informer.run(stop)), asyncio.create_task(self.pod_informer.run(stop))]
        await self.node_informer.wait_for_sync()
        await self.pod_informer.wait_for_sync()
        while not stop.is_set():
            get = asyncio.create_task(self.queue.get())
            stopped = asyncio.create_task(stop.wait())
            done, _ = await asyncio.wait({get, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if get not in done:
                get.cancel()
                break
            stopped.cancel()
            try:
                await self.schedule_one(get.result())
            except Exception:  # one bad pod must not stop the scheduler
                log.exception("scheduling %s failed", get.result())
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.recorder.close()
