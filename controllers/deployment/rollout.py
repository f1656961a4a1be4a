"""Rolling and recreate rollouts, and the status they report (``deployment/rolling.go``, ``recreate.go``,
``progress.go``): functions of the ``DeploymentController`` they act through, split out for size.

A rolling update alternates two moves until the new ReplicaSet holds every replica:

* scale the new ReplicaSet up, never beyond ``replicas + maxSurge`` pods in total;
* scale old ReplicaSets down — first their unavailable pods (they serve nobody), then available ones —
  never below ``replicas - maxUnavailable`` available pods, counting the new ReplicaSet's unavailable
  pods against the budget.

Recreate scales every old ReplicaSet to zero, waits until none of their pods is running, then scales the
new one up.  Each move is one API write; the next sync (triggered by the ReplicaSets' status changes)
makes the next move, so a rollout survives restarts of the controller.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from apimachinery.meta import Object, parse_time
from controllers.deployment import util
from controllers.support.podutil import POD_FAILED, POD_SUCCEEDED, get_condition, meta, now_utc

if TYPE_CHECKING:
    from controllers.deployment.controller import DeploymentController


async def rollout_rolling(c: DeploymentController, d: Object, rss: list[Object]) -> None:
    new_rs, old_rss = await c.get_all_replica_sets_and_sync_revision(d, rss, create=True)
    all_rss = [*old_rss, new_rs]
    if await reconcile_new_replica_set(c, all_rss, new_rs, d):
        return await sync_rollout_status(c, all_rss, new_rs, d)
    if await reconcile_old_replica_sets(c, all_rss, util.active(old_rss), new_rs, d):
        return await sync_rollout_status(c, all_rss, new_rs, d)
    if util.deployment_complete(d, d.get("status") or {}):
        await cleanup_deployment(c, old_rss, d)
    await sync_rollout_status(c, all_rss, new_rs, d)

async def reconcile_new_replica_set(c: DeploymentController, all_rss: list[Any], new_rs: Object | None,
                                    d: Object) -> bool:
    if new_rs is None or util.spec_replicas(new_rs) == util.spec_replicas(d):
        return False
    if util.spec_replicas(new_rs) > util.spec_replicas(d):
        return await c.scale_replica_set(new_rs, util.spec_replicas(d), d)
    return await c.scale_replica_set(new_rs, util.new_rs_new_replicas(d, all_rss, new_rs), d)

async def reconcile_old_replica_sets(c: DeploymentController, all_rss: list[Any], old_rss: list[Object],
                                     new_rs: Object | None, d: Object) -> bool:
    if util.total_spec(old_rss) == 0:
        return False
    min_available = util.spec_replicas(d) - util.max_unavailable(d)
    new_unavailable = util.spec_replicas(new_rs) - util.status_count(new_rs, "availableReplicas")
    max_scaled_down = util.total_spec(all_rss) - min_available - new_unavailable
    if max_scaled_down <= 0:
        return False
    cleaned = await _cleanup_unhealthy_replicas(c, old_rss, d, max_scaled_down)
    scaled = await _scale_down_old_for_rolling_update(c, [*old_rss, new_rs], old_rss, d)
    return cleaned + scaled > 0

async def _cleanup_unhealthy_replicas(c: DeploymentController, old_rss: list[Object], d: Object,
                                      max_cleanup: int) -> int:
    """Scale old ReplicaSets down by their unavailable pods first: removing them costs no availability."""
    total = 0
    for rs in util.by_creation(old_rss):
        if total >= max_cleanup:
            break
        replicas, available = util.spec_replicas(rs), util.status_count(rs, "availableReplicas")
        if replicas == 0 or available >= replicas:  # (a status not yet caught up with a scale-down)
            continue
        count = min(max_cleanup - total, replicas - available)
        await c.scale_replica_set(rs, replicas - count, d)
        total += count
    return total

async def _scale_down_old_for_rolling_update(c: DeploymentController, all_rss: list[Any],
                                             old_rss: list[Object], d: Object) -> int:
    min_available = util.spec_replicas(d) - util.max_unavailable(d)
    available = util.total_available_after_scaling(all_rss)
    if available <= min_available:
        return 0
    budget, total = available - min_available, 0
    for rs in util.by_creation(old_rss):
        if total >= budget:
            break
        if util.spec_replicas(rs) == 0:
            continue
        count = min(util.spec_replicas(rs), budget - total)
        await c.scale_replica_set(rs, util.spec_replicas(rs) - count, d)
        total += count
    return total

async def rollout_recreate(c: DeploymentController, d: Object, rss: list[Object],
                           pods_by_rs: dict[str, list[Object]]) -> None:
    new_rs, old_rss = await c.get_all_replica_sets_and_sync_revision(d, rss, create=False)
    all_rss: list[Any] = [*old_rss, new_rs]
    scaled = False
    for rs in util.active(old_rss):
        scaled = await c.scale_replica_set(rs, 0, d) or scaled
    if scaled:
        return await sync_rollout_status(c, all_rss, new_rs, d)
    if _old_pods_running(new_rs, old_rss, pods_by_rs):
        return await sync_rollout_status(c, all_rss, new_rs, d)
    if new_rs is None:
        new_rs, old_rss = await c.get_all_replica_sets_and_sync_revision(d, rss, create=True)
        all_rss = [*old_rss, new_rs]
    if new_rs is not None and util.spec_replicas(new_rs) != util.spec_replicas(d):
        await c.scale_replica_set(new_rs, util.spec_replicas(d), d)
    if util.deployment_complete(d, d.get("status") or {}):
        await cleanup_deployment(c, old_rss, d)
    await sync_rollout_status(c, all_rss, new_rs, d)

async def cleanup_deployment(c: DeploymentController, old_rss: list[Object], d: Object) -> None:
    """Delete the oldest unused ReplicaSets beyond ``revisionHistoryLimit``."""
    limit = (d.get("spec") or {}).get("revisionHistoryLimit")
    if limit is None:
        return
    cleanable = [rs for rs in old_rss if not meta(rs).get("deletionTimestamp")]
    diff = len(cleanable) - int(limit)
    if diff <= 0:
        return
    for rs in sorted(cleanable, key=lambda r: (util.revision(r), meta(r).get("creationTimestamp") or ""))[:diff]:
        if util.status_count(rs, "replicas") or util.spec_replicas(rs) or \
                int(meta(rs).get("generation") or 0) > util.status_count(rs, "observedGeneration"):
            continue
        await c.delete_replica_set(rs)

async def sync_rollout_status(c: DeploymentController, all_rss: list[Any], new_rs: Object | None,
                              d: Object) -> None:
    """Write the status with the Progressing condition a user (and ``kubectl rollout status``) reads."""
    now = now_utc()
    status = util.calculate_status(all_rss, new_rs, d, now)
    if not util.has_progress_deadline(d):
        util.remove_condition(status, util.PROGRESSING)
    current = get_condition(d.get("status"), util.PROGRESSING)
    complete = status.get("replicas") == status.get("updatedReplicas") and current is not None and \
        current.get("reason") == util.NEW_RS_AVAILABLE
    name = meta(new_rs)["name"] if new_rs is not None else ""
    if util.has_progress_deadline(d) and not complete:
        if util.deployment_complete(d, status):
            util.set_condition(status, util.new_condition(
                util.PROGRESSING, "True", util.NEW_RS_AVAILABLE,
                f'ReplicaSet "{name}" has successfully progressed.', now))
        elif util.deployment_progressing(d, status):
            condition = util.new_condition(util.PROGRESSING, "True", util.RS_UPDATED,
                                           f'ReplicaSet "{name}" is progressing.', now)
            if current is not None and current.get("status") == "True":
                condition["lastTransitionTime"] = current.get("lastTransitionTime")
            util.remove_condition(status, util.PROGRESSING)
            util.set_condition(status, condition)
        elif util.deployment_timed_out(d, status, now):
            util.set_condition(status, util.new_condition(
                util.PROGRESSING, "False", util.TIMED_OUT, f'ReplicaSet "{name}" has timed out progressing.', now))
    failure = _replica_failure(all_rss, new_rs)
    if failure is not None:
        util.set_condition(status, failure)
    else:
        util.remove_condition(status, util.REPLICA_FAILURE)
    if util.compact(d.get("status") or {}) == util.compact(status):
        requeue_stuck(c, d, status, now)
        return
    await c.update_status(d, status)

def requeue_stuck(c: DeploymentController, d: Object, status: dict[str, Any], now: datetime) -> None:
    """Come back when the progress deadline would pass, to report ProgressDeadlineExceeded in time."""
    current = get_condition(status, util.PROGRESSING)
    if current is None or current.get("reason") in (util.NEW_RS_AVAILABLE, util.TIMED_OUT):
        return
    if util.deployment_complete(d, status) or not current.get("lastUpdateTime"):
        return
    deadline = int((d.get("spec") or {}).get("progressDeadlineSeconds") or 0)
    left = deadline - (now - parse_time(current["lastUpdateTime"])).total_seconds()
    c.queue.add_after(f"{meta(d)['namespace']}/{meta(d)['name']}", max(left, 0) + 1)


def _replica_failure(all_rss: list[Any], new_rs: Object | None) -> dict[str, Any] | None:
    """A ReplicaSet's ReplicaFailure condition, surfaced on the Deployment (new ReplicaSet first)."""
    for rs in ([new_rs] if new_rs is not None else []) + [r for r in all_rss if r is not None and r is not new_rs]:
        condition = get_condition(rs.get("status"), util.REPLICA_FAILURE)
        if condition is not None:
            return {"type": util.REPLICA_FAILURE, "status": condition.get("status"),
                    "lastUpdateTime": condition.get("lastTransitionTime"),
                    "lastTransitionTime": condition.get("lastTransitionTime"),
                    "reason": condition.get("reason"), "message": condition.get("message")}
    return None


def _old_pods_running(new_rs: Object | None, old_rss: list[Object], pods_by_rs: dict[str, list[Object]]) -> bool:
    """Any pod of an old ReplicaSet not yet finished (Recreate waits for all of them)."""
    if util.total_status(old_rss, "replicas") > 0:
        return True
    new_uid = meta(new_rs).get("uid") if new_rs is not None else None
    for uid, pods in pods_by_rs.items():
        if uid == new_uid:
            continue
        if any((p.get("status") or {}).get("phase") not in (POD_FAILED, POD_SUCCEEDED) for p in pods):
            return True
    return False
