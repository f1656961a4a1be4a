"""The taint eviction controller (``pkg/controller/tainteviction``): NoExecute taints empty nodes.

For every pod bound to a node with NoExecute taints:

* a taint the pod does not tolerate → the pod is deleted at once;
* all tolerated, some with ``tolerationSeconds`` → deleted when the first of those times has passed, each
  counted from when its taint appeared (the taint's ``timeAdded``, else when this controller first saw it),
  so re-checks and controller restarts do not restart the clock;
* all tolerated forever → left alone.

Removing the taint (or adding a toleration) before the time is up cancels the deletion.  Each decision
leaves a ``TaintManagerEviction`` event on the pod ("Marking for deletion Pod ns/name", "Cancelling deletion
of Pod ns/name"), and an evicted pod first gets the ``DisruptionTarget`` condition (reason
``DeletionByTaintManager``) so its owner and users can tell why it went.

Queue keys are ``node:<name>`` (re-check every pod of the node), ``pod:<ns>/<name>`` (re-check one pod) and
``evict:<ns>/<name>`` (a timer fired); timers live on the event loop, one per pod.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apimachinery.errors import NotFound
from apimachinery.meta import Object, parse_time
from controllers.support.base import Controller, ensure_indexer, key_of, unwrap
from controllers.support.podutil import fmt_time, get_condition, is_pod_terminal, meta, now_utc
from controllers.support.taints import matching_tolerations, min_toleration_seconds, no_execute_taints
from kubeclient import NODE_NAME_INDEX, NODES, PODS, Clientset, EventRecorder, InformerFactory
from kubeclient.informer import node_name_index_func

log = logging.getLogger(__name__)

REASON = "TaintManagerEviction"


@dataclass
class _Scheduled:
    created: float
    fire_at: float
    uid: str
    timer: asyncio.TimerHandle


def _tolerations(pod: Object) -> list[dict[str, Any]]:
    return list((pod.get("spec") or {}).get("tolerations") or [])


class TaintEvictionController(Controller):
    name = "taint-eviction-controller"
    queue_name = "noexec_taint_pod"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(workers=8)
        self.clientset = clientset
        self._clock = clock
        self.scheduled: dict[str, _Scheduled] = {}
        self.first_seen: dict[tuple[Any, ...], float] = {}  # (node, key, value, effect) → when we saw the taint
        self.recorder = EventRecorder(clientset.events, "taint-eviction-controller")
        self.node_informer = factory.informer(NODES)
        self.pod_informer = factory.informer(PODS)
        ensure_indexer(self.pod_informer, NODE_NAME_INDEX, node_name_index_func)
        self.informers = [self.node_informer, self.pod_informer]
        self.node_informer.add_event_handler(self._node_added, self._node_updated)
        self.pod_informer.add_event_handler(self._pod_added, self._pod_updated, self._pod_deleted)

    # --- handlers ------------------------------------------------------------------------------------------
    def _node_added(self, node: Object) -> None:
        if no_execute_taints(node):
            self.queue.add(f"node:{meta(node)['name']}")

    def _node_updated(self, old: Object, new: Object) -> None:
        if no_execute_taints(old) != no_execute_taints(new):
            name = meta(new)["name"]
            current = {(name, t.get("key"), t.get("value"), t.get("effect")) for t in no_execute_taints(new)}
            for ident in [i for i in self.first_seen if i[0] == name and i not in current]:
                del self.first_seen[ident]  # a taint removed and added again starts a new clock
            self.queue.add(f"node:{name}")

    def _pod_added(self, pod: Object) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            self.queue.add(f"pod:{key_of(pod)}")

    def _pod_updated(self, old: Object, new: Object) -> None:
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        if old_spec.get("nodeName") != new_spec.get("nodeName") or _tolerations(old) != _tolerations(new) or \
                bool(meta(new).get("deletionTimestamp")) != bool(meta(old).get("deletionTimestamp")) or \
                is_pod_terminal(new) != is_pod_terminal(old):
            self.queue.add(f"pod:{key_of(new)}")

    def _pod_deleted(self, obj: Any) -> None:
        self._cancel(key_of(unwrap(obj)), event=False)

    # --- sync ----------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        kind, _, name = key.partition(":")
        if kind == "node":
            for pod in self.pod_informer.indexer.by_index(NODE_NAME_INDEX, name):
                self._process(pod)
        elif kind == "pod":
            cached = self.pod_informer.indexer.get_by_key(name)
            if cached is None:
                self._cancel(name, event=False)
            else:
                self._process(cached)
        elif kind == "evict":
            await self._evict(name)

    def _process(self, pod: Object) -> None:
        """Schedule, keep, or cancel the eviction of one pod given its node's NoExecute taints."""
        key = key_of(pod)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or meta(pod).get("deletionTimestamp") or is_pod_terminal(pod):
            self._cancel(key, event=False)
            return
        taints = no_execute_taints(self.node_informer.indexer.get_by_key(node_name))
        if not taints:
            self._cancel(key, event=True)
            return
        tolerated, used = matching_tolerations(taints, _tolerations(pod))
        now = self._clock()
        if not tolerated:
            self._schedule(key, pod, now, now)
            return
        deadlines = [self._appeared(node_name, taint) + seconds for taint, toleration in zip(taints, used, strict=False)
                     if (seconds := min_toleration_seconds([toleration])) is not None]
        if not deadlines:
            self._cancel(key, event=True)
            return
        self._schedule(key, pod, now, min(deadlines))

    def _appeared(self, node_name: str, taint: dict[str, Any]) -> float:
        """When ``taint`` appeared, on our monotonic clock: its ``timeAdded``, else when we first saw it."""
        ident = (node_name, taint.get("key"), taint.get("value"), taint.get("effect"))
        start = self.first_seen.get(ident)
        if start is None:
            start = self._clock()
            if taint.get("timeAdded"):
                start -= max((now_utc() - parse_time(taint["timeAdded"])).total_seconds(), 0.0)
            self.first_seen[ident] = start
        return start

    def _schedule(self, key: str, pod: Object, created: float, fire_at: float) -> None:
        existing = self.scheduled.get(key)
        if existing is not None:
            if existing.fire_at == fire_at and existing.uid == meta(pod).get("uid"):
                return
            existing.timer.cancel()
        delay = max(fire_at - self._clock(), 0.0)
        timer = asyncio.get_running_loop().call_later(delay, self.queue.add, f"evict:{key}")
        self.scheduled[key] = _Scheduled(created, fire_at, meta(pod).get("uid") or "", timer)
        if delay > 0:
            log.info("pod %s will be evicted in %.1fs (NoExecute taint tolerated for a while)", key, delay)

    def _cancel(self, key: str, *, event: bool) -> None:
        scheduled = self.scheduled.pop(key, None)
        if scheduled is None:
            return
        scheduled.timer.cancel()
        if event:
            pod = self.pod_informer.indexer.get_by_key(key)
            if pod is not None:
                self.recorder.event(pod, "Normal", REASON, f"Cancelling deletion of Pod {key}")

    async def _evict(self, key: str) -> None:
        scheduled = self.scheduled.get(key)
        if scheduled is None or scheduled.fire_at > self._clock() + 0.001:
            return  # cancelled or rescheduled since the timer was set
        pod = self.pod_informer.indexer.get_by_key(key)
        if pod is None or meta(pod).get("uid") != scheduled.uid:
            self.scheduled.pop(key, None)
            return
        self.recorder.event(pod, "Normal", REASON, f"Marking for deletion Pod {key}")
        await self._add_condition_and_delete(pod)
        self.scheduled.pop(key, None)

    async def _add_condition_and_delete(self, pod: Object) -> None:
        """``DisruptionTarget`` first (why the pod goes), then the delete; a pod already gone is fine."""
        m = meta(pod)
        try:
            fresh = await self.clientset.pods.get(m["name"], m["namespace"])
            if meta(fresh).get("uid") != m.get("uid"):
                return
            status = fresh.setdefault("status", {})
            condition = get_condition(status, "DisruptionTarget")
            if condition is None or condition.get("status") != "True":
                conditions = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
                conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                                   "message": "Taint manager: deleting due to NoExecute taint",
                                   "lastTransitionTime": fmt_time(now_utc())})
                status["conditions"] = conditions
                await self.clientset.pods.update_status(fresh)
            await self.clientset.pods.delete(m["name"], m["namespace"], preconditions={"uid": m["uid"]})
        except NotFound:
            return
