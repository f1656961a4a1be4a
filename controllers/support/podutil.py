"""Pod facts every workload controller agrees on (Kubernetes' ``podutil`` and ``controller_utils``).

* ``is_pod_active``: counts toward replicas — not Succeeded/Failed and not being deleted.
* ``is_pod_ready`` / ``is_pod_available``: the Ready condition is True (for ``minReadySeconds``).
* ``deletion_order``: the order in which surplus pods go when scaling down (``ActivePodsWithRanks``):
  unscheduled before scheduled, Pending before Unknown before Running, not ready before ready, pods doubled
  up on a node with their siblings first, ready for less time first, more restarts first, newer first.  Ready
  and creation times compare on a logarithmic scale (``LogarithmicScaleDown``), so pods of similar age are
  treated alike rather than strictly by the second.
* ``pod_from_template``: the pod a controller creates — template labels, annotations, finalizers and spec,
  ``generateName`` ``<owner>-`` and a controller ``ownerReference``.
"""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from apimachinery.meta import Object, parse_time

POD_PENDING = "Pending"
POD_RUNNING = "Running"
POD_SUCCEEDED = "Succeeded"
POD_FAILED = "Failed"
POD_UNKNOWN = "Unknown"
TERMINAL_PHASES = (POD_SUCCEEDED, POD_FAILED)
_PHASE_RANK = {POD_PENDING: 0, POD_UNKNOWN: 1, POD_RUNNING: 2}
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # rand.SafeEncodeString's: no vowels, no look-alikes


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = obj.get("metadata") or {}
    return metadata


def now_utc() -> datetime:
    return datetime.now(UTC)


def fmt_time(dt: datetime) -> str:
    """``metav1.Time`` (whole seconds, UTC)."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_pod_terminal(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def is_pod_active(pod: Object) -> bool:
    """Counts toward a controller's replicas: not finished and not being deleted (``FilterActivePods``)."""
    return not is_pod_terminal(pod) and not meta(pod).get("deletionTimestamp")


def get_condition(status: Mapping[str, Any] | None, condition_type: str) -> dict[str, Any] | None:
    for condition in (status or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return condition  # type: ignore[no-any-return]
    return None


def is_pod_ready(pod: Object) -> bool:
    condition = get_condition(pod.get("status"), "Ready")
    return condition is not None and condition.get("status") == "True"


def ready_since(pod: Object) -> datetime | None:
    """When the pod's Ready condition last became True (None if not ready or unknown)."""
    condition = get_condition(pod.get("status"), "Ready")
    if condition is None or condition.get("status") != "True" or not condition.get("lastTransitionTime"):
        return None
    return parse_time(condition["lastTransitionTime"])


def is_pod_available(pod: Object, min_ready_seconds: int, now: datetime) -> bool:
    """Ready, and (with ``minReadySeconds``) ready for at least that long (``IsPodAvailable``)."""
    return ready_and_available(pod, min_ready_seconds, now)[1]


def ready_and_available(pod: Object, min_ready_seconds: int, now: datetime) -> tuple[bool, bool]:
    """``(is_pod_ready, is_pod_available)`` from one look at the Ready condition, for counting both over many pods."""
    condition = get_condition(pod.get("status"), "Ready")
    if condition is None or condition.get("status") != "True":
        return False, False
    if min_ready_seconds <= 0:
        return True, True
    since = condition.get("lastTransitionTime")
    if not since:
        return True, False
    return True, (now - parse_time(since)).total_seconds() >= min_ready_seconds


def available_after(pod: Object, min_ready_seconds: int, now: datetime) -> float | None:
    """Seconds until a ready pod becomes available (None if not ready or already available)."""
    since = ready_since(pod)
    if since is None or min_ready_seconds <= 0:
        return None
    left = min_ready_seconds - (now - since).total_seconds()
    return left if left > 0 else None


def max_restarts(pod: Object) -> int:
    return max((int(c.get("restartCount") or 0) for c in (pod.get("status") or {}).get("containerStatuses") or []),
               default=0)


def _log_bucket(then: datetime | None, now: datetime) -> int:
    """``floor(log2(age))``: equal for timestamps of the same order of magnitude of age."""
    if then is None:
        return -1
    age = (now - then).total_seconds()
    return int(math.floor(math.log2(age))) if age >= 1 else 0


def related_pod_ranks(pods: Sequence[Object], related: Iterable[Object]) -> list[int]:
    """For each pod, how many related active pods share its node (``getPodsRankedByRelatedPodsOnSameNode``)."""
    per_node = Counter((p.get("spec") or {}).get("nodeName") or "" for p in related if is_pod_active(p))
    return [per_node[(p.get("spec") or {}).get("nodeName") or ""] for p in pods]


def deletion_order(pods: Sequence[Object], ranks: Sequence[int] | None = None,
                   now: datetime | None = None) -> list[Object]:
    """``pods`` sorted so the ones to delete first come first (see the module docstring)."""
    now = now or now_utc()
    ranks = ranks if ranks is not None else [0] * len(pods)

    def sort_key(item: tuple[Object, int]) -> tuple[Any, ...]:
        pod, rank = item
        ready = is_pod_ready(pod)
        created = meta(pod).get("creationTimestamp")
        return (
            1 if (pod.get("spec") or {}).get("nodeName") else 0,
            _PHASE_RANK.get((pod.get("status") or {}).get("phase") or POD_PENDING, 0),
            1 if ready else 0,
            -rank,
            _log_bucket(ready_since(pod), now) if ready else 0,
            -max_restarts(pod),
            _log_bucket(parse_time(created), now) if created else 0,
        )

    return [pod for pod, _ in sorted(zip(pods, ranks, strict=False), key=sort_key)]


def controller_ref(owner: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """The ownerReference a controller puts on what it creates: ``controller`` and ``blockOwnerDeletion``."""
    m = meta(owner)
    return {"apiVersion": api_version, "kind": kind, "name": m["name"], "uid": m["uid"],
            "controller": True, "blockOwnerDeletion": True}


def pod_from_template(template: Mapping[str, Any], owner: Object, ref: Mapping[str, Any]) -> Object:
    """The pod ``owner`` creates from ``template`` (``GetPodFromTemplate``): ``generateName`` ``<owner>-``."""
    template_meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {
        "generateName": f"{meta(owner)['name']}-",
        "namespace": meta(owner).get("namespace"),
        "ownerReferences": [dict(ref)],
    }
    for field in ("labels", "annotations", "finalizers"):
        if template_meta.get(field):
            metadata[field] = copy.deepcopy(template_meta[field])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": copy.deepcopy(template.get("spec") or {})}


def compute_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """A pod template's hash (``controller.ComputeHash``: FNV-32a of the template and collision count, in the safe
    alphabet): a Deployment's ``pod-template-hash``, a DaemonSet's or StatefulSet's revision name."""
    h = 0x811C9DC5
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(8, "little")
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[b % len(_SAFE_ALPHABET)] for b in str(h).encode())
