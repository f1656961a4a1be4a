"""Pure Deployment rules (Kubernetes' ``deployment/util``): revisions, hashes, surge maths, status, conditions.

Nothing here talks to the API; every function takes plain objects and returns values, so the rollout logic
in ``rollout.py`` reads like Kubernetes' and is unit-testable without a server.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from apimachinery.meta import Object, parse_time
from controllers.support.podutil import fmt_time, get_condition, meta

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
POD_TEMPLATE_HASH = "pod-template-hash"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
ANNOTATIONS_NOT_COPIED = frozenset({LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS,
                                    "deprecated.deployment.rollback.to"})
MAX_REVISION_HISTORY_CHARS = 2000

PROGRESSING = "Progressing"
AVAILABLE = "Available"
REPLICA_FAILURE = "ReplicaFailure"
# Reasons of the Progressing condition, as `kubectl rollout status` and `describe` know them.
RS_UPDATED = "ReplicaSetUpdated"
FAILED_RS_CREATE = "ReplicaSetCreateError"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"

_MAX_INT32 = 2**31 - 1


# --- small accessors ----------------------------------------------------------------------------------------
def spec_replicas(obj: Object | None) -> int:
    return int(((obj or {}).get("spec") or {}).get("replicas") or 0)


def status_count(obj: Object | None, field: str) -> int:
    return int(((obj or {}).get("status") or {}).get(field) or 0)


def annotations_of(obj: Object) -> dict[str, str]:
    return meta(obj).get("annotations") or {}


def revision(obj: Object) -> int:
    try:
        return int(annotations_of(obj).get(REVISION) or 0)
    except ValueError:
        return 0


def max_revision(rss: Iterable[Object]) -> int:
    return max((revision(rs) for rs in rss), default=0)


def by_creation(rss: Iterable[Object], newest_first: bool = False) -> list[Object]:
    """``ReplicaSetsByCreationTimestamp`` (name breaks ties)."""
    return sorted(rss, key=lambda r: (meta(r).get("creationTimestamp") or "", meta(r).get("name")),
                  reverse=newest_first)


def active(rss: Iterable[Object | None]) -> list[Object]:
    """``FilterActiveReplicaSets``: those asked to run pods."""
    return [rs for rs in rss if rs is not None and spec_replicas(rs) > 0]


def total_spec(rss: Iterable[Object | None]) -> int:
    return sum(spec_replicas(rs) for rs in rss if rs is not None)


def total_status(rss: Iterable[Object | None], field: str) -> int:
    return sum(status_count(rs, field) for rs in rss if rs is not None)


def total_available_after_scaling(rss: Iterable[Object | None]) -> int:
    """Available pods once each ReplicaSet has caught up with its ``spec.replicas``: a ReplicaSet just scaled down
    still reports the pods it is about to delete, and counting them would let the next sync scale old ReplicaSets
    down again, below ``replicas - maxUnavailable`` (its controller deletes unavailable pods first, so no more than
    ``spec.replicas`` of them stay available)."""
    return sum(min(status_count(rs, "availableReplicas"), spec_replicas(rs)) for rs in rss if rs is not None)


# --- template identity --------------------------------------------------------------------------------------
def _without_hash(template: Mapping[str, Any]) -> dict[str, Any]:
    t = copy.deepcopy(dict(template))
    labels = (t.get("metadata") or {}).get("labels")
    if labels is not None:
        labels.pop(POD_TEMPLATE_HASH, None)
    return t


def equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Same pod template apart from the ``pod-template-hash`` label (``EqualIgnoreHash``)."""
    return _without_hash(a) == _without_hash(b)


def find_new_replica_set(d: Object, rss: Sequence[Object]) -> Object | None:
    """The oldest ReplicaSet whose template is the Deployment's (``FindNewReplicaSet``)."""
    template = (d.get("spec") or {}).get("template") or {}
    for rs in by_creation(rss):
        if equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template):
            return rs
    return None


