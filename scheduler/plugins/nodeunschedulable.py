"""NodeUnschedulable: cordoned nodes take no new pods unless the pod tolerates the unschedulable taint."""

from __future__ import annotations

from typing import Any

from ..framework import SUCCESS, CycleState, NodeInfo, Pod, Status, unschedulable
from apimachinery.taints import tolerates

NAME = "NodeUnschedulable"
ERR_REASON = "node(s) were unschedulable"
TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class NodeUnschedulable:
    name = NAME

    def filter_view(self, pod: Pod) -> Any:
        return pod.get("spec", {}).get("tolerations") or []

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        if not node_info.node.get("spec", {}).get("unschedulable"):
            return SUCCESS
        if any(tolerates(t, TAINT) for t in pod.get("spec", {}).get("tolerations") or []):
            return SUCCESS
        return unschedulable(ERR_REASON, resolvable=False)
