"""NodeResourcesFit (PodFitsResources) and its scores: LeastAllocated and BalancedAllocation.

Fit: requests plus what the node already has must not exceed allocatable, for cpu, memory, ephemeral storage
and the pod count. The scores count a container that requests nothing as 0.1 cpu / 200 MiB (kube-scheduler's
non-zero defaults). LeastAllocated (the seed's LeastRequestedPriority) prefers nodes with more free cpu and
memory; BalancedAllocation prefers nodes whose cpu and memory fractions stay close (the seed's example: node01
at 20 % cpu / 60 % memory loses to node02 at 50 % / 50 %).
"""

from __future__ import annotations

from ..framework import (MAX_NODE_SCORE, SUCCESS, CycleState, NodeInfo, Pod, Status, pod_non_zero_requests,
                         pod_requests, unschedulable)

FIT = "NodeResourcesFit"
BALANCED = "NodeResourcesBalancedAllocation"


def insufficient(pod: Pod, node: NodeInfo) -> list[str]:
    """The reasons the node cannot hold the pod's requests, in Kubernetes' words (empty: it fits)."""
    want = pod_requests(pod)
    have = node.allocatable
    used = node.requested
    reasons = []
    if have.pods and used.pods + 1 > have.pods:  # a node that states no pod capacity is not limited here
        reasons.append("Too many pods")
    for label, need, cap, taken in (("cpu", want.milli_cpu, have.milli_cpu, used.milli_cpu),
                                    ("memory", want.memory, have.memory, used.memory),
                                    ("ephemeral-storage", want.ephemeral_storage, have.ephemeral_storage,
                                     used.ephemeral_storage)):
        if need and need > cap - taken:
            reasons.append(f"Insufficient {label}")
    return reasons


def requested_after(pod: Pod, node: NodeInfo) -> tuple[int, int]:
    """Non-zero cpu (milli) and memory the node would have requested with the pod on it."""
    want = pod_non_zero_requests(pod)
    return node.non_zero_requested.milli_cpu + want.milli_cpu, node.non_zero_requested.memory + want.memory


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_allocated(pod: Pod, node: NodeInfo) -> int:
    """The mean of cpu's and memory's free share, 0..100 (equal weights, integer maths as Kubernetes)."""
    cpu, mem = requested_after(pod, node)
    have = node.allocatable
    return (least_requested_score(cpu, have.milli_cpu) + least_requested_score(mem, have.memory)) // 2


def balanced_allocation(pod: Pod, node: NodeInfo) -> int:
    """100 × (1 − standard deviation of the cpu and memory fractions); for two resources std = |cpu − mem| / 2."""
    cpu, mem = requested_after(pod, node)
    have = node.allocatable
    cpu_fraction = min(cpu / have.milli_cpu, 1.0) if have.milli_cpu else 1.0
    mem_fraction = min(mem / have.memory, 1.0) if have.memory else 1.0
    std = abs(cpu_fraction - mem_fraction) / 2
    return int((1 - std) * MAX_NODE_SCORE)


class NodeResourcesFit:
    name = FIT

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        reasons = insufficient(pod, node_info)
        return unschedulable(*reasons) if reasons else SUCCESS

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return least_allocated(pod, node_info)


class NodeResourcesBalancedAllocation:
    name = BALANCED

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return balanced_allocation(pod, node_info)
