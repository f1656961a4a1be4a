"""The node lifecycle controller (``pkg/controller/nodelifecycle``): notice dead nodes, taint them, heal them.

A node proves it is alive by heartbeats: its kubelet renews the Lease ``kube-node-lease/<node>`` every few
seconds and posts the Ready condition (``lastHeartbeatTime``) now and then.  The controller never compares
those timestamps with its own clock (clocks differ between machines); it notes, on its own monotonic clock,
*when it last saw either change* (``probe``).  ``sync(node)``, run on every node or Lease event and every
``--node-monitor-period``:

1. If no heartbeat was seen for ``--node-monitor-grace-period`` (``--node-startup-grace-period`` for a
   node that never posted status), set Ready, MemoryPressure, DiskPressure and PIDPressure to ``Unknown``
   (reason ``NodeStatusUnknown``, "Kubelet stopped posting node status.").
2. Keep the controller's taints in line with the conditions: NoExecute ``node.kubernetes.io/unreachable``
   for Ready=Unknown, ``node.kubernetes.io/not-ready`` for Ready=False, none for Ready=True (the taint
   eviction controller then evicts pods that do not tolerate them); NoSchedule taints for the same
   conditions, the pressure conditions and ``spec.unschedulable`` (a cordoned node).
3. When Ready stops being True: a ``NodeNotReady`` event, and every pod on the node gets Ready=False (so
   services stop sending it traffic).  When it returns: a ``NodeReady`` event.

Leaving out Kubernetes' per-zone eviction rate limiting, a node's taints change on the first sync that
sees its condition change.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apimachinery.errors import NotFound, StatusError
from apimachinery.meta import Object, parse_time
from controllers.support.base import Controller, ensure_indexer, unwrap
from controllers.support.podutil import fmt_time, get_condition, is_pod_ready, meta, now_utc
from controllers.support.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    TAINT_DISK_PRESSURE,
    TAINT_MEMORY_PRESSURE,
    TAINT_NETWORK_UNAVAILABLE,
    TAINT_NOT_READY,
    TAINT_PID_PRESSURE,
    TAINT_UNREACHABLE,
    TAINT_UNSCHEDULABLE,
)
from kubeclient import LEASES, NODE_NAME_INDEX, NODES, PODS, Clientset, EventRecorder, InformerFactory
from kubeclient.informer import node_name_index_func

log = logging.getLogger(__name__)

NODE_LEASE_NAMESPACE = "kube-node-lease"
UNKNOWN_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
# condition type → {status: taint key} for the NoSchedule taints (``nodeConditionToTaintKeyStatusMap``).
NO_SCHEDULE_TAINTS: dict[str, dict[str, str]] = {
    "Ready": {"False": TAINT_NOT_READY, "Unknown": TAINT_UNREACHABLE},
    "MemoryPressure": {"True": TAINT_MEMORY_PRESSURE},
    "DiskPressure": {"True": TAINT_DISK_PRESSURE},
    "PIDPressure": {"True": TAINT_PID_PRESSURE},
    "NetworkUnavailable": {"True": TAINT_NETWORK_UNAVAILABLE},
}
MANAGED_NO_SCHEDULE = {k for m in NO_SCHEDULE_TAINTS.values() for k in m.values()} | {TAINT_UNSCHEDULABLE}
MANAGED_NO_EXECUTE = {TAINT_NOT_READY, TAINT_UNREACHABLE}


@dataclass
class _Health:
    probe: float  # monotonic time we last saw a heartbeat change
    heartbeat: str | None = None  # the Ready condition's lastHeartbeatTime we last saw
    lease_renew: str | None = None  # the Lease's renewTime we last saw
    ready: str | None = None  # the Ready status at our last sync


def node_ref(name: str) -> Object:
    """Nodes' events name the node as uid, as the kubelet's and Kubernetes' node controller's do."""
    return {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name, "uid": name}}


def desired_taints(node: Object) -> tuple[set[str], set[str]]:
    """(NoExecute keys, NoSchedule keys) the node's conditions and spec call for."""
    status = node.get("status") or {}
    ready = get_condition(status, "Ready")
    ready_status = ready.get("status") if ready else None
    no_execute = {"False": {TAINT_NOT_READY}, "Unknown": {TAINT_UNREACHABLE}}.get(ready_status or "", set())
    no_schedule = set()
    for kind, by_status in NO_SCHEDULE_TAINTS.items():
        condition = get_condition(status, kind)
        if condition is not None and condition.get("status") in by_status:
            no_schedule.add(by_status[condition["status"]])
    if (node.get("spec") or {}).get("unschedulable"):
        no_schedule.add(TAINT_UNSCHEDULABLE)
    return no_execute, no_schedule


