"""TaintToleration: untolerated NoSchedule/NoExecute taints filter a node; PreferNoSchedule ones lower its score
(the matching rule is apimachinery.taints')."""

from __future__ import annotations

from typing import Any

from apimachinery.taints import untolerated

from ..framework import MAX_NODE_SCORE, SUCCESS, NodeInfo, Pod, Status, unschedulable

NAME = "TaintToleration"


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
