"""Taints and tolerations: the matching rule shared by the scheduler (filtering) and the controller-manager
(NoExecute eviction), so both read a toleration the same way.

As Kubernetes matches them: an empty key with ``Exists`` tolerates every taint, an empty effect matches every
effect, ``Exists`` ignores the value, ``Equal`` (the default) compares it.
"""

from __future__ import annotations

from typing import Any

Taint = dict[str, Any]
Toleration = dict[str, Any]


def tolerates(toleration: Toleration, taint: Taint) -> bool:
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


def untolerated(taints: list[Taint], tolerations: list[Toleration], effects: tuple[str, ...]) -> list[Taint]:
    """The taints with one of ``effects`` that no toleration tolerates."""
    return [t for t in taints if t.get("effect") in effects and not any(tolerates(tol, t) for tol in tolerations)]
