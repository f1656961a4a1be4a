"""The CronJob controller (``pkg/controller/cronjob``, v2): create a Job at each scheduled time.

One ``sync(key)``, idempotent, from the CronJob and Job caches:

1. ``status.active`` is brought in line with the CronJob's Jobs: running ones are in it, finished ones leave it
   (``SawCompletedJob``; a Complete one moves ``lastSuccessfulTime``), Jobs that are gone are dropped.
2. Finished Jobs beyond ``successfulJobsHistoryLimit`` / ``failedJobsHistoryLimit`` are deleted, oldest first.
3. Unless suspended or being deleted: the most recent scheduled time since ``lastScheduleTime`` (or creation),
   in ``timeZone`` or the controller-manager's own, is due if it is within ``startingDeadlineSeconds``.
   ``Forbid`` skips it while a Job runs, ``Replace`` deletes the running ones first; the Job is
   ``<name>-<minutes since the epoch>`` (so a time is never run twice), owned by the CronJob, with the
   ``batch.kubernetes.io/cronjob-scheduled-timestamp`` annotation.  The key comes back at the next time.

``now`` is injectable so tests need not wait for the clock.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apimachinery import cron
from apimachinery.errors import AlreadyExists, NotFound
from apimachinery.meta import Object, parse_time
from controllers.job import has_condition, is_finished
from controllers.support.base import Controller, key_of, unwrap
from controllers.support.podutil import controller_ref, fmt_time, meta, now_utc
from kubeclient import CRON_JOBS, JOBS, Clientset, EventRecorder, InformerFactory

log = logging.getLogger(__name__)

SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
TOO_MANY_MISSED = 100


def job_ref(job: Object) -> dict[str, Any]:
    m = meta(job)
    return {"kind": "Job", "namespace": m.get("namespace"), "name": m["name"], "uid": m["uid"],
            "apiVersion": JOBS.api_version, "resourceVersion": m.get("resourceVersion")}


def scheduled_times(schedule: cron.Schedule, earliest: datetime, now: datetime,
                    zone: tzinfo) -> tuple[datetime | None, int, datetime | None]:
    """The most recent time ≤ ``now`` after ``earliest``, how many were missed, and the next time after ``now``."""
    last, missed = None, 0
    t = schedule.next_after(earliest, zone)
    while t is not None and t <= now:
        last, missed = t, missed + 1
        t = schedule.next_after(t, zone)
    return last, missed, t


def job_from_template(cj: Object, scheduled: datetime) -> Object:
    """``getJobFromTemplate2``: the template's labels, annotations and spec, named after the scheduled minute."""
    template = (cj.get("spec") or {}).get("jobTemplate") or {}
    template_meta = template.get("metadata") or {}
    m = meta(cj)
    annotations = {**(template_meta.get("annotations") or {}), SCHEDULED_TIMESTAMP: scheduled.isoformat()}
    metadata: dict[str, Any] = {"name": f"{m['name']}-{int(scheduled.timestamp()) // 60}",
                                "namespace": m.get("namespace"), "annotations": annotations,
                                "ownerReferences": [controller_ref(cj, CRON_JOBS.api_version, "CronJob")]}
    if template_meta.get("labels"):
        metadata["labels"] = dict(template_meta["labels"])
    return {"apiVersion": JOBS.api_version, "kind": "Job", "metadata": metadata,
            "spec": copy.deepcopy(template.get("spec") or {})}


def _started(job: Object) -> tuple[str, str]:
    """Oldest first (``byJobStartTime``): by start time, then by name."""
    return (job.get("status") or {}).get("startTime") or meta(job).get("creationTimestamp") or "", meta(job)["name"]


