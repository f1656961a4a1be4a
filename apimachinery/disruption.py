"""PodDisruptionBudget rules shared by the apiserver's evictions and the disruption controller (kube's
``pdbhelper`` and the policy/v1 PDB lister): which pods a budget selects, and its ``DisruptionAllowed`` condition.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import BadRequest
from apimachinery.labels import selector_from_label_selector
from apimachinery.meta import now_rfc3339

DISRUPTION_ALLOWED = "DisruptionAllowed"


def selects(pdb: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """policy/v1: a budget selects the pods of its namespace its selector matches; ``{}`` selects them all, a
    missing or invalid selector none."""
    pdb_meta, pod_meta = pdb.get("metadata") or {}, pod.get("metadata") or {}
    if pdb_meta.get("namespace") != pod_meta.get("namespace"):
        return False
    try:
        selector = selector_from_label_selector((pdb.get("spec") or {}).get("selector"))
    except BadRequest:
        return False
    return selector.matches(pod_meta.get("labels") or {})


def set_status_condition(status: dict[str, Any], type_: str, value: str, reason: str, message: str) -> None:
    """``meta.SetStatusCondition`` with the status' observedGeneration: the transition time moves only when the
    condition's status does."""
    conditions = status.setdefault("conditions", [])
    fields = {"status": value, "reason": reason, "message": message,
              "observedGeneration": int(status.get("observedGeneration") or 0)}
    for condition in conditions:
        if condition.get("type") == type_:
            if condition.get("status") != value:
                condition["lastTransitionTime"] = now_rfc3339()
            condition.update(fields)
            return
    conditions.append({"type": type_, **fields, "lastTransitionTime": now_rfc3339()})


def update_disruption_allowed(status: dict[str, Any]) -> None:
    """``UpdateDisruptionAllowedCondition``: True/SufficientPods while disruptions are allowed, else
    False/InsufficientPods."""
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    set_status_condition(status, DISRUPTION_ALLOWED, "True" if allowed else "False",
                         "SufficientPods" if allowed else "InsufficientPods", "")
