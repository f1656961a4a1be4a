"""NodeAffinity: ``nodeSelector`` and required node affinity filter; preferred terms add their weights.

The matching rule (terms ORed, expressions ANDed, ``matchFields`` on ``metadata.name``) is
``apimachinery.nodeaffinity``'s, shared with the daemonset controller. Scores are the summed weights of the
matching preferred terms, normalised so the best node gets 100.
"""

from __future__ import annotations

from typing import Any

from apimachinery import nodeaffinity as affinity

from ..framework import SUCCESS, CycleState, NodeInfo, Pod, Status, default_normalize_score, unschedulable

NAME = "NodeAffinity"
ERR_REASON = "node(s) didn't match Pod's node affinity/selector"


def node_affinity(pod: Pod) -> dict[str, Any]:
    return affinity.node_affinity(pod.get("spec", {}))


def required_matches(pod: Pod, node: NodeInfo) -> bool:
    """nodeSelector (every label equal) AND required affinity (any term)."""
    return affinity.required_matches(pod.get("spec", {}), node.labels, node.name)


def preferred_score(pod: Pod, node: NodeInfo) -> int:
    preferred = node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return sum(int(p.get("weight", 0)) for p in preferred
               if affinity.term_matches(p.get("preference") or {}, node.labels, node.name))


class NodeAffinity:
    name = NAME
    normalize_reverse = False

    def filter_view(self, pod: Pod) -> Any:
        return pod.get("spec", {}).get("nodeSelector"), node_affinity(pod).get(
            "requiredDuringSchedulingIgnoredDuringExecution")

    def score_view(self, pod: Pod) -> Any:
        return node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution")

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        return SUCCESS if required_matches(pod, node_info) else unschedulable(ERR_REASON, resolvable=False)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return preferred_score(pod, node_info)

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> dict[str, int]:
        return default_normalize_score(scores, reverse=self.normalize_reverse)
