"""Taints and tolerations as the controllers need them (``v1helper`` and ``taintutils``).

The matching rule itself (``tolerates``) is ``apimachinery.taints``', shared with the scheduler; on top:

* ``matching_tolerations(taints, tolerations)``: whether every taint is tolerated, and by which tolerations.
* ``min_toleration_seconds``: how long a pod may stay — the smallest ``tolerationSeconds`` among those used
  (negative ones count as 0), or None for "forever" when none sets it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from apimachinery.meta import Object
from apimachinery.taints import tolerates

NO_EXECUTE = "NoExecute"
NO_SCHEDULE = "NoSchedule"
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"

Taint = dict[str, Any]
Toleration = dict[str, Any]


def matching_tolerations(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> tuple[bool, list[Toleration]]:
    """(every taint tolerated?, the tolerations that tolerate them) — ``GetMatchingTolerations``."""
    used: list[Toleration] = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def min_toleration_seconds(tolerations: Iterable[Toleration]) -> float | None:
    seconds = [max(int(t["tolerationSeconds"]), 0) for t in tolerations if t.get("tolerationSeconds") is not None]
    return float(min(seconds)) if seconds else None


def no_execute_taints(node: Object | None) -> list[Taint]:
    return [t for t in ((node or {}).get("spec") or {}).get("taints") or [] if t.get("effect") == NO_EXECUTE]


def same_taint(a: Taint, b: Taint) -> bool:
    """``Taint.MatchTaint``: key and effect identify a taint."""
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def has_taint(taints: Iterable[Taint], key: str, effect: str) -> bool:
    return any(t.get("key") == key and t.get("effect") == effect for t in taints)
