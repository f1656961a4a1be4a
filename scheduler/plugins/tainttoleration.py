"""TaintToleration: untolerated NoSchedule/NoExecute taints filter a node; PreferNoSchedule ones lower its score.

Matching as Kubernetes does: an empty key with ``Exists`` tolerates every taint, an empty effect matches every
effect, ``Exists`` ignores the value, ``Equal`` (the default) compares it.
"""

from __future__ import annotations

from typing import Any

from ..framework import MAX_NODE_SCORE, SUCCESS, NodeInfo, Pod, Status, unschedulable

NAME = "TaintToleration"


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"
    if key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated(taints: list[dict[str, Any]], tolerations: list[dict[str, Any]],
                effects: tuple[str, ...]) -> list[dict[str, Any]]:
    return [t for t in taints if t.get("effect") in effects and not any(tolerates(tol, t) for tol in tolerations)]


def describe(taint: dict[str, Any]) -> str:
    return f"{{{taint['key']}: {taint['value']}}}" if taint.get("value") else f"{{{taint['key']}: }}"


class TaintToleration:
    name = NAME

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        taints = node.node.get("spec", {}).get("taints") or []
        bad = untolerated(taints, pod.get("spec", {}).get("tolerations") or [], ("NoSchedule", "NoExecute"))
        if bad:
            return unschedulable(f"node(s) had untolerated taint {describe(bad[0])}", resolvable=False)
        return SUCCESS

    def score(self, pod: Pod, node: NodeInfo) -> int:
        """Raw score: the number of intolerable PreferNoSchedule taints (normalised in reverse)."""
        taints = node.node.get("spec", {}).get("taints") or []
        return len(untolerated(taints, pod.get("spec", {}).get("tolerations") or [], ("PreferNoSchedule",)))

    reverse = True
    max_score = MAX_NODE_SCORE
