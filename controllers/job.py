"""The Job controller (``pkg/controller/job``): run a Job's pods until enough succeed, or give up.

One ``sync(key)``, idempotent, from the informer caches:

1. Claim the Job's pods (finished ones too: they are what it counts).  Every pod it creates carries the
   ``batch.kubernetes.io/job-tracking`` finalizer, so a finished pod cannot vanish before it is counted.  A
   finished pod is counted in three steps, as kube does, so a crash between them neither loses nor doubles
   it: its uid goes into ``status.uncountedTerminatedPods`` (written), its finalizer is removed, and then the
   uid moves from there into ``succeeded``/``failed`` (written).
2. Decide: ``failed > backoffLimit`` (or, with ``restartPolicy: OnFailure``, that many container restarts) →
   ``FailureTarget`` BackoffLimitExceeded; ``startTime + activeDeadlineSeconds`` passed → ``FailureTarget``
   DeadlineExceeded; enough successes (``completions``, every index for Indexed Jobs, or any success once
   nothing runs for a work-queue Job) → ``SuccessCriteriaMet``.  With either, the remaining pods are deleted and,
   once none is left and all are counted, ``Failed``/``Complete`` follow with the same reason (kube 1.31+).
3. Otherwise, when the expectations are met: delete surplus pods, or create pods up to ``parallelism`` (never
   more than the completions left) in slow-start batches — after a pod failure only once the pod failure
   backoff (``backoff_base`` doubling per failure since the last success, at most ``backoff_cap``) has passed.
4. Write the status (active, ready, terminating, counts, startTime, completionTime, conditions) only when it
   changed.

Pods whose Job is gone (``kubectl delete job`` lets the garbage collector delete them) or finished keep no
finalizer: a pod event for such a pod queues ``pod:<namespace>/<name>``, whose sync removes it.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from apimachinery.errors import NotFound, StatusError
from apimachinery.labels import Selector, selector_from_label_selector
from apimachinery.meta import Object, parse_time
from controllers.support.base import Controller, key_of, unwrap
from controllers.support.controllerref import ControllerRefManager
from controllers.support.expectations import Expectations
from controllers.support.podcontrol import PodControl, slow_start_batch
from controllers.support.podutil import (
    POD_FAILED,
    POD_SUCCEEDED,
    controller_ref,
    deletion_order,
    fmt_time,
    get_condition,
    is_pod_active,
    is_pod_ready,
    is_pod_terminal,
    meta,
    now_utc,
    pod_from_template,
)
from kubeclient import JOBS, PODS, Clientset, EventRecorder, InformerFactory

log = logging.getLogger(__name__)

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
ORPHAN_POD_PREFIX = "pod:"
DEFAULT_BACKOFF_BASE = 10.0
DEFAULT_BACKOFF_CAP = 360.0
BURST = 500

BACKOFF_LIMIT_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")


# --- pure helpers ------------------------------------------------------------------------------------------------

def has_condition(job: Mapping[str, Any], condition_type: str) -> bool:
    condition = get_condition(job.get("status"), condition_type)
    return condition is not None and condition.get("status") == "True"


def is_finished(job: Mapping[str, Any]) -> bool:
    """Complete or Failed: nothing more happens to the Job."""
    return has_condition(job, "Complete") or has_condition(job, "Failed")


def is_pod_failed(pod: Object) -> bool:
    """A tracked pod counts as failed when its phase is Failed, or when it is deleted before it succeeded."""
    phase = (pod.get("status") or {}).get("phase")
    return phase == POD_FAILED or (bool(meta(pod).get("deletionTimestamp")) and phase != POD_SUCCEEDED)


def pod_index(pod: Object) -> int | None:
    value = (meta(pod).get("annotations") or {}).get(COMPLETION_INDEX)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def parse_indexes(text: str | None) -> set[int]:
    """``1,3-5,7`` → {1, 3, 4, 5, 7} (``status.completedIndexes``)."""
    out: set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


def format_indexes(indexes: set[int]) -> str:
    """The inverse of ``parse_indexes``: runs of three or more as ``first-last``."""
    parts: list[str] = []
    ordered = sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ordered[i]}-{ordered[j]}")
        else:
            parts.extend(str(n) for n in ordered[i:j + 1])
        i = j + 1
    return ",".join(parts)


def backoff_delay(failures: int, base: float, cap: float) -> float:
    """The wait before the next pod after ``failures`` failures since the last success: base, 2×base … cap."""
    if failures <= 0:
        return 0.0
    return float(min(base * 2 ** min(failures - 1, 30), cap))


def wanted_active(spec: Mapping[str, Any], succeeded: int, completed: set[int]) -> int:
    """How many pods should run now (``parallelism``, never more than the completions left)."""
    parallelism = int(spec.get("parallelism") or 0)
    completions = spec.get("completions")
    if completions is None:
        return 0 if succeeded > 0 else parallelism
    if spec.get("completionMode") == "Indexed":
        return min(parallelism, int(completions) - len(completed))
    return max(0, min(parallelism, int(completions) - succeeded))


def success_reached(spec: Mapping[str, Any], succeeded: int, completed: set[int], active: int) -> bool:
    completions = spec.get("completions")
    if completions is None:
        return succeeded > 0 and active == 0
    if spec.get("completionMode") == "Indexed":
        return len(completed) >= int(completions)
    return succeeded >= int(completions)


def past_backoff_limit(job: Mapping[str, Any], failed: int, pods: list[Object]) -> bool:
    """``failed > backoffLimit``; with OnFailure, container restarts of the running pods count too."""
    spec = job.get("spec") or {}
    limit = int(spec.get("backoffLimit", 6) or 0)
    if failed > limit:
        return True
    if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
        return False
    restarts = sum(int(s.get("restartCount") or 0) for p in pods if is_pod_active(p)
                   for s in [*((p.get("status") or {}).get("initContainerStatuses") or []),
                             *((p.get("status") or {}).get("containerStatuses") or [])])
    return restarts > 0 if limit == 0 else restarts >= limit


def deadline_left(job: Mapping[str, Any], now: datetime) -> float | None:
    """Seconds until ``activeDeadlineSeconds`` runs out (≤ 0: it has), None without a deadline or start."""
    deadline = (job.get("spec") or {}).get("activeDeadlineSeconds")
    start = (job.get("status") or {}).get("startTime")
    if deadline is None or not start:
        return None
    return (parse_time(start) + timedelta(seconds=int(deadline)) - now).total_seconds()


def new_condition(condition_type: str, reason: str, message: str, now: datetime) -> dict[str, Any]:
    stamp = fmt_time(now)
    return {"type": condition_type, "status": "True", "lastProbeTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def set_condition(status: dict[str, Any], condition: dict[str, Any]) -> None:
    """Add ``condition``, or replace one of its type whose status or reason differs."""
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
    old = get_condition(status, condition["type"])
    if old is not None and old.get("status") == condition["status"] and old.get("reason") == condition["reason"]:
        return
    status["conditions"] = [*conditions, condition] if old is None else \
        [condition if c.get("type") == condition["type"] else c for c in status.get("conditions") or []]


def job_pod(job: Object, api_version: str, index: int | None) -> Object:
    """A pod of ``job``: its template, the tracking finalizer and, for Indexed Jobs, its completion index."""
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    template_meta = template.setdefault("metadata", {})
    template_meta["finalizers"] = [*(template_meta.get("finalizers") or []), TRACKING_FINALIZER]
    pod = pod_from_template(template, job, controller_ref(job, api_version, "Job"))
    if index is not None:
        name = meta(job)["name"]
        pod["metadata"]["generateName"] = f"{name}-{index}-"
        pod["metadata"].setdefault("annotations", {})[COMPLETION_INDEX] = str(index)
        pod["metadata"].setdefault("labels", {})[COMPLETION_INDEX] = str(index)
        pod["spec"]["hostname"] = f"{name}-{index}"
        env = {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}}}
        for container in [*(pod["spec"].get("initContainers") or []), *(pod["spec"].get("containers") or [])]:
            if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in container.get("env") or []):
                container["env"] = [*(container.get("env") or []), env]
    return pod


@dataclass
class _Backoff:
    """Pod failures since the Job's last success and when the last one was counted."""

    failures: int = 0
    last: datetime | None = None