def reconcile_taints(taints: list[dict[str, Any]], no_execute: set[str], no_schedule: set[str],
                     now: str) -> list[dict[str, Any]]:
    """``taints`` with the controller-managed ones made to match the desired keys; others untouched."""
    out = []
    for taint in taints:
        key, effect = taint.get("key"), taint.get("effect")
        if effect == NO_EXECUTE and key in MANAGED_NO_EXECUTE and key not in no_execute:
            continue
        if effect == NO_SCHEDULE and key in MANAGED_NO_SCHEDULE and key not in no_schedule:
            continue
        out.append(taint)
    have = {(t.get("key"), t.get("effect")) for t in out}
    for key in sorted(no_execute):
        if (key, NO_EXECUTE) not in have:
            out.append({"key": key, "effect": NO_EXECUTE, "timeAdded": now})
    for key in sorted(no_schedule):
        if (key, NO_SCHEDULE) not in have:
            out.append({"key": key, "effect": NO_SCHEDULE})
    return out


class NodeLifecycleController(Controller):
    name = "node-lifecycle-controller"
    queue_name = "node_lifecycle_controller"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, grace_period: float = 50.0,
                 monitor_period: float = 5.0, startup_grace_period: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(workers=4)
        self.clientset = clientset
        self.grace_period = grace_period
        self.monitor_period = monitor_period
        self.startup_grace_period = startup_grace_period
        self._clock = clock
        self.health: dict[str, _Health] = {}
        self.recorder = EventRecorder(clientset.events, "node-controller")
        self.node_informer = factory.informer(NODES)
        self.lease_informer = factory.informer(LEASES)
        self.pod_informer = factory.informer(PODS)
        ensure_indexer(self.pod_informer, NODE_NAME_INDEX, node_name_index_func)
        self.informers = [self.node_informer, self.lease_informer, self.pod_informer]
        self.node_informer.add_event_handler(self._add_node, lambda old, new: self.enqueue(new), self._delete_node)
        self.lease_informer.add_event_handler(self._lease_changed, lambda old, new: self._lease_changed(new))

    def _add_node(self, node: Object) -> None:
        name = meta(node)["name"]
        self.recorder.event(node_ref(name), "Normal", "RegisteredNode",
                            f"Node {name} event: Registered Node {name} in Controller")
        self.enqueue(node)

    def _delete_node(self, obj: Any) -> None:
        name = meta(unwrap(obj))["name"]
        self.health.pop(name, None)
        self.recorder.event(node_ref(name), "Normal", "RemovingNode",
                            f"Node {name} event: Removing Node {name} from Controller")

    def _lease_changed(self, lease: Object) -> None:
        if meta(lease).get("namespace") == NODE_LEASE_NAMESPACE:
            self.queue.add(meta(lease)["name"])

    def background(self) -> list[asyncio.Task[None]]:
        return [asyncio.create_task(self._monitor(), name="node monitor")]

    async def _monitor(self) -> None:
        """Every ``monitor_period``: look at every node (heartbeats that stopped raise no event)."""
        while True:
            for key in self.node_informer.indexer.list_keys():
                self.queue.add(key)
            await asyncio.sleep(self.monitor_period)

    async def sync(self, key: str) -> None:
        cached = self.node_informer.indexer.get_by_key(key)
        if cached is None:
            self.health.pop(key, None)
            return
        # The informer's object, read only: the writes below copy it first. Every Lease renewal syncs its node
        # (100 per second with 1,000 nodes), and a deep copy of the Node each time was 18 % of the
        # controller-manager's samples in bench/scale.py.
        node = cached
        health, grace = self._observe(node)
        if self._clock() > health.probe + grace:
            node = await self._mark_unknown(node)
        else:  # come back when the grace period would run out
            self.queue.add_after(key, health.probe + grace - self._clock() + 0.05)
        ready = get_condition(node.get("status"), "Ready")
        if ready is None:
            return
        await self._sync_taints(node)
        previous, health.ready = health.ready, ready.get("status")
        if previous == "True" and health.ready != "True":
            self.recorder.event(node_ref(key), "Normal", "NodeNotReady", f"Node {key} status is now: NodeNotReady")
            await self._mark_pods_not_ready(key)
        elif previous is not None and previous != "True" and health.ready == "True":
            self.recorder.event(node_ref(key), "Normal", "NodeReady", f"Node {key} status is now: NodeReady")

    def _observe(self, node: Object) -> tuple[_Health, float]:
        """Update the node's probe time from its Ready heartbeat and Lease; return it and its grace period."""
        name, now = meta(node)["name"], self._clock()
        ready = get_condition(node.get("status"), "Ready")
        health = self.health.get(name)
        if health is None:
            probe = now
            if ready is None and meta(node).get("creationTimestamp"):
                age = (now_utc() - parse_time(meta(node)["creationTimestamp"])).total_seconds()
                probe = now - max(age, 0.0)
            health = self.health[name] = _Health(probe, ready.get("lastHeartbeatTime") if ready else None)
        elif ready is not None and ready.get("lastHeartbeatTime") != health.heartbeat:
            health.heartbeat, health.probe = ready.get("lastHeartbeatTime"), now
        lease = self.lease_informer.indexer.get_by_key(f"{NODE_LEASE_NAMESPACE}/{name}")
        renew = ((lease or {}).get("spec") or {}).get("renewTime")
        if renew and renew != health.lease_renew:
            health.lease_renew, health.probe = renew, now
        return health, (self.grace_period if ready is not None else self.startup_grace_period)

    async def _mark_unknown(self, cached: Object) -> Object:
        """The node with its conditions Unknown (written when they changed): a copy, never ``cached`` itself."""
        node = copy.deepcopy(cached)
        status = node.setdefault("status", {})
        conditions = status.setdefault("conditions", [])
        now, changed = fmt_time(now_utc()), False
        for kind in UNKNOWN_CONDITIONS:
            condition = get_condition(status, kind)
            if condition is None:
                conditions.append({"type": kind, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                                   "message": "Kubelet never posted node status.",
                                   "lastHeartbeatTime": meta(node).get("creationTimestamp"),
                                   "lastTransitionTime": now})
                changed = True
            elif condition.get("status") != "Unknown":
                condition.update(status="Unknown", reason="NodeStatusUnknown",
                                 message="Kubelet stopped posting node status.", lastTransitionTime=now)
                changed = True
        if changed:
            log.info("node %s: no heartbeat for %.0fs, marking it Unknown", meta(node)["name"], self.grace_period)
            return await self.clientset.nodes.update_status(node)
        return node

    async def _sync_taints(self, node: Object) -> None:
        no_execute, no_schedule = desired_taints(node)
        taints = list((node.get("spec") or {}).get("taints") or [])
        wanted = reconcile_taints(taints, no_execute, no_schedule, fmt_time(now_utc()))
        if wanted == taints:
            return
        node = copy.deepcopy(node)  # (the informer's object)
        node.setdefault("spec", {})["taints"] = wanted
        if not wanted:
            del node["spec"]["taints"]
        await self.clientset.nodes.update(node)

    async def _mark_pods_not_ready(self, node_name: str) -> None:
        """Ready=False on every pod of the node that still claims to be ready (``MarkPodsNotReady``)."""
        errors: list[StatusError] = []
        for pod in self.pod_informer.indexer.by_index(NODE_NAME_INDEX, node_name):
            if not is_pod_ready(pod):
                continue
            pod = copy.deepcopy(pod)
            condition = get_condition(pod.get("status"), "Ready")
            assert condition is not None
            condition.update(status="False", lastTransitionTime=fmt_time(now_utc()))
            try:
                await self.clientset.pods.update_status(pod)
            except NotFound:
                continue
            except StatusError as err:
                errors.append(err)
                continue
            self.recorder.event(pod, "Warning", "NodeNotReady", "Node is not ready")
        if errors:
            self.health[node_name].ready = "True"  # so the next sync retries the transition
            raise errors[0]