# --- surge and unavailability -------------------------------------------------------------------------------
def scaled_value(value: int | str | None, total: int, round_up: bool) -> int:
    """``GetScaledValueFromIntOrPercent``: an int as is, ``"25%"`` of ``total`` rounded up or down."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        return int(text)
    exact = int(text[:-1]) * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def is_rolling(d: Object) -> bool:
    return bool(((d.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate")


def resolve_fenceposts(d: Object) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as pod counts; never both zero (``ResolveFenceposts``)."""
    rolling = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    desired = spec_replicas(d)
    surge = scaled_value(rolling.get("maxSurge", "25%"), desired, True)
    unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: Object) -> int:
    return resolve_fenceposts(d)[0] if is_rolling(d) else 0


def max_unavailable(d: Object) -> int:
    if not is_rolling(d) or spec_replicas(d) == 0:
        return 0
    return min(resolve_fenceposts(d)[1], spec_replicas(d))


def new_rs_new_replicas(d: Object, all_rss: Sequence[Object | None], new_rs: Object) -> int:
    """How big the new ReplicaSet may be now (``NewRSNewReplicas``): surge-bounded when rolling."""
    if not is_rolling(d):
        return spec_replicas(d)
    current = total_spec(all_rss)
    max_total = spec_replicas(d) + max_surge(d)
    if current >= max_total:
        return spec_replicas(new_rs)
    scale_up = min(max_total - current, spec_replicas(d) - spec_replicas(new_rs))
    return spec_replicas(new_rs) + scale_up


def is_saturated(d: Object, rs: Object | None) -> bool:
    """The new ReplicaSet runs every desired pod, available (``IsSaturated``)."""
    if rs is None:
        return False
    desired = annotations_of(rs).get(DESIRED_REPLICAS)
    return (desired == str(spec_replicas(d)) and spec_replicas(rs) == spec_replicas(d)
            and status_count(rs, "availableReplicas") == spec_replicas(d))


# --- annotations --------------------------------------------------------------------------------------------
def replicas_annotations_need_update(rs: Object, desired: int, max_replicas: int) -> bool:
    a = annotations_of(rs)
    return a.get(DESIRED_REPLICAS) != str(desired) or a.get(MAX_REPLICAS) != str(max_replicas)


def set_replicas_annotations(rs: Object, desired: int, max_replicas: int) -> bool:
    if not replicas_annotations_need_update(rs, desired, max_replicas):
        return False
    a = meta(rs).setdefault("annotations", {})
    a[DESIRED_REPLICAS] = str(desired)
    a[MAX_REPLICAS] = str(max_replicas)
    return True


def set_new_rs_annotations(d: Object, rs: Object, new_revision: int, exists: bool) -> bool:
    """Copy the Deployment's annotations, advance the revision (keeping history on a rollback)."""
    rs_meta = meta(rs)
    a = rs_meta.setdefault("annotations", {})
    changed = False
    for key, value in annotations_of(d).items():
        if key not in ANNOTATIONS_NOT_COPIED and a.get(key) != value:
            a[key] = value
            changed = True
    had = REVISION in a
    old = revision(rs)
    if old < new_revision:
        a[REVISION] = str(new_revision)
        changed = True
        if had:
            history = [h for h in (a.get(REVISION_HISTORY) or "").split(",") if h] + [str(old)]
            text = ",".join(history)
            while len(text) > MAX_REVISION_HISTORY_CHARS and len(history) > 1:
                history.pop(0)
                text = ",".join(history)
            a[REVISION_HISTORY] = text
    if not exists and set_replicas_annotations(rs, spec_replicas(d), spec_replicas(d) + max_surge(d)):
        changed = True
    return changed


def proportion(rs: Object, d: Object, to_add: int, added: int) -> int:
    """The share of a proportional scale for ``rs`` (``GetProportion``)."""
    if spec_replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    if spec_replicas(d) == 0:
        fraction = -spec_replicas(rs)
    else:
        max_now = spec_replicas(d) + max_surge(d)
        try:
            before = int(annotations_of(rs).get(MAX_REPLICAS) or 0)
        except ValueError:
            before = 0
        if before == 0:
            before = status_count(d, "replicas")
        fraction = 0 if before == 0 else int(math.floor(spec_replicas(rs) * max_now / before + 0.5)) - spec_replicas(rs)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


