"""The DaemonSet controller (``pkg/controller/daemon``): one daemon pod on every node that should run it.

One ``sync(key)``, idempotent, from the informer caches:

1. The DaemonSet is gone → forget its expectations; being deleted → nothing (the garbage collector takes its pods
   and revisions).  Otherwise claim its pods (``controllerref``) and group them by the node they are for
   (``daemonutil.target_node``: ``nodeName`` or the node-affinity binding), and find or make the current
   ControllerRevision (``history``), whose hash new pods carry.
2. Only when its expectations are satisfied, per node (``daemonutil.node_should_run``): create the missing pod;
   delete failed pods and all but the oldest of several; delete the pods of nodes that may no longer run it (an
   untolerated NoExecute taint, changed labels) and of nodes that are gone.  When there is nothing of that to do
   and the strategy is ``RollingUpdate``, one step of ``daemonutil.pods_to_replace`` (``OnDelete`` leaves old
   pods until someone deletes them).  Then old revisions beyond ``revisionHistoryLimit`` go.
3. Compute the status with the pure ``daemonutil.calculate_status`` (``observedGeneration`` only once the
   controller acted on that generation) and write it only when it changed.

Node events enqueue every DaemonSet (a node's labels, taints or existence decide where daemons run); pod
events enqueue the owning DaemonSet and note expectations, as the ReplicaSet controller does; revision events
enqueue their DaemonSet, so a deleted current revision comes back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from apimachinery.errors import StatusError
from apimachinery.labels import Selector
from apimachinery.meta import Object
from controllers.support import daemonutil
from controllers.support.base import Controller, key_of, unwrap
from controllers.support.controllerref import (
    ControllerRefManager,
    controller_uid,
    resolve_controller,
    selecting_owners,
    spec_selector,
)
from controllers.support.expectations import Expectations
from controllers.support.history import HASH_LABEL, History, HistoryOwner
from controllers.support.podcontrol import PodControl, slow_start_batch
from controllers.support.podutil import controller_ref, meta, now_utc
from controllers.support.statuswrite import write_status
from kubeclient import CONTROLLER_REVISIONS, DAEMON_SETS, NODES, PODS, Clientset, EventRecorder, InformerFactory

log = logging.getLogger(__name__)

COMPONENT = "daemonset-controller"
BURST_REPLICAS = 250


class DaemonSetController(Controller):
    """See the module docstring."""

    name = COMPONENT
    queue_name = "daemonset"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 2,
                 burst_replicas: int = BURST_REPLICAS) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.burst_replicas = burst_replicas
        self.expectations = Expectations()
        self.recorder = EventRecorder(clientset.events, COMPONENT)
        self.pod_control = PodControl(clientset, self.recorder)
        self.ds_informer = factory.informer(DAEMON_SETS)
        self.pod_informer = factory.informer(PODS)
        self.node_informer = factory.informer(NODES)
        self.revision_informer = factory.informer(CONTROLLER_REVISIONS)
        self.history = History(clientset, HistoryOwner(DAEMON_SETS, pods_carry_name=False))
        self.informers = [self.ds_informer, self.pod_informer, self.node_informer, self.revision_informer]
        self.ds_informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new), self._delete_ds)
        self.pod_informer.add_event_handler(self._add_pod, self._update_pod, self._delete_pod)
        self.node_informer.add_event_handler(lambda node: self._enqueue_all(), self._update_node,
                                             lambda node: self._enqueue_all())
        self.revision_informer.add_event_handler(self._revision_changed, lambda old, new: self._revision_changed(new),
                                                 self._revision_changed)

    # --- handlers: compute keys, note expectations, enqueue ------------------------------------------------
    def _delete_ds(self, obj: Any) -> None:
        key = key_of(obj)
        self.expectations.delete(key)
        self.queue.add(key)

    def _enqueue_all(self) -> None:
        for ds in self.ds_informer.indexer.list():
            self.enqueue(ds)

    def _update_node(self, old: Object, cur: Object) -> None:
        """Only what decides placement matters: labels, taints, existence (``shouldIgnoreNodeUpdate``)."""
        if meta(old).get("labels") != meta(cur).get("labels") or \
                (old.get("spec") or {}).get("taints") != (cur.get("spec") or {}).get("taints"):
            self._enqueue_all()

    def _revision_changed(self, obj: Any) -> None:
        ds = self._owner(unwrap(obj))
        if ds is not None:
            self.enqueue(ds)

    def _owner(self, obj: Object) -> Object | None:
        """The DaemonSet in the cache that controls a pod or a revision."""
        return resolve_controller(self.ds_informer.indexer, DAEMON_SETS.kind, obj)

    def _matching(self, pod: Object) -> list[Object]:
        return selecting_owners(self.ds_informer.indexer, pod)

    def _add_pod(self, pod: Object) -> None:
        if meta(pod).get("deletionTimestamp"):
            self._delete_pod(pod)
            return
        ds = self._owner(pod)
        if ds is not None:
            self.expectations.creation_observed(key_of(ds))
            self.enqueue(ds)
        elif not any(r.get("controller") for r in meta(pod).get("ownerReferences") or []):
            for candidate in self._matching(pod):
                self.enqueue(candidate)

    def _update_pod(self, old: Object, cur: Object) -> None:
        if meta(old).get("resourceVersion") == meta(cur).get("resourceVersion"):
            return
        if meta(cur).get("deletionTimestamp"):  # a graceful delete: as good as gone for expectations
            self._delete_pod(cur)
            return
        for pod in (old, cur):
            ds = self._owner(pod)
            if ds is not None:
                self.enqueue(ds)
        if self._owner(cur) is None and meta(old).get("labels") != meta(cur).get("labels"):
            for candidate in self._matching(cur):
                self.enqueue(candidate)

    def _delete_pod(self, obj: Any) -> None:
        pod = unwrap(obj)
        ds = self._owner(pod)
        if ds is not None:
            self.expectations.deletion_observed(key_of(ds), key_of(pod))
            self.enqueue(ds)

    # --- sync ----------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        ds = self.ds_informer.indexer.get_by_key(key)
        if ds is None:
            self.expectations.delete(key)
            return
        selector = spec_selector(ds)
        if selector is None or selector.empty():
            log.warning("DaemonSet %s has an invalid or empty selector; not syncing", key)
            return
        if meta(ds).get("deletionTimestamp"):
            return  # its pods and revisions go with it (garbage collector)
        spec = ds.get("spec") or {}
        nodes = {meta(n)["name"]: n for n in self.node_informer.indexer.list()}
        pods = await self._claim(ds, selector)
        node_pods = _by_node(pods)
        placement = {name: daemonutil.node_should_run(ds, node) for name, node in nodes.items()}
        should_run = {name for name, (run, _) in placement.items() if run}
        revisions = [r for r in self.revision_informer.indexer.by_index("namespace", meta(ds).get("namespace") or "")
                     if controller_uid(r) == meta(ds).get("uid")]
        current = await self.history.current(ds, revisions)
        revision_hash = (meta(current).get("labels") or {}).get(HASH_LABEL) or ""
        satisfied = self.expectations.satisfied(key)
        if satisfied:
            create_on, delete = self._manage(ds, nodes, node_pods, placement)
            strategy = spec.get("updateStrategy") or {}
            if not create_on and not delete and strategy.get("type") == "RollingUpdate":
                step = daemonutil.pods_to_replace(
                    ds, {n: node_pods.get(n, []) for n in should_run}, revision_hash, now_utc())
                create_on, delete = step.create_on, step.delete
            await self._sync_nodes(ds, key, create_on, delete, revision_hash)
            await self.history.clean_up(ds, revisions, [current], pods)
        on_nodes = {name: node_pods.get(name, []) for name in nodes}
        status = daemonutil.calculate_status(ds, on_nodes, should_run, revision_hash, now_utc())
        if not satisfied:  # the controller has not acted on this generation yet
            status.pop("observedGeneration", None)
            if (ds.get("status") or {}).get("observedGeneration"):
                status["observedGeneration"] = ds["status"]["observedGeneration"]
        await write_status(self.clientset.daemon_sets, ds, status)
        min_ready = int(spec.get("minReadySeconds") or 0)
        if min_ready > 0 and status.get("numberAvailable", 0) < status.get("numberReady", 0):
            self.queue.add_after(key, min_ready)

    async def _claim(self, ds: Object, selector: Selector) -> list[Object]:
        m = meta(ds)
        manager = ControllerRefManager(
            self.clientset.pods, ds, selector, controller_ref(ds, DAEMON_SETS.api_version, DAEMON_SETS.kind),
            lambda: self.clientset.daemon_sets.get(m["name"], m.get("namespace")))
        return await manager.claim(self.pod_informer.indexer.by_index("namespace", m.get("namespace") or ""))

    def _manage(self, ds: Object, nodes: Mapping[str, Object], node_pods: Mapping[str, list[Object]],
                placement: Mapping[str, tuple[bool, bool]]) -> tuple[list[str], list[Object]]:
        """(nodes needing a daemon pod, pods to delete) — ``podsShouldBeOnNode`` for every node."""
        create_on: list[str] = []
        delete: list[Object] = []
        for name in sorted(set(nodes) | set(node_pods)):
            pods = node_pods.get(name, [])
            should_run, should_continue = placement.get(name, (False, False))
            if should_run and not pods:
                create_on.append(name)
            elif should_continue:
                running = []
                for pod in pods:
                    if meta(pod).get("deletionTimestamp"):
                        continue
                    if daemonutil.is_failed(pod):
                        message = f"Found failed daemon pod {key_of(pod)} on node {name}, will try to kill it"
                        self.recorder.event(ds, "Warning", "FailedDaemonPod", message)
                        delete.append(pod)
                    else:
                        running.append(pod)
                delete.extend(_surplus(ds, running))
            else:
                delete.extend(p for p in pods if not meta(p).get("deletionTimestamp"))
        return create_on, delete

    async def _sync_nodes(self, ds: Object, key: str, create_on: list[str], delete: list[Object],
                          revision_hash: str) -> None:
        """Create the pods and delete the others, at most ``burst_replicas`` of each; raise the first failure."""
        create_on, delete = create_on[:self.burst_replicas], delete[:self.burst_replicas]
        self.expectations.expect_creations(key, len(create_on))
        self.expectations.expect_deletions(key, [key_of(p) for p in delete])
        ref = controller_ref(ds, DAEMON_SETS.api_version, DAEMON_SETS.kind)
        pending = list(create_on)

        async def create() -> None:
            await self.pod_control.create(ds, daemonutil.new_pod(ds, pending.pop(0), revision_hash, ref))

        async def remove(pod: Object) -> None:
            try:
                deleted = await self.pod_control.delete(ds, pod)
            except StatusError:
                self.expectations.deletion_observed(key, key_of(pod))
                raise
            if not deleted:
                self.expectations.deletion_observed(key, key_of(pod))

        successes, error = await slow_start_batch(len(create_on), 1, create)
        if len(create_on) - successes > 0:
            self.expectations.lower(key, adds=len(create_on) - successes)
        results = await asyncio.gather(*(remove(p) for p in delete), return_exceptions=True)
        for result in [error, *results]:
            if isinstance(result, BaseException):
                raise result

def _by_node(pods: list[Object]) -> dict[str, list[Object]]:
    grouped: dict[str, list[Object]] = {}
    for pod in pods:
        grouped.setdefault(daemonutil.target_node(pod), []).append(pod)
    return grouped


def _surplus(ds: Object, running: list[Object]) -> list[Object]:
    """All but the oldest of several running daemon pods on a node; during a surge the old and the new one stay
    until the RollingUpdate step removes the old."""
    if len(running) <= 1:
        return []
    rolling = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    ordered = daemonutil.oldest_first(running)
    keep = 2 if daemonutil.scaled_value(rolling.get("maxSurge"), 1, True) and len(running) == 2 else 1
    return ordered[keep:]
