"""The StatefulSet controller (``pkg/controller/statefulset``): pods with stable names and storage, started,
stopped and replaced in ordinal order.

One ``sync(key)``, idempotent, from the informer caches (``defaultStatefulSetControl.UpdateStatefulSet``):

1. Claim the pods whose name says they belong to the set (``controllerref``); find or make the update revision
   (the ControllerRevision of the current template, ``history``) and the current one (``status.currentRevision``,
   or the update revision for a new set).
2. Split the pods into ``replicas`` (ordinals ``start`` … ``start + replicas - 1``, a missing one built from the
   current revision below the partition, the update revision otherwise) and ``condemned`` (the ordinals beyond).
   Claims of condemned pods get the owners the retention policy asks for before anything is deleted.
3. For each replica in ordinal order (``processReplica``): a failed or succeeded pod is deleted and made anew; a
   missing one is created with its claims; a pending one gets its missing claims; a live one gets its identity and
   storage put right.  With ``OrderedReady`` the walk stops at the first pod just created, terminating, or not yet
   Running and available (``minReadySeconds``); with ``Parallel`` every replica is processed at once.
4. The condemned go from the highest ordinal down (``OrderedReady``: one at a time, and only while the rest are
   healthy; ``Parallel``: all at once).
5. ``RollingUpdate`` (not ``OnDelete``): from the highest ordinal down to the ``partition``, delete the first pod
   not at the update revision, one at a time, waiting for each replacement to be Running and Ready.
6. Status (``statefulutil.wire_status``) is written only when it changed; old revisions beyond
   ``revisionHistoryLimit`` go; with ``minReadySeconds`` the set is synced again when a pod becomes available.

Pod events enqueue the owning set (or, for an orphan, the sets that select it).  Any error is retried on the next
sync (the worker loop's backoff).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from apimachinery.labels import Selector
from apimachinery.meta import Object
from controllers.support import statefulutil as su
from controllers.support.base import Controller, unwrap
from controllers.support.controllerref import (
    ControllerRefManager,
    controller_uid,
    resolve_controller,
    selecting_owners,
    spec_selector,
)
from controllers.support.history import History, HistoryOwner
from controllers.support.podutil import controller_ref, meta, now_utc
from controllers.support.statefulpodcontrol import StatefulPodControl
from controllers.support.statuswrite import write_status
from kubeclient import (
    CONTROLLER_REVISIONS,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    STATEFUL_SETS,
    Clientset,
    EventRecorder,
    InformerFactory,
)

log = logging.getLogger(__name__)

COMPONENT = "statefulset-controller"


class StatefulSetController(Controller):
    """See the module docstring."""

    name = COMPONENT
    queue_name = "statefulset"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.recorder = EventRecorder(clientset.events, COMPONENT)
        self.set_informer = factory.informer(STATEFUL_SETS)
        self.pod_informer = factory.informer(PODS)
        self.revision_informer = factory.informer(CONTROLLER_REVISIONS)
        self.claim_informer = factory.informer(PERSISTENT_VOLUME_CLAIMS)
        self.informers = [self.set_informer, self.pod_informer, self.revision_informer, self.claim_informer]
        self.control = StatefulPodControl(clientset, self.recorder, self.claim_informer)
        self.history = History(clientset, HistoryOwner(STATEFUL_SETS, pods_carry_name=True))
        self.set_informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new), self.enqueue)
        self.pod_informer.add_event_handler(self._pod_changed, self._pod_updated, self._pod_changed)

    # --- handlers: compute keys and enqueue ------------------------------------------------------------------
    def _pod_changed(self, obj: Any) -> None:
        pod = unwrap(obj)
        sts = resolve_controller(self.set_informer.indexer, STATEFUL_SETS.kind, pod)
        if sts is not None:
            self.enqueue(sts)
        elif not controller_uid(pod):
            for candidate in selecting_owners(self.set_informer.indexer, pod):
                self.enqueue(candidate)

    def _pod_updated(self, old: Object, cur: Object) -> None:
        if meta(old).get("resourceVersion") == meta(cur).get("resourceVersion"):
            return
        self._pod_changed(cur)
        if controller_uid(old) != controller_uid(cur) or meta(old).get("labels") != meta(cur).get("labels"):
            self._pod_changed(old)

    # --- sync ------------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        sts = self.set_informer.indexer.get_by_key(key)
        if sts is None:
            return
        selector = spec_selector(sts)
        if selector is None or selector.empty():
            log.warning("StatefulSet %s has an invalid or empty selector; not syncing", key)
            return
        pods = await self._claim(sts, selector)
        revisions = [r for r in self.revision_informer.indexer.by_index("namespace", meta(sts).get("namespace") or "")
                     if controller_uid(r) == meta(sts).get("uid")]
        update = await self.history.current(sts, revisions)
        current = next((r for r in revisions if meta(r).get("name") == (sts.get("status") or {}).get(
            "currentRevision")), update)
        counts = await _Update(self, sts, current, update, pods).run()
        status = su.wire_status(sts, counts, meta(current)["name"], meta(update)["name"],
                                int((sts.get("status") or {}).get("collisionCount") or 0))
        await write_status(self.clientset.stateful_sets, sts, status)
        await self.history.clean_up(sts, revisions, [current, update], pods)
        min_ready = int(su.spec_of(sts).get("minReadySeconds") or 0)
        if min_ready > 0 and counts["availableReplicas"] < counts["readyReplicas"]:
            self.queue.add_after(key, min_ready)

    async def _claim(self, sts: Object, selector: Selector) -> list[Object]:
        m = meta(sts)
        manager = ControllerRefManager(
            self.clientset.pods, sts, selector, controller_ref(sts, STATEFUL_SETS.api_version, STATEFUL_SETS.kind),
            lambda: self.clientset.stateful_sets.get(m["name"], m.get("namespace")))
        candidates = [p for p in self.pod_informer.indexer.by_index("namespace", m.get("namespace") or "")
                      if su.is_member_of(sts, p)]
        return await manager.claim(candidates)


class _Update:
    """One pass of ``updateStatefulSet`` over one set's pods: returns the replica counts for its status."""

    def __init__(self, controller: StatefulSetController, sts: Object, current: Object, update: Object,
                 pods: Sequence[Object]) -> None:
        self.control = controller.control
        self.recorder = controller.recorder
        self.sts = sts
        self.current_set, self.update_set = su.apply_revision(sts, current), su.apply_revision(sts, update)
        self.current_name, self.update_name = meta(current)["name"], meta(update)["name"]
        self.ref = controller_ref(sts, STATEFUL_SETS.api_version, STATEFUL_SETS.kind)
        self.monotonic = su.spec_of(sts).get("podManagementPolicy") != "Parallel"
        self.min_ready = int(su.spec_of(sts).get("minReadySeconds") or 0)
        start, count = su.start_ordinal(sts), su.replica_count(sts)
        self.replicas: list[Object] = []
        by_ordinal = {su.ordinal_of(p): p for p in pods}
        for ordinal in range(start, start + count):
            pod = by_ordinal.get(ordinal)
            self.replicas.append(pod if pod is not None else self._new(ordinal))
        self.condemned = su.descending_ordinals([p for p in pods if not su.in_ordinal_range(p, sts)
                                                 and su.ordinal_of(p) >= 0])
        unhealthy = [p for p in [*self.replicas, *reversed(self.condemned)] if not su.is_healthy(p)]
        self.first_unhealthy = unhealthy[0] if unhealthy else None

    def _new(self, ordinal: int) -> Object:
        return su.versioned_pod(self.current_set, self.update_set, self.current_name, self.update_name, ordinal,
                                self.ref)

    def counts(self) -> dict[str, int]:
        return su.replica_status([*self.replicas, *self.condemned], self.min_ready, self.current_name,
                                 self.update_name, now_utc())

    async def run(self) -> dict[str, int]:
        if meta(self.sts).get("deletionTimestamp"):
            return self.counts()
        if await self._for_all(self.condemned, self._fix_claims):
            return self.counts()
        if await self._for_all(range(len(self.replicas)), self._process_replica):
            return self.counts()
        if await self._for_all(self.condemned, self._process_condemned):
            return self.counts()
        counts = self.counts()
        strategy = su.spec_of(self.sts).get("updateStrategy") or {}
        if strategy.get("type") == "OnDelete":
            return counts
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        for target in range(len(self.replicas) - 1, partition - 1, -1):
            pod = self.replicas[target]
            if su.pod_revision(pod) != self.update_name and not su.is_terminating(pod):
                await self.control.delete_pod(self.sts, pod)
                counts["currentReplicas"] -= 1
                return counts
            if not su.is_healthy(pod):
                return counts
        return counts

    async def _for_all(self, items: Sequence[Any] | range, fn: Callable[[Any], Awaitable[bool]]) -> bool:
        """``runForAll``: in order, stopping at the first that says so (OrderedReady); or all at once (Parallel),
        raising the first error.  True when the pass must stop here."""
        if self.monotonic:
            for item in items:
                if await fn(item):
                    return True
            return False
        results = await asyncio.gather(*(fn(item) for item in items), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return False

    async def _fix_claims(self, pod: Object) -> bool:
        if not self.control.claims_match_retention(self.update_set, pod):
            await self.control.fix_claim_owners(self.update_set, pod)
        return False

    async def _process_replica(self, i: int) -> bool:
        """``processReplica``: True when an OrderedReady pass must wait here."""
        pod = self.replicas[i]
        if su.is_failed(pod) or su.is_succeeded(pod):
            reason, what = ("RecreatingFailedPod", "failed") if su.is_failed(pod) else \
                ("RecreatingTerminatedPod", "terminated")
            kind: Literal["Normal", "Warning"] = "Warning" if su.is_failed(pod) else "Normal"
            m = meta(self.sts)
            self.recorder.event(self.sts, kind, reason, f"StatefulSet {m.get('namespace')}/{m['name']} is "
                                                        f"recreating {what} Pod {meta(pod)['name']}")
            await self.control.delete_pod(self.sts, pod)
            pod = self.replicas[i] = self._new(su.start_ordinal(self.sts) + i)
        if not su.is_created(pod):
            if self.control.stale_claim(self.sts, pod):
                return True  # the claim of an earlier pod is about to go; create the pod once it has
            await self.control.create_pod(self.sts, pod)
            return self.monotonic
        if su.is_pending(pod):
            await self.control.create_missing_claims(self.sts, pod)
        if su.is_terminating(pod) and self.monotonic:
            return True
        if self.monotonic and not su.is_running_and_available(pod, self.min_ready, now_utc()):
            return True
        if su.identity_matches(self.sts, pod) and su.storage_matches(self.sts, pod) and \
                self.control.claims_match_retention(self.update_set, pod):
            return False
        await self.control.update_pod(self.update_set, copy.deepcopy(pod))
        return False

    async def _process_condemned(self, pod: Object) -> bool:
        """``processCondemned``: scale down from the highest ordinal; True when an OrderedReady pass must wait."""
        if su.is_terminating(pod):
            return self.monotonic
        if self.monotonic and pod is not self.first_unhealthy and \
                not su.is_running_and_available(pod, self.min_ready, now_utc()):
            return True
        await self.control.delete_pod(self.sts, pod)
        return True
