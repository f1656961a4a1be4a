"""NodeAffinity: ``nodeSelector`` and required node affinity filter; preferred terms add their weights.

Terms are ORed, expressions within a term ANDed; operators In, NotIn, Exists, DoesNotExist, Gt, Lt on labels
(``matchExpressions``) and on ``metadata.name`` (``matchFields``).
"""

from __future__ import annotations

from typing import Any

from apimachinery.labels import node_selector_requirement_matches

from ..framework import SUCCESS, NodeInfo, Pod, Status, unschedulable

NAME = "NodeAffinity"
ERR_REASON = "node(s) didn't match Pod's node affinity/selector"


def term_matches(term: dict[str, Any], node: NodeInfo) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches nothing
    if not all(node_selector_requirement_matches(e, node.labels) for e in expressions):
        return False
    return all(node_selector_requirement_matches(f, {"metadata.name": node.name}) for f in fields)


def required_matches(pod: Pod, node: NodeInfo) -> bool:
    spec = pod.get("spec", {})
    selector = spec.get("nodeSelector") or {}
    if any(node.labels.get(k) != v for k, v in selector.items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    return any(term_matches(t, node) for t in required.get("nodeSelectorTerms") or [])


class NodeAffinity:
    name = NAME

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        return SUCCESS if required_matches(pod, node) else unschedulable(ERR_REASON, resolvable=False)

    def score(self, pod: Pod, node: NodeInfo) -> int:
        preferred = ((pod.get("spec", {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
            "preferredDuringSchedulingIgnoredDuringExecution") or []
        return sum(int(p.get("weight", 0)) for p in preferred if term_matches(p.get("preference") or {}, node))

    reverse = False
