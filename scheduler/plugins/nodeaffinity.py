"""NodeAffinity: ``nodeSelector`` and required node affinity filter; preferred terms add their weights.

Terms are ORed, expressions within a term ANDed; operators In, NotIn, Exists, DoesNotExist, Gt, Lt on labels
(``matchExpressions``). ``matchFields`` is a field selector, as in Kubernetes: only In/NotIn with exactly one
value, on ``metadata.name``; anything else makes the term match nothing. Scores are the summed weights of the
matching preferred terms, normalised so the best node gets 100.
"""

from __future__ import annotations

from typing import Any

from apimachinery.labels import node_selector_requirement_matches

from ..framework import SUCCESS, CycleState, NodeInfo, Pod, Status, default_normalize_score, unschedulable

NAME = "NodeAffinity"
ERR_REASON = "node(s) didn't match Pod's node affinity/selector"


def field_requirement_matches(requirement: dict[str, Any], node_name: str) -> bool:
    values = requirement.get("values") or []
    if requirement.get("operator") not in ("In", "NotIn") or len(values) != 1:
        return False  # unsupported by the field selector: the term is invalid and matches nothing
    actual = node_name if requirement.get("key") == "metadata.name" else ""
    return (actual == values[0]) is (requirement["operator"] == "In")


def term_matches(term: dict[str, Any], node: NodeInfo) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches nothing
    if not all(node_selector_requirement_matches(e, node.labels) for e in expressions):
        return False
    return all(field_requirement_matches(f, node.name) for f in fields)


def node_affinity(pod: Pod) -> dict[str, Any]:
    return (pod.get("spec", {}).get("affinity") or {}).get("nodeAffinity") or {}


def required_matches(pod: Pod, node: NodeInfo) -> bool:
    """nodeSelector (every label equal) AND required affinity (any term)."""
    selector = pod.get("spec", {}).get("nodeSelector") or {}
    if any(node.labels.get(k) != v for k, v in selector.items()):
        return False
    required = node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    return any(term_matches(t, node) for t in required.get("nodeSelectorTerms") or [])


def preferred_score(pod: Pod, node: NodeInfo) -> int:
    preferred = node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return sum(int(p.get("weight", 0)) for p in preferred if term_matches(p.get("preference") or {}, node))


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