# --- conditions and status ----------------------------------------------------------------------------------
def new_condition(kind: str, status: str, reason: str, message: str, now: datetime) -> dict[str, Any]:
    return {"type": kind, "status": status, "lastUpdateTime": fmt_time(now), "lastTransitionTime": fmt_time(now),
            "reason": reason, "message": message}


def set_condition(status: dict[str, Any], condition: dict[str, Any]) -> None:
    """``SetDeploymentCondition``: same status and reason → unchanged; same status keeps the transition time."""
    current = get_condition(status, condition["type"])
    if current is not None and current.get("status") == condition["status"] and \
            current.get("reason") == condition["reason"]:
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status, condition["type"])
    status.setdefault("conditions", []).append(condition)


def remove_condition(status: dict[str, Any], kind: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != kind]
    if not status["conditions"]:
        del status["conditions"]


def has_progress_deadline(d: Object) -> bool:
    deadline = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return deadline is not None and deadline != _MAX_INT32


def calculate_status(all_rss: Sequence[Object | None], new_rs: Object | None, d: Object,
                     now: datetime) -> dict[str, Any]:
    """The Deployment status its ReplicaSets imply (``calculateStatus``), Available condition included."""
    available = total_status(all_rss, "availableReplicas")
    status: dict[str, Any] = {
        "observedGeneration": int(meta(d).get("generation") or 0),
        "replicas": total_status(all_rss, "replicas"),
        "updatedReplicas": status_count(new_rs, "replicas"),
        "readyReplicas": total_status(all_rss, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": max(total_spec(all_rss) - available, 0),
    }
    old = d.get("status") or {}
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if old.get("conditions"):
        status["conditions"] = copy.deepcopy(old["conditions"])
    if available >= spec_replicas(d) - max_unavailable(d):
        set_condition(status, new_condition(AVAILABLE, "True", MIN_AVAILABLE, "Deployment has minimum availability.",
                                            now))
    else:
        set_condition(status, new_condition(AVAILABLE, "False", MIN_UNAVAILABLE,
                                            "Deployment does not have minimum availability.", now))
    return status


def compact(status: Mapping[str, Any]) -> dict[str, Any]:
    """The status as Go serialises it (zero counts omitted), for change detection."""
    return {k: v for k, v in status.items() if v not in (0, None, [], {})}


def deployment_complete(d: Object, status: Mapping[str, Any]) -> bool:
    replicas = spec_replicas(d)
    return bool(status.get("updatedReplicas", 0) == replicas and status.get("replicas", 0) == replicas
            and status.get("availableReplicas", 0) == replicas
            and status.get("observedGeneration", 0) >= int(meta(d).get("generation") or 0))


def deployment_progressing(d: Object, status: Mapping[str, Any]) -> bool:
    old = d.get("status") or {}
    old_old = old.get("replicas", 0) - old.get("updatedReplicas", 0)
    new_old = status.get("replicas", 0) - status.get("updatedReplicas", 0)
    return bool(status.get("updatedReplicas", 0) > old.get("updatedReplicas", 0) or new_old < old_old
            or status.get("readyReplicas", 0) > old.get("readyReplicas", 0)
            or status.get("availableReplicas", 0) > old.get("availableReplicas", 0))


def deployment_timed_out(d: Object, status: Mapping[str, Any], now: datetime) -> bool:
    if not has_progress_deadline(d):
        return False
    condition = get_condition(status, PROGRESSING)
    if condition is None or condition.get("reason") == NEW_RS_AVAILABLE:
        return False
    if condition.get("reason") == TIMED_OUT:
        return True
    last = condition.get("lastUpdateTime")
    deadline = int((d.get("spec") or {}).get("progressDeadlineSeconds") or 0)
    return last is not None and (now - parse_time(last)).total_seconds() > deadline