class CronJobController(Controller):
    """See the module docstring."""

    name = "cronjob-controller"
    queue_name = "cronjob"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5,
                 now: Callable[[], datetime] = now_utc, zone: tzinfo = UTC) -> None:
        super().__init__(workers=workers)
        self.cronjobs = clientset.resource(CRON_JOBS)
        self.jobs = clientset.resource(JOBS)
        self.now = now
        self.zone = zone
        self.recorder = EventRecorder(clientset.events, self.name)
        self.cj_informer = factory.informer(CRON_JOBS)
        self.job_informer = factory.informer(JOBS)
        self.informers = [self.cj_informer, self.job_informer]
        self.cj_informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new), None)
        self.job_informer.add_event_handler(self._job_changed, lambda old, new: self._job_changed(new),
                                            self._job_changed)

    def _job_changed(self, obj: Any) -> None:
        job = unwrap(obj)
        ref = next((r for r in meta(job).get("ownerReferences") or [] if r.get("controller")), None)
        if ref is not None and ref.get("kind") == "CronJob":
            self.queue.add(f"{meta(job).get('namespace')}/{ref.get('name')}")

    async def sync(self, key: str) -> None:
        cj = self.cj_informer.indexer.get_by_key(key)
        if cj is None:
            return
        uid = meta(cj)["uid"]
        jobs = [j for j in self.job_informer.indexer.by_index("namespace", meta(cj).get("namespace") or "")
                if any(r.get("controller") and r.get("uid") == uid for r in meta(j).get("ownerReferences") or [])]
        status = copy.deepcopy(cj.get("status") or {})
        await self._track_active(cj, jobs, status)
        await self._clean_history(cj, jobs)
        if not meta(cj).get("deletionTimestamp") and not (cj.get("spec") or {}).get("suspend"):
            await self._schedule(cj, key, status)
        if status != (cj.get("status") or {}):
            await self.cronjobs.update_status({**cj, "status": status})

    async def _track_active(self, cj: Object, jobs: list[Object], status: dict[str, Any]) -> None:
        by_uid = {meta(j)["uid"]: j for j in jobs}
        active: list[dict[str, Any]] = []
        for ref in status.get("active") or []:
            job = by_uid.get(ref.get("uid"))
            if job is None:
                try:  # maybe just created and not in the cache yet
                    job = await self.jobs.get(ref["name"], ref.get("namespace"))
                except NotFound:
                    continue
                if meta(job).get("uid") != ref.get("uid"):
                    continue
            if is_finished(job):
                self._saw_completed(cj, job, status)
            else:
                active.append(ref)
        known = {r.get("uid") for r in active}
        active.extend(job_ref(j) for j in jobs if not is_finished(j) and meta(j)["uid"] not in known)
        if active:
            status["active"] = active
        else:
            status.pop("active", None)

    def _saw_completed(self, cj: Object, job: Object, status: dict[str, Any]) -> None:
        condition = "Complete" if has_condition(job, "Complete") else "Failed"
        self.recorder.event(cj, "Normal", "SawCompletedJob",
                            f"Saw completed job: {meta(job)['name']}, condition: {condition}")
        done = (job.get("status") or {}).get("completionTime")
        if condition == "Complete" and done and (not status.get("lastSuccessfulTime") or
                                                 parse_time(done) > parse_time(status["lastSuccessfulTime"])):
            status["lastSuccessfulTime"] = done

    async def _clean_history(self, cj: Object, jobs: list[Object]) -> None:
        spec = cj.get("spec") or {}
        for condition, limit in (("Complete", spec.get("successfulJobsHistoryLimit")),
                                 ("Failed", spec.get("failedJobsHistoryLimit"))):
            if limit is None:
                continue
            finished = sorted((j for j in jobs if has_condition(j, condition)
                               and not meta(j).get("deletionTimestamp")), key=_started)
            for job in finished[:max(0, len(finished) - int(limit))]:
                await self._delete_job(cj, job)

    async def _delete_job(self, cj: Object, job: Object) -> None:
        m = meta(job)
        try:
            await self.jobs.delete(m["name"], m.get("namespace"), propagation_policy="Background")
        except NotFound:
            return
        self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {m['name']}")

    def _zone(self, cj: Object) -> tzinfo | None:
        name = (cj.get("spec") or {}).get("timeZone")
        if name is None:
            return self.zone
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            self.recorder.event(cj, "Warning", "UnknownTimeZone", f"invalid timeZone: {name!r}")
            return None

    async def _schedule(self, cj: Object, key: str, status: dict[str, Any]) -> None:
        spec = cj.get("spec") or {}
        zone = self._zone(cj)
        if zone is None:
            return
        try:
            schedule = cron.parse(spec.get("schedule") or "")
        except cron.CronError as err:
            self.recorder.event(cj, "Warning", "InvalidSchedule", f"invalid schedule: {spec.get('schedule')} : {err}")
            return
        now = self.now()
        earliest = parse_time(status.get("lastScheduleTime") or meta(cj)["creationTimestamp"])
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None:
            earliest = max(earliest, now - timedelta(seconds=int(deadline)))
        scheduled, missed, upcoming = scheduled_times(schedule, earliest, now, zone)
        if upcoming is not None:
            self.queue.add_after(key, (upcoming - now).total_seconds() + 0.1)
        if scheduled is None:
            return
        if missed > TOO_MANY_MISSED:
            self.recorder.event(cj, "Warning", "TooManyMissedTimes", f"too many missed start times: {missed}. Set or "
                                "decrease .spec.startingDeadlineSeconds or check clock skew")
        active = status.get("active") or []
        if spec.get("concurrencyPolicy") == "Forbid" and active:
            return
        if spec.get("concurrencyPolicy") == "Replace":
            for ref in active:
                job = self.job_informer.indexer.get_by_key(f"{ref.get('namespace')}/{ref.get('name')}")
                if job is not None:
                    await self._delete_job(cj, job)
            active = []
        try:
            job = await self.jobs.create(job_from_template(cj, scheduled), meta(cj).get("namespace"))
            self.recorder.event(cj, "Normal", "SuccessfulCreate", f"Created job {meta(job)['name']}")
        except AlreadyExists:
            job = await self.jobs.get(job_from_template(cj, scheduled)["metadata"]["name"], meta(cj).get("namespace"))
            if not any(r.get("uid") == meta(cj)["uid"] for r in meta(job).get("ownerReferences") or []):
                return
        refs = [*active, job_ref(job)] if meta(job)["uid"] not in {r.get("uid") for r in active} else active
        status["active"] = refs
        status["lastScheduleTime"] = fmt_time(scheduled)
        log.info("cronjob %s: created job %s for %s", key_of(cj), meta(job)["name"], scheduled.isoformat())