# --- the controller ----------------------------------------------------------------------------------------------

class JobController(Controller):
    """See the module docstring."""

    name = "job-controller"
    queue_name = "job"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5,
                 backoff_base: float = DEFAULT_BACKOFF_BASE, backoff_cap: float = DEFAULT_BACKOFF_CAP) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.jobs = clientset.resource(JOBS)
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.expectations = Expectations()
        self.backoffs: dict[str, _Backoff] = {}
        self.recorder = EventRecorder(clientset.events, self.name)
        self.pod_control = PodControl(clientset, self.recorder)
        self.job_informer = factory.informer(JOBS)
        self.pod_informer = factory.informer(PODS)
        self.informers = [self.job_informer, self.pod_informer]
        self.job_informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new), self._delete_job)
        self.pod_informer.add_event_handler(self._add_pod, self._update_pod, self._delete_pod)

    # --- handlers ------------------------------------------------------------------------------------------
    def _delete_job(self, obj: Any) -> None:
        key = key_of(obj)
        self.expectations.delete(key)
        self.queue.add(key)

    def _job_of(self, pod: Object) -> Object | None:
        ref = next((r for r in meta(pod).get("ownerReferences") or [] if r.get("controller")), None)
        if ref is None or ref.get("kind") != "Job":
            return None
        job = self.job_informer.indexer.get_by_key(f"{meta(pod).get('namespace')}/{ref.get('name')}")
        return job if job is not None and meta(job).get("uid") == ref.get("uid") else None

    def _add_pod(self, pod: Object) -> None:
        """A new pod of a Job is one of its expected creations (kube's ``addPod``), unless it is being deleted."""
        self._pod_seen(pod, created=True)

    def _update_pod(self, old: Object, pod: Object) -> None:
        """An update is no creation: counting it as one let a Job's first pod, bound before its second pod was seen,
        satisfy the expectations of both, and the next sync created a third (deleted again, so counted failed)."""
        self._pod_seen(pod, created=False)

    def _pod_seen(self, pod: Object, *, created: bool) -> None:
        job = self._job_of(pod)
        if job is None:
            self._orphan(pod)
            return
        key = key_of(job)
        if meta(pod).get("deletionTimestamp"):
            self.expectations.deletion_observed(key, key_of(pod))
        elif created:
            self.expectations.creation_observed(key)
        self.queue.add(key)

    def _delete_pod(self, obj: Any) -> None:
        pod = unwrap(obj)
        job = self._job_of(pod)
        if job is not None:
            self.expectations.deletion_observed(key_of(job), key_of(pod))
            self.queue.add(key_of(job))

    def _orphan(self, pod: Object) -> None:
        if TRACKING_FINALIZER in (meta(pod).get("finalizers") or []):
            self.queue.add(ORPHAN_POD_PREFIX + key_of(pod))

    # --- sync ----------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        if key.startswith(ORPHAN_POD_PREFIX):
            await self._sync_orphan(key[len(ORPHAN_POD_PREFIX):])
            return
        job = self.job_informer.indexer.get_by_key(key)
        if job is None:
            self.expectations.delete(key)
            self.backoffs.pop(key, None)
            return
        namespace = meta(job).get("namespace") or ""
        candidates = self.pod_informer.indexer.by_index("namespace", namespace)
        if is_finished(job):
            await self._remove_finalizers([p for p in candidates if self._job_of(p) is job])
            return
        try:
            selector: Selector = selector_from_label_selector((job.get("spec") or {}).get("selector"))
        except StatusError:
            log.warning("job %s has an invalid selector; not syncing", key)
            return
        satisfied = self.expectations.satisfied(key)
        pods = await self._claim(job, selector, candidates)
        job = await self._count_finished(job, pods, key)
        await self._reconcile(job, pods, key, satisfied)

    async def _claim(self, job: Object, selector: Selector, pods: list[Object]) -> list[Object]:
        m = meta(job)
        manager = ControllerRefManager(self.clientset.pods, job, selector, controller_ref(job, JOBS.api_version, "Job"),
                                       lambda: self.jobs.get(m["name"], m.get("namespace")))
        return await manager.claim(pods)

    async def _count_finished(self, job: Object, pods: list[Object], key: str) -> Object:
        """Steps 1-3 of the module docstring's point 1; returns the Job as last written."""
        status = copy.deepcopy(job.get("status") or {})
        uncounted = status.get("uncountedTerminatedPods") or {}
        succeeded_uids, failed_uids = list(uncounted.get("succeeded") or []), list(uncounted.get("failed") or [])
        tracked = [p for p in pods if TRACKING_FINALIZER in (meta(p).get("finalizers") or [])]
        for pod in tracked:
            uid = meta(pod)["uid"]
            if uid in succeeded_uids or uid in failed_uids:
                continue
            if (pod.get("status") or {}).get("phase") == POD_SUCCEEDED:
                succeeded_uids.append(uid)
            elif is_pod_failed(pod):
                failed_uids.append(uid)
        if (succeeded_uids, failed_uids) != (list(uncounted.get("succeeded") or []),
                                             list(uncounted.get("failed") or [])):
            status["uncountedTerminatedPods"] = _uncounted(succeeded_uids, failed_uids)
            job = await self._write_status(job, status)
            status = copy.deepcopy(job.get("status") or {})
        pending = set(succeeded_uids) | set(failed_uids)
        released = await self._remove_finalizers([p for p in tracked if meta(p)["uid"] in pending])
        by_uid = {meta(p)["uid"]: p for p in pods}
        gone = {uid for uid in pending if uid not in by_uid} | released
        if not gone:
            return job
        new_succeeded = [u for u in succeeded_uids if u in gone]
        new_failed = [u for u in failed_uids if u in gone]
        status["succeeded"] = int(status.get("succeeded") or 0) + len(new_succeeded)
        status["failed"] = int(status.get("failed") or 0) + len(new_failed)
        if (job.get("spec") or {}).get("completionMode") == "Indexed":
            completed = parse_indexes(status.get("completedIndexes"))
            completed.update(i for u in new_succeeded if u in by_uid and (i := pod_index(by_uid[u])) is not None)
            status["completedIndexes"] = format_indexes(completed)
        status["uncountedTerminatedPods"] = _uncounted([u for u in succeeded_uids if u not in gone],
                                                       [u for u in failed_uids if u not in gone])
        backoff = self.backoffs.setdefault(key, _Backoff())
        if new_succeeded:
            backoff.failures = 0
        if new_failed:
            backoff.failures += len(new_failed)
            backoff.last = now_utc()
        return await self._write_status(job, status)

    async def _reconcile(self, job: Object, pods: list[Object], key: str, satisfied: bool) -> None:
        """Points 2-4 of the module docstring."""
        now = now_utc()
        spec, status = job.get("spec") or {}, copy.deepcopy(job.get("status") or {})
        active = [p for p in pods if is_pod_active(p)]
        terminating = [p for p in pods if not is_pod_terminal(p) and meta(p).get("deletionTimestamp")]
        succeeded, failed = int(status.get("succeeded") or 0), int(status.get("failed") or 0)
        completed = parse_indexes(status.get("completedIndexes"))
        uncounted = status.get("uncountedTerminatedPods") or {}
        if not status.get("startTime") and not spec.get("suspend"):
            status["startTime"] = fmt_time(now)
        left = deadline_left({**job, "status": status}, now)
        target = next((c for c in ("FailureTarget", "SuccessCriteriaMet") if has_condition(job, c)), None)
        if target is None:
            reason = BACKOFF_LIMIT_EXCEEDED if past_backoff_limit(job, failed, pods) else \
                DEADLINE_EXCEEDED if left is not None and left <= 0 else None
            if reason is not None:
                target = "FailureTarget"
                set_condition(status, new_condition(target, *reason, now))
            elif success_reached(spec, succeeded, completed, len(active)):
                target = "SuccessCriteriaMet"
                set_condition(status, new_condition(target, *COMPLETIONS_REACHED, now))
        if target is not None:
            await self._delete_pods(job, key, active)
            if not active and not terminating and not uncounted.get("succeeded") and not uncounted.get("failed"):
                self._finish(job, status, target, now)
            active = []
        elif spec.get("suspend"):
            await self._delete_pods(job, key, active)
            set_condition(status, new_condition("Suspended", "JobSuspended", "Job suspended", now))
            status.pop("startTime", None)
            active = []
        else:
            if has_condition(job, "Suspended"):
                set_condition(status, {**new_condition("Suspended", "JobResumed", "Job resumed", now),
                                       "status": "False"})
            if left is not None:
                self.queue.add_after(key, max(left, 0.0) + 0.1)
            if satisfied and not meta(job).get("deletionTimestamp"):
                active = await self._manage(job, key, active, succeeded, completed, now)
        status.update(active=len(active), ready=sum(1 for p in active if is_pod_ready(p)),
                      terminating=len(terminating))
        if is_finished({"status": status}):
            status.update(active=0, ready=0, terminating=0, uncountedTerminatedPods={})
        await self._write_status(job, status)

    def _finish(self, job: Object, status: dict[str, Any], target: str, now: datetime) -> None:
        reason = get_condition(status, target) or {}
        final = "Complete" if target == "SuccessCriteriaMet" else "Failed"
        set_condition(status, new_condition(final, reason.get("reason", ""), reason.get("message", ""), now))
        if final == "Complete":
            status["completionTime"] = fmt_time(now)
            self.recorder.event(job, "Normal", "Completed", "Job completed")
        else:
            self.recorder.event(job, "Warning", reason.get("reason", ""), reason.get("message", ""))

    async def _manage(self, job: Object, key: str, active: list[Object], succeeded: int, completed: set[int],
                      now: datetime) -> list[Object]:
        """Delete surplus pods or create missing ones (after the failure backoff); returns the active pods."""
        spec = job.get("spec") or {}
        want = wanted_active(spec, succeeded, completed)
        if len(active) > want:
            victims = deletion_order(active)[:len(active) - want]
            await self._delete_pods(job, key, victims)
            return [p for p in active if p not in victims]
        missing = min(want - len(active), BURST)
        if missing <= 0:
            return active
        backoff = self.backoffs.get(key)
        if backoff is not None and backoff.last is not None:
            wait = backoff_delay(backoff.failures, self.backoff_base, self.backoff_cap) - \
                (now - backoff.last).total_seconds()
            if wait > 0:
                self.queue.add_after(key, wait)
                return active
        indexes: list[int | None] = [None] * missing
        if spec.get("completionMode") == "Indexed":
            running = {pod_index(p) for p in active}
            free = [i for i in range(int(spec.get("completions") or 0)) if i not in completed and i not in running]
            indexes = list(free[:missing])
        await self._create_pods(job, key, indexes)
        return active

    async def _create_pods(self, job: Object, key: str, indexes: list[int | None]) -> None:
        self.expectations.expect_creations(key, len(indexes))
        queue = list(indexes)

        async def create() -> None:
            await self.pod_control.create(job, job_pod(job, JOBS.api_version, queue.pop(0)))

        successes, error = await slow_start_batch(len(indexes), 1, create)
        if len(indexes) - successes > 0:
            self.expectations.lower(key, adds=len(indexes) - successes)
        if error is not None:
            raise error

    async def _delete_pods(self, job: Object, key: str, pods: list[Object]) -> None:
        if not pods:
            return
        self.expectations.expect_deletions(key, [key_of(p) for p in pods])
        for pod in pods:
            try:
                deleted = await self.pod_control.delete(job, pod)
            except StatusError:
                self.expectations.deletion_observed(key, key_of(pod))
                raise
            if not deleted:
                self.expectations.deletion_observed(key, key_of(pod))

    async def _remove_finalizers(self, pods: list[Object]) -> set[str]:
        """Take the tracking finalizer off ``pods``; returns the uids now free of it (or gone)."""
        done: set[str] = set()
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}
        for pod in pods:
            m = meta(pod)
            if TRACKING_FINALIZER not in (m.get("finalizers") or []):
                continue
            with contextlib.suppress(NotFound):
                await self.clientset.pods.patch(m["name"], patch, "strategic", m.get("namespace"))
            done.add(m["uid"])
        return done

    async def _sync_orphan(self, pod_key: str) -> None:
        """A tracked pod whose Job is gone or finished loses its finalizer (``handleOrphanPod``)."""
        pod = self.pod_informer.indexer.get_by_key(pod_key)
        if pod is None or TRACKING_FINALIZER not in (meta(pod).get("finalizers") or []):
            return
        ref = next((r for r in meta(pod).get("ownerReferences") or [] if r.get("controller")), None)
        if ref is not None and ref.get("kind") == "Job":
            try:
                job = await self.jobs.get(ref["name"], meta(pod).get("namespace"))
                if meta(job).get("uid") == ref.get("uid") and not is_finished(job):
                    return
            except NotFound:
                pass
        await self._remove_finalizers([pod])

    async def _write_status(self, job: Object, status: dict[str, Any]) -> Object:
        """Write ``status`` unless ``job`` already has it; a conflict is retried by the worker loop."""
        if (job.get("status") or {}) == status:
            return job
        return await self.jobs.update_status({**job, "status": status})


def _uncounted(succeeded: list[str], failed: list[str]) -> dict[str, list[str]]:
    """``uncountedTerminatedPods`` as Go writes it: empty lists omitted."""
    out: dict[str, list[str]] = {}
    if succeeded:
        out["succeeded"] = succeeded
    if failed:
        out["failed"] = failed
    return out
