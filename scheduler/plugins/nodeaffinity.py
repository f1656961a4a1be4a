"""NodeAffinity: ``nodeSelector`` and required node affinity filter; preferred terms add their weights.

The matching rule (terms ORed, expressions ANDed, ``matchFields`` on ``metadata.name``) is
``apimachinery.nodeaffinity``'s, shared with the daemonset controller. Scores are the summed weights of the
matching preferred terms, normalised so the best node gets 100. Node-static: the batch forms are cached per
the pod's nodeSelector and required terms (filter) and per its preferred terms (score).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from apimachinery import nodeaffinity as affinity

from ..framework import (
    SUCCESS,
    BatchVerdicts,
    CycleState,
    NodeInfo,
    Pod,
    Status,
    default_normalize,
    default_normalize_score,
    unschedulable,
)
from ..nodetable import NodeTable
from ..shapecache import static_filter, static_scores

NAME = "NodeAffinity"
ERR_REASON = "node(s) didn't match Pod's node affinity/selector"


def node_affinity(pod: Pod) -> dict[str, Any]:
    return affinity.node_affinity(pod.get("spec", {}))


def required_matches(pod: Pod, node: NodeInfo) -> bool:
    """nodeSelector (every label equal) AND required affinity (any term)."""
    return affinity.required_matches(pod.get("spec", {}), node.labels, node.name)


def required_view(pod: Pod) -> Any:
    """What the filter reads of the pod: its nodeSelector and required node affinity."""
    return pod.get("spec", {}).get("nodeSelector"), node_affinity(pod).get(
        "requiredDuringSchedulingIgnoredDuringExecution")


def preferred_score(pod: Pod, node: NodeInfo) -> int:
    preferred = node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return sum(int(p.get("weight", 0)) for p in preferred
               if affinity.term_matches(p.get("preference") or {}, node.labels, node.name))


class NodeAffinity:
    name = NAME

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts:
        return static_filter(self, required_view(pod), state, pod, table)

    def batch_score(self, state: CycleState, pod: Pod, table: NodeTable, rows: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        raw = static_scores(self, node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution"),
                            state, pod, table, rows)
        return raw, default_normalize(raw)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        return SUCCESS if required_matches(pod, node_info) else unschedulable(ERR_REASON, resolvable=False)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return preferred_score(pod, node_info)

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> dict[str, int]:
        return default_normalize_score(scores)
