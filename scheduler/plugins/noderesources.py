"""NodeResourcesFit (PodFitsResources) and its scores: LeastAllocated and BalancedAllocation.

Fit: requests plus what the node already has must not exceed allocatable, for cpu, memory, ephemeral storage
and the pod count. The scores count a container that requests nothing as 0.1 cpu / 200 MiB (kube-scheduler's
non-zero defaults). LeastAllocated (the seed's LeastRequestedPriority) prefers nodes with more free cpu and
memory; BalancedAllocation prefers nodes whose cpu and memory fractions stay close (the seed's example: node01
at 20 % cpu / 60 % memory loses to node02 at 50 % / 50 %).

Batch forms: the same integer/float maths over the node table's resource columns for every row at once
(``fit_reasons``, ``least_allocated_rows``, ``balanced_allocation_rows``; a unit test compares them with the
per-node functions). The filter's reasons are kept as bits per row and turned into a Status only when read.
"""

from __future__ import annotations

import numpy as np

from ..framework import (
    MAX_NODE_SCORE,
    SUCCESS,
    BatchVerdicts,
    CodedStatuses,
    CycleState,
    NodeInfo,
    Pod,
    Resources,
    Status,
    pod_non_zero_requests,
    pod_requests,
    unschedulable,
)
from ..nodetable import CPU, EPH, MEM, PODS, NodeTable

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


# --- over the node table ---------------------------------------------------------------------------------

# The filter's reasons as bits, in the order ``insufficient`` lists them; every combination's Status.
TOO_MANY_PODS, INSUFFICIENT_CPU, INSUFFICIENT_MEMORY, INSUFFICIENT_EPHEMERAL = 1, 2, 4, 8
FIT_REASONS = ((TOO_MANY_PODS, "Too many pods"), (INSUFFICIENT_CPU, "Insufficient cpu"),
               (INSUFFICIENT_MEMORY, "Insufficient memory"), (INSUFFICIENT_EPHEMERAL, "Insufficient ephemeral-storage"))
FIT_STATUSES: tuple[Status | None, ...] = tuple(
    unschedulable(*(text for bit, text in FIT_REASONS if bits & bit)) if bits else None
    for bits in range(16))


def fit_reasons(table: NodeTable, want: Resources) -> np.ndarray:
    """Per row, the bits of the filter's reasons (0: fits) — ``insufficient`` for every node at once."""
    n = table.n
    alloc, req = table.alloc[:n], table.req[:n]
    bits = np.where((alloc[:, PODS] != 0) & (req[:, PODS] + 1 > alloc[:, PODS]), TOO_MANY_PODS, 0)
    for col, bit, need in ((CPU, INSUFFICIENT_CPU, want.milli_cpu), (MEM, INSUFFICIENT_MEMORY, want.memory),
                           (EPH, INSUFFICIENT_EPHEMERAL, want.ephemeral_storage)):
        if need:
            bits |= np.where(need > alloc[:, col] - req[:, col], bit, 0)
    return bits.astype(np.uint8)


def _least_requested(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    safe = np.where(capacity == 0, 1, capacity)
    score = (capacity - requested) * MAX_NODE_SCORE // safe
    return np.where((capacity == 0) | (requested > capacity), 0, score)


def least_allocated_rows(table: NodeTable, rows: np.ndarray, want_non_zero: Resources) -> np.ndarray:
    """``least_allocated`` for ``rows``."""
    cpu = table.nz[rows, 0] + want_non_zero.milli_cpu
    mem = table.nz[rows, 1] + want_non_zero.memory
    scores: np.ndarray = (_least_requested(cpu, table.alloc[rows, CPU])
                          + _least_requested(mem, table.alloc[rows, MEM])) // 2
    return scores


def balanced_allocation_rows(table: NodeTable, rows: np.ndarray, want_non_zero: Resources) -> np.ndarray:
    """``balanced_allocation`` for ``rows`` (the same float operations, so the same results)."""
    cpu = (table.nz[rows, 0] + want_non_zero.milli_cpu).astype(np.float64)
    mem = (table.nz[rows, 1] + want_non_zero.memory).astype(np.float64)
    cap_cpu = table.alloc[rows, CPU].astype(np.float64)
    cap_mem = table.alloc[rows, MEM].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        cpu_fraction = np.where(cap_cpu != 0, np.minimum(cpu / np.where(cap_cpu == 0, 1, cap_cpu), 1.0), 1.0)
        mem_fraction = np.where(cap_mem != 0, np.minimum(mem / np.where(cap_mem == 0, 1, cap_mem), 1.0), 1.0)
    std = np.abs(cpu_fraction - mem_fraction) / 2
    scores: np.ndarray = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return scores


class NodeResourcesFit:
    name = FIT

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        reasons = insufficient(pod, node_info)
        return unschedulable(*reasons) if reasons else SUCCESS

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return least_allocated(pod, node_info)

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts:
        bits = fit_reasons(table, pod_requests(pod))
        return BatchVerdicts(bits == 0, CodedStatuses(bits, FIT_STATUSES))

    def batch_score(self, state: CycleState, pod: Pod, table: NodeTable, rows: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        raw = least_allocated_rows(table, rows, pod_non_zero_requests(pod))
        return raw, raw


class NodeResourcesBalancedAllocation:
    name = BALANCED

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return balanced_allocation(pod, node_info)

    def batch_score(self, state: CycleState, pod: Pod, table: NodeTable, rows: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        raw = balanced_allocation_rows(table, rows, pod_non_zero_requests(pod))
        return raw, raw
