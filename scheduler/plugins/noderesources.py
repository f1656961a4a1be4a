"""NodeResourcesFit (PodFitsResources) and its scores: LeastAllocated and BalancedAllocation.

Fit: requests plus what the node already has must not exceed allocatable, for cpu, memory, ephemeral storage
and the pod count. LeastAllocated prefers nodes with more free cpu and memory; BalancedAllocation prefers nodes
whose cpu and memory fractions stay close (the seed's example: node01 at 20 % cpu / 60 % memory loses to node02
at 50 % / 50 %).
"""

from __future__ import annotations

from ..framework import MAX_NODE_SCORE, SUCCESS, NodeInfo, Pod, Status, pod_requests, unschedulable

FIT = "NodeResourcesFit"
BALANCED = "NodeResourcesBalancedAllocation"


def insufficient(pod: Pod, node: NodeInfo) -> list[str]:
    want = pod_requests(pod)
    have = node.allocatable
    used = node.requested
    reasons = []
    if have.pods and used.pods + 1 > have.pods:
        reasons.append("Too many pods")
    for label, need, cap, taken in (("cpu", want.milli_cpu, have.milli_cpu, used.milli_cpu),
                                    ("memory", want.memory, have.memory, used.memory),
                                    ("ephemeral-storage", want.ephemeral_storage, have.ephemeral_storage,
                                     used.ephemeral_storage)):
        if need and need > cap - taken:
            reasons.append(f"Insufficient {label}")
    return reasons


def fractions(pod: Pod, node: NodeInfo) -> tuple[float, float]:
    want, have, used = pod_requests(pod), node.allocatable, node.requested
    cpu = (used.milli_cpu + want.milli_cpu) / have.milli_cpu if have.milli_cpu else 1.0
    mem = (used.memory + want.memory) / have.memory if have.memory else 1.0
    return min(cpu, 1.0), min(mem, 1.0)


class NodeResourcesFit:
    name = FIT
    reverse = False

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        reasons = insufficient(pod, node)
        return unschedulable(*reasons) if reasons else SUCCESS

    def score(self, pod: Pod, node: NodeInfo) -> int:
        """LeastAllocated: the mean free fraction of cpu and memory, 0..100."""
        cpu, mem = fractions(pod, node)
        return int(((1 - cpu) + (1 - mem)) / 2 * MAX_NODE_SCORE)


class NodeResourcesBalancedAllocation:
    name = BALANCED
    reverse = False

    def score(self, pod: Pod, node: NodeInfo) -> int:
        cpu, mem = fractions(pod, node)
        return int((1 - abs(cpu - mem)) * MAX_NODE_SCORE)
