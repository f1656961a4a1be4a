"""NodePorts (PodFitsHostPorts): a hostPort may be used once per node, protocol and host IP (0.0.0.0 clashes
with every IP)."""

from __future__ import annotations

from ..framework import SUCCESS, CycleState, NodeInfo, Pod, Status, host_ports, unschedulable

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
