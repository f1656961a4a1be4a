"""NodeName (PodFitsHost): a pod that names a node fits only that node (node-static: its batch form is cached
per ``spec.nodeName``)."""

from __future__ import annotations

from typing import Any

from ..framework import SUCCESS, BatchVerdicts, CycleState, NodeInfo, Pod, Status, unschedulable
from ..nodetable import NodeTable
from ..shapecache import static_filter

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


def fits_host(pod: Pod, node: NodeInfo) -> bool:
    wanted = pod.get("spec", {}).get("nodeName")
    return not wanted or wanted == node.name


class NodeName:
    name = NAME

    def view(self, pod: Pod) -> Any:
        return pod.get("spec", {}).get("nodeName")

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts:
        return static_filter(self, self.view(pod), state, pod, table)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        return SUCCESS if fits_host(pod, node_info) else unschedulable(ERR_REASON, resolvable=False)
