"""The disruption controller (``pkg/controller/disruption``): each PodDisruptionBudget's status.

The eviction subresource decides from a budget's status alone, so this controller keeps it true.  The queue
holds budget keys:

* a budget added, changed or deleted is enqueued; so are the budgets that select a pod added, changed (old and
  new labels) or deleted — a pod turning Ready or going away changes the count;
* ``sync(key)`` reads the caches: the selected pods; ``expectedPods`` and ``desiredHealthy`` from
  ``minAvailable`` (an int: as many pods as are selected; a percent: of the controllers' scale) or
  ``maxUnavailable`` (of the controllers' scale), where the scale is the sum of ``spec.replicas`` over the
  distinct controllers of the pods, found as ``getExpectedScale``'s finders do (ReplicationController,
  ReplicaSet not owned by a Deployment, Deployment through its ReplicaSet, StatefulSet); ``currentHealthy`` the
  Ready pods neither terminating nor in ``disruptedPods``; ``disruptionsAllowed = currentHealthy - desiredHealthy``
  (0 while no pod is expected); the ``DisruptionAllowed`` condition (SufficientPods / InsufficientPods);
* ``disruptedPods`` is shared with evictions: the eviction records a pod there before deleting it, so a budget
  does not count the pod as healthy while the delete is on its way. An entry goes once its pod is terminating
  or gone, or two minutes after the eviction (``DeletionTimeout``: the pod was not deleted after all, a
  ``NotDeleted`` warning); the budget is re-synced when the next entry expires;
* the status is written only when it changed; a sync that fails (a pod whose controller cannot be found, say)
  writes the fail-safe status: ``disruptionsAllowed`` 0 and ``DisruptionAllowed`` False with reason
  ``SyncFailed`` and the error as message; a 409 is just retried.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from apimachinery.disruption import DISRUPTION_ALLOWED, selects, set_status_condition, update_disruption_allowed
from apimachinery.errors import Conflict
from apimachinery.labels import selector_from_label_selector
from apimachinery.meta import Object
from controllers.deployment.util import scaled_value
from controllers.support.base import Controller, key_of, unwrap
from controllers.support.podutil import is_pod_ready, meta, now_utc
from kubeclient import (
    DEPLOYMENTS,
    POD_DISRUPTION_BUDGETS,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    STATEFUL_SETS,
    Clientset,
    DeletedFinalStateUnknown,
    EventRecorder,
    InformerFactory,
)
from kubeclient.informer import SharedInformer

log = logging.getLogger(__name__)

DELETION_TIMEOUT = timedelta(minutes=2)


@dataclass(frozen=True, slots=True)
class ControllerScale:
    uid: str
    scale: int


class SyncError(Exception):
    """A budget whose status cannot be computed (its message becomes the SyncFailed condition's)."""


def parse_time(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=now_utc().tzinfo)


def controller_of(obj: Object) -> dict[str, Any] | None:
    return next((ref for ref in meta(obj).get("ownerReferences") or [] if ref.get("controller")), None)


def build_disrupted_pods(pods: Sequence[Object], disrupted: dict[str, str], now: datetime
                         ) -> tuple[dict[str, str], datetime | None, list[Object]]:
    """``buildDisruptedPodMap``: the entries still pending (pod present, not terminating, within the timeout),
    when the first of them expires, and the pods whose entry expired."""
    result: dict[str, str] = {}
    recheck: datetime | None = None
    expired: list[Object] = []
    for pod in pods:
        name = meta(pod).get("name", "")
        if meta(pod).get("deletionTimestamp") or name not in disrupted:
            continue
        expected_deletion = parse_time(disrupted[name]) + DELETION_TIMEOUT
        if expected_deletion < now:
            expired.append(pod)
            continue
        result[name] = disrupted[name]
        if recheck is None or expected_deletion < recheck:
            recheck = expected_deletion
    return result, recheck, expired


def count_healthy(pods: Sequence[Object], disrupted: dict[str, str], now: datetime) -> int:
    """``countHealthyPods``: Ready pods that are neither terminating nor about to be deleted by an eviction."""
    healthy = 0
    for pod in pods:
        name = meta(pod).get("name", "")
        if meta(pod).get("deletionTimestamp"):
            continue
        if name in disrupted and parse_time(disrupted[name]) + DELETION_TIMEOUT > now:
            continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy


def disruption_status(pdb: Object, *, current_healthy: int, desired_healthy: int, expected: int,
                      disrupted: dict[str, str]) -> dict[str, Any]:
    """``updatePdbStatus``'s new status (conditions carried over, DisruptionAllowed brought up to date)."""
    allowed = current_healthy - desired_healthy
    if expected <= 0 or allowed <= 0:
        allowed = 0
    old = pdb.get("status") or {}
    status: dict[str, Any] = {"observedGeneration": int(meta(pdb).get("generation") or 0),
                              "disruptionsAllowed": allowed, "currentHealthy": current_healthy,
                              "desiredHealthy": desired_healthy, "expectedPods": expected,
                              "conditions": copy.deepcopy(old.get("conditions") or [])}
    if disrupted:
        status["disruptedPods"] = dict(disrupted)
    update_disruption_allowed(status)
    return status


class DisruptionController(Controller):
    name = "disruption-controller"
    queue_name = "disruption"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 1,
                 clock: Callable[[], datetime] = now_utc) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.clock = clock
        self.recorder = EventRecorder(clientset.events, "controllermanager")
        self.pdb_informer = factory.informer(POD_DISRUPTION_BUDGETS)
        self.pod_informer = factory.informer(PODS)
        self.rc_informer = factory.informer(REPLICATION_CONTROLLERS)
        self.rs_informer = factory.informer(REPLICA_SETS)
        self.deployment_informer = factory.informer(DEPLOYMENTS)
        self.sts_informer = factory.informer(STATEFUL_SETS)
        self.informers = [self.pdb_informer, self.pod_informer, self.rc_informer, self.rs_informer,
                          self.deployment_informer, self.sts_informer]
        self.pdb_informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new), self.enqueue)
        self.pod_informer.add_event_handler(self._pod_changed, self._pod_updated, self._pod_changed)
        self.finders = (self._replication_controller, self._replica_set, self._deployment, self._stateful_set)

    # --- handlers -----------------------------------------------------------------------------------------------
    def _pod_changed(self, obj: Object | DeletedFinalStateUnknown) -> None:
        pod = unwrap(obj)
        pdbs = self.pdbs_for_pod(pod)
        if len(pdbs) > 1:
            self.recorder.event(pod, "Warning", "MultiplePodDisruptionBudgets",
                                "Pod belongs to multiple PodDisruptionBudgets. Only one may be enforced.")
        for pdb in pdbs:
            self.enqueue(pdb)

    def _pod_updated(self, old: Object, new: Object) -> None:
        if meta(old).get("labels") != meta(new).get("labels"):
            for pdb in self.pdbs_for_pod(old):
                self.enqueue(pdb)
        self._pod_changed(new)

    def pdbs_for_pod(self, pod: Object) -> list[Object]:
        return [pdb for pdb in self.pdb_informer.indexer.list() if selects(pdb, pod)]

    # --- sync ---------------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        pdb = self.pdb_informer.indexer.get_by_key(key)
        if pdb is None:
            return
        try:
            await self.try_sync(pdb)
        except Conflict:
            raise
        except SyncError as err:
            log.info("%s: failed to sync pdb %s: %s", self.name, key, err)
            await self.fail_safe(pdb, str(err))

    async def try_sync(self, pdb: Object) -> None:
        pods = [pod for pod in self.pod_informer.indexer.list() if selects(pdb, pod)]
        if not pods:
            self.recorder.event(pdb, "Normal", "NoPods", "No matching pods found")
        expected, desired, unmanaged = self.expected_pod_count(pdb, pods)
        if unmanaged:
            self.recorder.event(pdb, "Warning", "UnmanagedPods", "Pods selected by this PodDisruptionBudget "
                                f"(selector: {self._selector_text(pdb)}) were found to be unmanaged. As a result, "
                                "the status of the PDB cannot be calculated correctly, which may result in undefined "
                                "behavior. To account for these pods please set \".spec.minAvailable\" field of the "
                                "PDB to an integer value.")
        now = self.clock()
        disrupted, recheck, expired = build_disrupted_pods(
            pods, dict((pdb.get("status") or {}).get("disruptedPods") or {}), now)
        for pod in expired:
            self.recorder.event(pod, "Warning", "NotDeleted", f"Pod was expected by PDB {key_of(pdb)} to be "
                                                              "deleted but it wasn't")
        status = disruption_status(pdb, current_healthy=count_healthy(pods, disrupted, now),
                                   desired_healthy=desired, expected=expected, disrupted=disrupted)
        await self._write_status(pdb, status)
        if recheck is not None:
            self.queue.add_after(key_of(pdb), max((recheck - now).total_seconds(), 0.0))

    def expected_pod_count(self, pdb: Object, pods: Sequence[Object]) -> tuple[int, int, list[str]]:
        """``getExpectedPodCount``: (expectedPods, desiredHealthy, unmanaged pod names)."""
        spec = pdb.get("spec") or {}
        unmanaged: list[str] = []
        expected = desired = 0
        if spec.get("maxUnavailable") is not None:
            expected, unmanaged = self.expected_scale(pods)
            desired = max(expected - scaled_value(spec["maxUnavailable"], expected, True), 0)
        elif isinstance(spec.get("minAvailable"), int):
            desired, expected = spec["minAvailable"], len(pods)
        elif spec.get("minAvailable") is not None:
            expected, unmanaged = self.expected_scale(pods)
            desired = scaled_value(spec["minAvailable"], expected, True)
        return expected, desired, unmanaged

    def expected_scale(self, pods: Sequence[Object]) -> tuple[int, list[str]]:
        """``getExpectedScale``: the sum of the scale of the pods' distinct controllers; pods without a controller
        are left out (reported as unmanaged); a controller none of the finders knows is an error."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                unmanaged.append(meta(pod).get("name", ""))
                continue
            if ref.get("uid") in scales:
                continue
            namespace = meta(pod).get("namespace", "")
            found = next((s for s in (finder(ref, namespace) for finder in self.finders) if s is not None), None)
            if found is None:
                raise SyncError(f'found no controllers for pod "{meta(pod).get("name", "")}"')
            scales[found.uid] = found.scale
        return sum(scales.values()), unmanaged

    # --- finders: a pod's controller and its scale --------------------------------------------------------------
    @staticmethod
    def _lookup(informer: SharedInformer, ref: dict[str, Any], namespace: str, kind: str,
                groups: tuple[str, ...]) -> Object | None:
        group = (ref.get("apiVersion") or "").rpartition("/")[0]
        if ref.get("kind") != kind or group not in groups:
            return None
        obj = informer.indexer.get_by_key(f"{namespace}/{ref.get('name')}")
        if obj is None or meta(obj).get("uid") != ref.get("uid"):
            return None
        return obj

    @staticmethod
    def _scale(obj: Object) -> ControllerScale:
        return ControllerScale(meta(obj).get("uid", ""), int((obj.get("spec") or {}).get("replicas") or 0))

    def _replication_controller(self, ref: dict[str, Any], namespace: str) -> ControllerScale | None:
        rc = self._lookup(self.rc_informer, ref, namespace, "ReplicationController", ("",))
        return self._scale(rc) if rc is not None else None

    def _replica_set(self, ref: dict[str, Any], namespace: str) -> ControllerScale | None:
        rs = self._lookup(self.rs_informer, ref, namespace, "ReplicaSet", ("apps", "extensions"))
        if rs is None or (controller_of(rs) or {}).get("kind") == "Deployment":
            return None  # a Deployment's ReplicaSet: the Deployment's replicas count
        return self._scale(rs)

    def _deployment(self, ref: dict[str, Any], namespace: str) -> ControllerScale | None:
        rs = self._lookup(self.rs_informer, ref, namespace, "ReplicaSet", ("apps", "extensions"))
        owner = controller_of(rs) if rs is not None else None
        if owner is None:
            return None
        deployment = self._lookup(self.deployment_informer, owner, namespace, "Deployment", ("apps", "extensions"))
        return self._scale(deployment) if deployment is not None else None

    def _stateful_set(self, ref: dict[str, Any], namespace: str) -> ControllerScale | None:
        sts = self._lookup(self.sts_informer, ref, namespace, "StatefulSet", ("apps",))
        return self._scale(sts) if sts is not None else None

    # --- status -------------------------------------------------------------------------------------------------
    async def fail_safe(self, pdb: Object, message: str) -> None:
        """``failSafe``: no disruptions while the budget cannot be computed."""
        status = copy.deepcopy(pdb.get("status") or {})
        status["disruptionsAllowed"] = 0
        set_status_condition(status, DISRUPTION_ALLOWED, "False", "SyncFailed", message)
        await self._write_status(pdb, status)

    async def _write_status(self, pdb: Object, status: dict[str, Any]) -> None:
        if status == (pdb.get("status") or {}):
            return
        new = copy.deepcopy(pdb)
        new["status"] = status
        await self.clientset.pod_disruption_budgets.update_status(new)

    @staticmethod
    def _selector_text(pdb: Object) -> str:
        try:
            return str(selector_from_label_selector((pdb.get("spec") or {}).get("selector")))
        except Exception:
            return "<invalid>"
