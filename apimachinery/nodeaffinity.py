"""Whether a pod's ``nodeSelector`` and required node affinity admit a node: the rule shared by the scheduler
(its NodeAffinity filter) and the daemonset controller (which places pods on the nodes they may run on).

Terms are ORed, expressions within a term ANDed; operators In, NotIn, Exists, DoesNotExist, Gt, Lt on labels
(``matchExpressions``). ``matchFields`` is a field selector, as in Kubernetes: only In/NotIn with exactly one
value, on ``metadata.name``; anything else makes the term match nothing, and so does an empty term.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.labels import node_selector_requirement_matches


def field_requirement_matches(requirement: Mapping[str, Any], node_name: str) -> bool:
    values = requirement.get("values") or []
    if requirement.get("operator") not in ("In", "NotIn") or len(values) != 1:
        return False  # unsupported by the field selector: the term is invalid and matches nothing
    actual = node_name if requirement.get("key") == "metadata.name" else ""
    return (actual == values[0]) is (requirement["operator"] == "In")


def term_matches(term: Mapping[str, Any], labels: Mapping[str, str], node_name: str) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    if not all(node_selector_requirement_matches(e, labels) for e in expressions):
        return False
    return all(field_requirement_matches(f, node_name) for f in fields)


def node_affinity(pod_spec: Mapping[str, Any]) -> dict[str, Any]:
    return (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}


def required_matches(pod_spec: Mapping[str, Any], labels: Mapping[str, str], node_name: str) -> bool:
    """nodeSelector (every label equal) AND required affinity (any term)."""
    selector = pod_spec.get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    required = node_affinity(pod_spec).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    return any(term_matches(t, labels, node_name) for t in required.get("nodeSelectorTerms") or [])
