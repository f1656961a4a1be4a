"""The scheduling loop: informers → cache and queue → runner (runner.py) → assume → bind.

Loop: informers feed the cache (nodes, bound pods) and the queue (pending pods of our profiles); the loop pops
a pod, runs its profile, assumes the pod on the chosen node and binds it asynchronously. A failed bind (or a
plugin error) forgets the assumption, clears the pod's nomination, writes PodScheduled=False (SchedulerError) and
requeues the pod with backoff unless it is gone or bound meanwhile. When nothing fits, the profile's PostFilter,
DefaultPreemption (plugins/defaultpreemption.py), looks for lower-priority victims: if found they are deleted and
the pod nominated to their node (in the queue's nominator at once, in ``status.nominatedNodeName`` after; without
victims anywhere an earlier nomination is cleared); either way the pod gets
``PodScheduled=False`` (reason Unschedulable) and a ``FailedScheduling`` event in Kubernetes' words (with the
preemption note unless preemption is disabled), and waits for a cluster event (the victims' deletion is one).
A namespace informer gives InterPodAffinity the namespace labels its ``namespaceSelector``s match.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from apimachinery import errors
from apimachinery.meta import now_rfc3339
from kubeclient import Clientset
from kubeclient.eventsv1 import EventsV1Recorder
from kubeclient.informer import SharedInformer, wait_for_cache_sync

from . import metrics
from .cache import Cache, is_terminated
from .config import Profile
from .diagnosis import Attempt, DiagnosisStore, failure_message
from .framework import Candidate, Handle, Pod, PostFilterResult, pod_priority
from .queue import QueuedPodInfo, SchedulingQueue, pod_key
from .runner import Runner, num_feasible_nodes_to_find
from .volumeinformers import VolumeInformers

__all__ = ["Scheduler", "Runner", "failure_message", "num_feasible_nodes_to_find", "pod_key"]

log = logging.getLogger(__name__)

MAX_BINDS_IN_FLIGHT = 64


def _spec(pod: Pod) -> dict[str, Any]:
    spec: dict[str, Any] = pod.get("spec", {})
    return spec


class Scheduler:
    """Informers → cache and queue → runner → assume → bind (see the module docstring)."""

    def __init__(self, client: Clientset, profiles: list[Profile] | None = None) -> None:
        self.client = client
        profiles = profiles or [Profile()]
        self.name = profiles[0].scheduler_name
        self.cache = Cache()
        self.queue = SchedulingQueue()
        metrics.count_pending(self.queue)
        self.volume_informers = VolumeInformers(client)
        self.handle = Handle(self.namespace_labels, self.queue.nominator, self.volume_informers)
        self.runners = {p.scheduler_name: Runner(p, self.handle) for p in profiles}
        self.diagnoses = DiagnosisStore()
        self.recorder = EventsV1Recorder(client.events_v1, self.name)  # kube-scheduler uses the new events API
        self.node_informer = SharedInformer(client.nodes)
        self.pod_informer = SharedInformer(client.pods)
        self.namespace_informer = SharedInformer(client.namespaces)
        self.node_informer.add_event_handler(self._node_changed, lambda o, n: self._node_changed(n),
                                             self._node_deleted)
        self.pod_informer.add_event_handler(self._pod_changed, lambda o, n: self._pod_changed(n), self._pod_deleted)
        self.namespace_informer.add_event_handler(lambda ns: self._namespace_changed(None, ns),
                                                  self._namespace_changed)
        self.volume_informers.on_change(self._storage_changed)
        self._binds = asyncio.Semaphore(MAX_BINDS_IN_FLIGHT)
        self._tasks: set[asyncio.Task[None]] = set()
        self.scheduled = 0

    # --- informer handlers ------------------------------------------------------------------------------------
    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """A namespace's labels from the informer; none for a namespace not (yet) seen, as kube-scheduler's
        ``GetNamespaceLabelsSnapshot``."""
        obj = self.namespace_informer.store.get_by_key(namespace)
        return (obj.get("metadata", {}).get("labels") or {}) if obj else {}

    def _runner_of(self, pod: Pod) -> Runner:
        """The runner of the pod's profile (parked pods are all of ours)."""
        return self.runners.get(_spec(pod).get("schedulerName", "default-scheduler")) or \
            next(iter(self.runners.values()))

    def _namespace_changed(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        """A namespace added or relabelled may now match (or stop matching) a ``namespaceSelector``: pods that
        InterPodAffinity rejected get another try."""
        labels = new.get("metadata", {}).get("labels")
        if old is None or old.get("metadata", {}).get("labels") != labels:
            self.queue.move_all_to_active_or_backoff(
                "NamespaceAdd" if old is None else "NamespaceUpdate",
                lambda info: bool(self._runner_of(info.pod).namespace_aware() & info.unschedulable_plugins))

    def _storage_changed(self, event: str) -> None:
        """A claim, volume or class added or changed may let the pods VolumeBinding or VolumeZone parked fit."""
        self.queue.move_all_to_active_or_backoff(
            event, lambda info: bool(info.unschedulable_plugins & {"VolumeBinding", "VolumeZone"}))

    def _node_changed(self, node: dict[str, Any]) -> None:
        if self.cache.add_node(node):
            self.queue.move_all_to_active_or_backoff("NodeChange")

    def _node_deleted(self, node: Any) -> None:
        obj = getattr(node, "obj", node)
        self.cache.remove_node(obj["metadata"]["name"])

    def _pod_changed(self, pod: Pod) -> None:
        key = pod_key(pod)
        if _spec(pod).get("nodeName"):
            self.queue.delete(key)  # and its nomination: it is bound
            was_counted = key in self.cache.pod_nodes
            newly_bound = not was_counted or self.cache.is_assumed(key)
            self.cache.add_pod(pod)
            if is_terminated(pod):
                if was_counted:
                    self.queue.move_all_to_active_or_backoff("AssignedPodTerminated")
            elif newly_bound:
                self.queue.move_all_to_active_or_backoff(
                    "AssignedPodAdd", lambda info: self._runner_of(info.pod).assigned_pod_add_may_help(info.pod, pod))
            return
        if pod["metadata"].get("deletionTimestamp") or _spec(pod).get("schedulerName", "default-scheduler") \
                not in self.runners:
            self.queue.delete(key)
            return
        if self.cache.is_assumed(key):
            return  # our own decision, not yet seen bound
        self.queue.update(pod) if self.queue.where(key) else self.queue.add(pod)

    def _pod_deleted(self, pod: Any) -> None:
        obj = getattr(pod, "obj", pod)
        key = pod_key(obj)
        self.queue.delete(key)
        if key in self.cache.pod_nodes:
            self.cache.remove_pod(key)
            self.queue.move_all_to_active_or_backoff("AssignedPodDelete")

    # --- one scheduling cycle ---------------------------------------------------------------------------------
    def schedule_one(self, info: QueuedPodInfo) -> Attempt | None:
        pod = info.pod
        runner = self.runners.get(_spec(pod).get("schedulerName", "default-scheduler"))
        if runner is None:
            self.queue.done(info.key)
            return None
        started = time.monotonic()
        profile = runner.profile.scheduler_name
        try:
            attempt = runner.find_node(pod, self.cache, info.attempts)
        except Exception as err:  # one bad pod must not stop the scheduler
            log.exception("scheduling %s failed", info.key)
            metrics.pod_failed(metrics.ERROR, profile, time.monotonic() - started)
            self.diagnoses.record(Attempt(info.key, info.attempts, now_rfc3339(), [], [], np.zeros(0, np.int64),
                                          np.zeros(0, np.int16), [], result="Error", message=str(err)))
            self._scheduler_error(info, str(err))
            return None
        self.diagnoses.record(attempt)
        if attempt.node is None:
            result = self._post_filter(runner, pod, attempt)
            # As kube-scheduler's handleSchedulingFailure: the nominator first, so the next cycles already keep
            # the room, then the status write.
            self.queue.nominator.add(pod, result.nominated_node)
            self.queue.add_unschedulable(info, attempt.unschedulable_plugins())
            self._spawn(self._unschedulable(pod, attempt.message, result.nominated_node, result.candidate))
            metrics.pod_failed(metrics.UNSCHEDULABLE, profile, time.monotonic() - started)
            return attempt
        self.cache.assume_pod(pod, attempt.node)
        self.queue.nominator.delete(info.key)  # its room is now held by the assumed pod itself
        self.queue.done(info.key)
        self._spawn(self._bind(info, attempt.node, started))
        return attempt

    def _post_filter(self, runner: Runner, pod: Pod, attempt: Attempt) -> PostFilterResult:
        """The PostFilter plugins (DefaultPreemption): victims and the node to nominate, or, without a candidate,
        their note appended to the attempt's message (as Kubernetes' FitError appends its PostFilter message).
        A profile without PostFilter plugins only clears the nomination, as kube-scheduler does."""
        started = time.monotonic()
        try:
            result = runner.post_filter(pod, self.cache, attempt)
        except Exception:  # preemption is best effort; the pod stays unschedulable
            log.exception("preemption for %s failed", pod_key(pod))
            return PostFilterResult(None)
        if result is not None:
            metrics.extension_point("PostFilter", "Success" if result.candidate is not None else "Unschedulable",
                                    runner.profile.scheduler_name, started)
            metrics.PREEMPTION_ATTEMPTS.inc()
            if result.candidate is not None:
                metrics.PREEMPTION_VICTIMS.observe(len(result.candidate.victims))
        if result is None:
            log.debug("No PostFilter plugins are registered, so no preemption will be performed")
            return PostFilterResult(None, clear_nomination=True)
        if result.candidate is None and result.message:
            attempt.message += f" {result.message}."
        return result

    async def _preempt(self, pod: Pod, candidate: Candidate) -> None:
        """As kube-scheduler's prepareCandidate: mark each victim DisruptionTarget, record Preempted, delete it;
        then clear the nomination of lower-priority pods nominated to the node (they may no longer fit there)."""
        condition = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                     "message": f"{self.name}: preempting to accommodate a higher priority pod",
                     "lastTransitionTime": now_rfc3339()}
        for victim in candidate.victims:
            meta = victim["metadata"]
            try:
                await self.client.pods.patch(meta["name"], {"status": {"conditions": [condition]}}, "strategic",
                                             meta["namespace"], subresource="status")
                self.recorder.eventf(victim, pod, "Normal", "Preempted", "Preempting",
                                     f"Preempted by pod {pod['metadata'].get('uid', '')} on node {candidate.node}")
                await self.client.pods.delete(meta["name"], meta["namespace"],
                                              preconditions={"uid": meta["uid"]} if meta.get("uid") else None)
            except errors.NotFound:
                continue
            except errors.StatusError as err:
                log.warning("preempting %s for %s failed: %s", pod_key(victim), pod_key(pod), err)
        for nominated in self.queue.nominator.nominated_pods_for_node(candidate.node):
            if pod_priority(nominated) < pod_priority(pod):
                meta = nominated["metadata"]
                try:
                    await self.client.pods.patch(meta["name"], {"status": {"nominatedNodeName": None}}, "strategic",
                                                 meta["namespace"], subresource="status")
                except errors.StatusError as err:
                    log.info("could not clear the nomination of %s: %s", pod_key(nominated), err)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _bind(self, info: QueuedPodInfo, node_name: str, started: float) -> None:
        pod = info.pod
        profile = self._runner_of(pod).profile.scheduler_name
        async with self._binds:
            point, begun = "PreBind", time.monotonic()
            try:
                await self._pre_bind(pod, node_name)
                metrics.extension_point(point, "Success", profile, begun)
                point, begun = "Bind", time.monotonic()
                await self.client.pods.bind(pod, node_name)
            except errors.StatusError as err:
                log.warning("binding %s to %s failed: %s", info.key, node_name, err)
                metrics.extension_point(point, "Error", profile, begun)
                metrics.pod_failed(metrics.ERROR, profile, time.monotonic() - started)
                if self.cache.is_assumed(info.key):  # as ForgetPod: not once the watch has shown the pod bound
                    self.cache.forget_pod(info.key)
                    self.queue.move_all_to_active_or_backoff("BindFailed")
                self._scheduler_error(info, str(err))
                return
        metrics.extension_point(point, "Success", profile, begun)
        now = time.monotonic()
        first = info.initial_attempt
        metrics.pod_scheduled(profile, now - started, info.attempts,
                              self.queue.clock() - first if first is not None else now - started)
        self.scheduled += 1
        meta = pod["metadata"]
        self.recorder.eventf(pod, None, "Normal", "Scheduled", "Binding",
                             f"Successfully assigned {meta['namespace']}/{meta['name']} to {node_name}")

    async def _pre_bind(self, pod: Pod, node_name: str) -> None:
        """Write what the PreBind plugins ask for (VolumeBinding: the claims' selected node)."""
        node = self.cache.nodes.get(node_name)
        if node is None:
            return
        for patch in self._runner_of(pod).pre_bind(pod, node):
            await self.client.resource(patch.resource).patch(patch.name, patch.patch, namespace=patch.namespace)

    def _scheduler_error(self, info: QueuedPodInfo, message: str) -> None:
        """As kube-scheduler's ``handleSchedulingFailure`` after an error (a failed bind, a plugin that raised), with
        ``clearNominatedNode``: the nomination is dropped from the nominator at once and from
        ``status.nominatedNodeName`` by the status write, which also says PodScheduled=False (reason
        SchedulerError) next to a FailedScheduling event. The pod is retried after its backoff, as the informer now
        shows it, unless the informer shows it gone or bound; then only the event is recorded (kube-scheduler would
        also write the condition, even onto a pod bound meanwhile)."""
        self.queue.nominator.delete(info.key)
        latest = self.pod_informer.store.get_by_key(info.key)
        if latest is None or _spec(latest).get("nodeName"):
            self.queue.done(info.key)
            self.recorder.eventf(info.pod, None, "Warning", "FailedScheduling", "Scheduling", message)
            return
        info.pod = latest
        self.queue.add_backoff(info)
        self._spawn(self._unschedulable(latest, message, "", reason="SchedulerError"))

    async def _unschedulable(self, pod: Pod, message: str, nominated: str | None = None,
                             preemption: Candidate | None = None, reason: str = "Unschedulable") -> None:
        """FailedScheduling, PodScheduled=False (``reason``) and the nomination (``nominated``: a node, "" to clear,
        None to leave it; written only when it changes); then the victims go. In this order, so the status write
        cannot land after the bind that the victims' deletion leads to."""
        self.recorder.eventf(pod, None, "Warning", "FailedScheduling", "Scheduling", message)
        meta = pod["metadata"]
        condition = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                     "lastProbeTime": None, "lastTransitionTime": now_rfc3339()}
        status: dict[str, Any] = {"conditions": [condition]}
        if nominated is not None and nominated != ((pod.get("status") or {}).get("nominatedNodeName") or ""):
            status["nominatedNodeName"] = nominated or None  # None removes it
        try:
            await self.client.pods.patch(meta["name"], {"status": status}, "strategic",
                                         meta["namespace"], subresource="status")
        except errors.StatusError as err:
            log.info("could not mark %s unschedulable: %s", pod_key(pod), err)
        if preemption is not None:
            await self._preempt(pod, preemption)

    # --- lifecycle --------------------------------------------------------------------------------------------
    @property
    def _informers(self) -> tuple[SharedInformer, ...]:
        return (self.namespace_informer, self.node_informer, self.pod_informer, *self.volume_informers.all)

    def handlers_synced(self) -> bool:
        """Every informer has handed its first list to the scheduler's handlers (kube's ``WaitForHandlersSync``,
        the ``sched-handler-sync`` readiness check): until then a pod may be scheduled against a partial cache."""
        return all(informer.has_synced() for informer in self._informers)

    async def start_informers(self, stop: asyncio.Event) -> list[asyncio.Task[None]]:
        """Start the informers and the queue's timer; return once the informers have synced or ``stop`` is set
        (as client-go's ``WaitForCacheSync(stopCh)``: an unreachable apiserver must not keep a stopping process
        alive). The tasks end when ``stop`` is set (``close`` waits for them)."""
        informers = self._informers
        tasks = [*(asyncio.create_task(informer.run(stop)) for informer in informers),
                 asyncio.create_task(self.queue.run(stop))]
        await wait_for_cache_sync(*informers, stop=stop)
        return tasks

    async def schedule(self, stop: asyncio.Event) -> None:
        """Pop and schedule pods until ``stop`` (only the leader calls this)."""
        stopped = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                get = asyncio.ensure_future(self.queue.pop())
                done, _ = await asyncio.wait({get, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if get not in done:
                    get.cancel()
                    break
                self.schedule_one(get.result())
                await asyncio.sleep(0)  # let the watch and the binds run between pods
        finally:
            stopped.cancel()

    async def run(self, stop: asyncio.Event) -> None:
        """Informers and the loop without leader election (as ``--leader-elect=false``)."""
        tasks = await self.start_informers(stop)
        try:
            await self.schedule(stop)
        finally:
            await self.close(tasks)

    async def close(self, tasks: list[asyncio.Task[None]]) -> None:
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)
        await self.recorder.close()
