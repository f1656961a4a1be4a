"""TaintToleration: untolerated NoSchedule/NoExecute taints filter a node; PreferNoSchedule ones lower its score
(the matching rule is apimachinery.taints').

Score as kube-scheduler: the raw score counts the node's PreferNoSchedule taints that the pod's tolerations
(those with an empty effect or PreferNoSchedule) do not tolerate; normalisation is reversed, so the node with
the fewest gets 100 and a node with the most gets 0. Node-static: both batch forms are cached per tolerations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from apimachinery.taints import untolerated

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

NAME = "TaintToleration"


def describe(taint: dict[str, Any]) -> str:
    """``{key: value}`` as Kubernetes prints a taint in the filter's reason."""
    return f"{{{taint['key']}: {taint.get('value') or ''}}}"


def taints_of(node: NodeInfo) -> list[dict[str, Any]]:
    return node.node.get("spec", {}).get("taints") or []


def first_untolerated(pod: Pod, node: NodeInfo) -> dict[str, Any] | None:
    """The first NoSchedule/NoExecute taint the pod does not tolerate (None: it fits)."""
    bad = untolerated(taints_of(node), pod.get("spec", {}).get("tolerations") or [], ("NoSchedule", "NoExecute"))
    return bad[0] if bad else None


def intolerable_prefer_no_schedule(pod: Pod, node: NodeInfo) -> int:
    tolerations = [t for t in pod.get("spec", {}).get("tolerations") or []
                   if t.get("effect") in (None, "", "PreferNoSchedule")]
    return len(untolerated(taints_of(node), tolerations, ("PreferNoSchedule",)))


def _tolerations(pod: Pod) -> Any:
    return pod.get("spec", {}).get("tolerations") or []


class TaintToleration:
    name = NAME

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts:
        return static_filter(self, _tolerations(pod), state, pod, table)

    def batch_score(self, state: CycleState, pod: Pod, table: NodeTable, rows: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        raw = static_scores(self, _tolerations(pod), state, pod, table, rows)
        return raw, default_normalize(raw, reverse=True)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        taint = first_untolerated(pod, node_info)
        if taint is None:
            return SUCCESS
        return unschedulable(f"node(s) had untolerated taint {describe(taint)}", resolvable=False)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return intolerable_prefer_no_schedule(pod, node_info)

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> dict[str, int]:
        return default_normalize_score(scores, reverse=True)
