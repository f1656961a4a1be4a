"""NodeUnschedulable: cordoned nodes take no new pods unless the pod tolerates the unschedulable taint
(node-static: its batch form is cached per tolerations)."""

from __future__ import annotations

from typing import Any

from apimachinery.taints import tolerates

from ..framework import SUCCESS, BatchVerdicts, CycleState, NodeInfo, Pod, Status, unschedulable
from ..nodetable import NodeTable
from ..shapecache import static_filter

NAME = "NodeUnschedulable"
ERR_REASON = "node(s) were unschedulable"
TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class NodeUnschedulable:
    name = NAME

    def view(self, pod: Pod) -> Any:
        return pod.get("spec", {}).get("tolerations") or []

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts:
        return static_filter(self, self.view(pod), state, pod, table)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        if not node_info.node.get("spec", {}).get("unschedulable"):
            return SUCCESS
        if any(tolerates(t, TAINT) for t in pod.get("spec", {}).get("tolerations") or []):
            return SUCCESS
        return unschedulable(ERR_REASON, resolvable=False)
