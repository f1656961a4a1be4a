"""NodePorts (PodFitsHostPorts): a hostPort may be used once per node, protocol and host IP (0.0.0.0 clashes
with every IP).

Batch form: a pod without host ports fits everywhere; otherwise only nodes where some pod uses a host port
(the node table's ``ports`` column) need the per-node check.
"""

from __future__ import annotations

import numpy as np

from ..framework import SUCCESS, BatchVerdicts, CycleState, NodeInfo, Pod, Status, host_ports, unschedulable
from ..nodetable import NodeTable

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


def fits_ports(pod: Pod, node: NodeInfo) -> bool:
    for ip, protocol, port in host_ports(pod):
        for used_ip, used_protocol, used_port in node.used_ports:
            if port == used_port and protocol == used_protocol and \
                    (ip == used_ip or "0.0.0.0" in (ip, used_ip)):
                return False
    return True


class NodePorts:
    name = NAME

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        return SUCCESS if fits_ports(pod, node_info) else unschedulable(ERR_REASON)

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts:
        if not host_ports(pod):
            return BatchVerdicts(np.ones(table.n, bool))
        used = table.ports[:table.n]
        return BatchVerdicts(~used, undecided=used)
