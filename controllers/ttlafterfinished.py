"""The TTL-after-finished controller (``pkg/controller/ttlafterfinished``): delete finished Jobs whose
``spec.ttlSecondsAfterFinished`` has run out.

A Job expires ``ttlSecondsAfterFinished`` after its Complete or Failed condition became True.  ``sync(key)``
reads the cached Job; before its time it re-queues the key for the moment it expires; after it, it re-reads the
Job from the apiserver (the TTL may just have been changed) and deletes it with foreground propagation and a
resourceVersion precondition, so its pods go first and a Job changed meanwhile is not deleted by mistake.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from apimachinery.errors import Conflict, NotFound
from apimachinery.meta import Object, parse_time
from controllers.job import is_finished
from controllers.support.base import Controller
from controllers.support.podutil import get_condition, meta, now_utc
from kubeclient import JOBS, Clientset, InformerFactory

log = logging.getLogger(__name__)


def expires_at(job: Object) -> datetime | None:
    """When a finished Job with a TTL may be deleted (None: no TTL, not finished, or being deleted)."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    if ttl is None or meta(job).get("deletionTimestamp") or not is_finished(job):
        return None
    finished: Any = next((c for t in ("Complete", "Failed") if (c := get_condition(job.get("status"), t))
                          and c.get("status") == "True"), None)
    if not finished or not finished.get("lastTransitionTime"):
        return None
    return parse_time(finished["lastTransitionTime"]) + timedelta(seconds=int(ttl))


class TTLAfterFinishedController(Controller):
    """See the module docstring."""

    name = "ttl-after-finished-controller"
    queue_name = "ttl_jobs_to_delete"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5) -> None:
        super().__init__(workers=workers)
        self.jobs = clientset.resource(JOBS)
        self.job_informer = factory.informer(JOBS)
        self.informers = [self.job_informer]
        self.job_informer.add_event_handler(self._changed, lambda old, new: self._changed(new), None)

    def _changed(self, job: Object) -> None:
        if expires_at(job) is not None:
            self.enqueue(job)

    async def sync(self, key: str) -> None:
        job = self.job_informer.indexer.get_by_key(key)
        if job is None or self._requeued(key, job):
            return
        m = meta(job)
        try:
            fresh = await self.jobs.get(m["name"], m.get("namespace"))
            if self._requeued(key, fresh):
                return
            await self.jobs.delete(m["name"], m.get("namespace"), propagation_policy="Foreground",
                                   preconditions={"resourceVersion": meta(fresh)["resourceVersion"]})
            log.info("deleted finished job %s after its TTL", key)
        except NotFound:
            return
        except Conflict:
            self.queue.add(key)  # changed meanwhile: decide again from the new version

    def _requeued(self, key: str, job: Object) -> bool:
        """True when ``job`` is not (yet) to be deleted; re-queued for its expiry when it has one."""
        expiry = expires_at(job)
        if expiry is None:
            return True
        left = (expiry - now_utc()).total_seconds()
        if left > 0:
            self.queue.add_after(key, left)
            return True
        return False
