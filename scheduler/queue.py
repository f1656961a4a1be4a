"""The scheduling queue, as kube-scheduler's ``PriorityQueue``: active, backoff and unschedulable pods.

Guarantees:

* ``pop`` hands out the active pod with the highest ``spec.priority``, then the one queued first; it waits
  (without polling) while nothing is active. A popped pod is *in flight* until ``done`` or a requeue.
* A pod whose attempt failed goes to the unschedulable set (``add_unschedulable``) or, for errors such as a
  failed bind, to the backoff queue (``add_backoff``). Backoff lasts ``initial_backoff`` × 2^(attempts-1)
  seconds, at most ``max_backoff`` (1 s → 10 s), counted from the failure.
* ``move_all_to_active_or_backoff`` (a cluster event that could help: a node added or changed in a way that
  matters, a pod deleted) moves every unschedulable pod back: to backoff if it is still backing off, else to
  active. An event that arrives while a pod is in flight sends that pod to backoff rather than to the
  unschedulable set, so the event is not missed (kube-scheduler's ``moveRequestCycle``).
* An event may concern only some pods (``which``, kube-scheduler's queueing hints): e.g. an assigned pod added
  wakes only the pods whose pod affinity or spread constraints it can satisfy (``assigned_pod_added``). Such an
  event seen while a concerned pod is in flight sends it to backoff too. Only unschedulable and in-flight pods
  are visited, so events stay cheap while thousands of pods are active.
* A pod left unschedulable for ``max_unschedulable`` seconds (60 s) is moved back anyway, as Kubernetes' periodic
  ``flushUnschedulablePodsLeftover`` does; expired backoffs move to active. Both happen in ``run`` (timers, no
  busy loop) or by calling ``flush`` with a fake clock in tests.
* ``nominator`` (scheduler/nominator.py) holds the pods nominated to nodes: ``add``/``update`` take the pod's
  ``status.nominatedNodeName``, ``delete`` drops it, as kube-scheduler's queue keeps its nominator.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from . import metrics
from .framework import Pod, pod_key, pod_priority
from .nominator import Nominator

__all__ = ["Nominator", "QueuedPodInfo", "SchedulingQueue", "pod_key", "pod_priority"]

Where = Literal["active", "backoff", "unschedulable", "in-flight"]

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_UNSCHEDULABLE = 60.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0  # kube-scheduler checks the leftover unschedulable pods every 30 s


@dataclass
class QueuedPodInfo:
    """A pod in the queue with its bookkeeping (kube-scheduler's ``QueuedPodInfo``)."""

    key: str
    pod: Pod
    timestamp: float  # when it was (re)queued; backoff counts from here
    initial_attempt: float | None = None  # when it was first popped
    attempts: int = 0
    seq: int = 0  # arrival order, the tie-breaker after priority
    where: Where = "active"
    cycle: int = 0  # scheduling cycle of its last pop
    unschedulable_plugins: set[str] = field(default_factory=set)
    missed_event: bool = False  # a targeted event concerned it while it was in flight


class SchedulingQueue:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic, initial_backoff: float = INITIAL_BACKOFF,
                 max_backoff: float = MAX_BACKOFF, max_unschedulable: float = MAX_UNSCHEDULABLE) -> None:
        self.clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable = max_unschedulable
        self._pods: dict[str, QueuedPodInfo] = {}
        self._active: list[tuple[int, int, str]] = []  # (-priority, seq, key); stale entries skipped on pop
        self._backoff: list[tuple[float, int, str]] = []  # (expiry, seq, key)
        self._seq = itertools.count()
        self._cycle = 0
        self._move_request_cycle = -1
        self._active_ready = asyncio.Event()
        self._timer_wakeup = asyncio.Event()
        self._closed = False
        self._parked: dict[str, QueuedPodInfo] = {}  # unschedulable or in flight (stale entries skipped)
        self.nominator = Nominator()

    # --- views ------------------------------------------------------------------------------------------------
    def where(self, key: str) -> Where | None:
        info = self._pods.get(key)
        return info.where if info else None

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._pods.get(key)

    def __len__(self) -> int:
        return len(self._pods)

    def pending(self) -> dict[str, int]:
        """How many pods in each place (for logs and tests)."""
        counts = dict.fromkeys(("active", "backoff", "unschedulable", "in-flight"), 0)
        for info in self._pods.values():
            counts[info.where] += 1
        return counts

    # --- informer side ----------------------------------------------------------------------------------------
    def add(self, pod: Pod) -> None:
        """A new pending pod (or one seen again): queue it as active unless it is already known."""
        key = pod_key(pod)
        info = self._pods.get(key)
        if info is not None:
            self.update(pod)
            return
        info = QueuedPodInfo(key, pod, self.clock(), seq=next(self._seq))
        self._pods[key] = info
        self.nominator.add(pod)
        self._push_active(info)
        metrics.incoming("active", "PodAdd")

    def update(self, pod: Pod) -> None:
        """The pending pod changed. An unschedulable pod whose spec or labels changed gets another try."""
        key = pod_key(pod)
        info = self._pods.get(key)
        if info is None:
            self.add(pod)
            return
        changed = _scheduling_relevant(info.pod) != _scheduling_relevant(pod)
        reprioritised = pod_priority(pod) != pod_priority(info.pod)
        self.nominator.update(info.pod, pod)
        info.pod = pod
        if info.where == "active" and reprioritised:
            self._push_active(info)
        if info.where == "unschedulable" and changed:
            self._move(info, "PodUpdate")

    def delete(self, key: str) -> None:
        """The pod is gone or bound: forget it and its nomination."""
        self._pods.pop(key, None)  # heap entries become stale and are skipped
        self.nominator.delete(key)

    def move_all_to_active_or_backoff(self, reason: str = "", which: Callable[[QueuedPodInfo], bool] | None = None
                                      ) -> int:
        """A cluster event that may make unschedulable pods fit: give them (those ``which`` accepts, default all)
        another try. Returns how many moved."""
        if which is None:
            self._move_request_cycle = self._cycle
        moved = 0
        for info in self._parked_infos():
            if which is not None and not which(info):
                continue
            if info.where == "unschedulable":
                self._move(info, reason or "Unknown")
                moved += 1
            else:
                info.missed_event = True
        return moved

    def _parked_infos(self) -> list[QueuedPodInfo]:
        out = []
        for key, info in list(self._parked.items()):
            if self._pods.get(key) is info and info.where in ("unschedulable", "in-flight"):
                out.append(info)
            else:
                del self._parked[key]
        return out

    # --- scheduler side ---------------------------------------------------------------------------------------
    async def pop(self) -> QueuedPodInfo:
        """Wait for an active pod and take it (it is in flight until ``done``/requeue)."""
        while True:
            info = self._pop_nowait()
            if info is not None:
                return info
            self._active_ready.clear()
            await self._active_ready.wait()

    def _pop_nowait(self) -> QueuedPodInfo | None:
        while self._active:
            _, seq, key = heapq.heappop(self._active)
            info = self._pods.get(key)
            if info is None or info.where != "active" or info.seq != seq:
                continue
            self._cycle += 1
            info.where, info.cycle = "in-flight", self._cycle
            info.missed_event = False
            self._parked[key] = info
            info.attempts += 1
            if info.initial_attempt is None:
                info.initial_attempt = self.clock()
            return info
        return None

    def done(self, key: str) -> None:
        """The attempt ended with the pod assumed (or gone): the queue forgets it."""
        info = self._pods.get(key)
        if info is not None and info.where == "in-flight":
            del self._pods[key]

    def add_unschedulable(self, info: QueuedPodInfo, plugins: set[str] | None = None) -> None:
        """No node fits. The pod waits for a cluster event, unless one already came during its attempt."""
        if self._pods.get(info.key) is not info:
            return  # deleted (or re-added) meanwhile
        info.timestamp = self.clock()
        info.unschedulable_plugins = plugins or set()
        if self._move_request_cycle >= info.cycle or info.missed_event:
            self._push_backoff(info)
            metrics.incoming("backoff", "ScheduleAttemptFailure")
        else:
            info.where = "unschedulable"
            self._parked[info.key] = info
            metrics.incoming("unschedulable", "ScheduleAttemptFailure")

    def add_backoff(self, info: QueuedPodInfo) -> None:
        """An error (e.g. a failed bind): try again after the pod's backoff."""
        current = self._pods.get(info.key)
        if current is None:
            self._pods[info.key] = info
        elif current is not info:
            return
        info.timestamp = self.clock()
        self._push_backoff(info)
        metrics.incoming("backoff", "ScheduleAttemptFailure")

    def backoff_expiry(self, info: QueuedPodInfo) -> float:
        duration: float = min(self.initial_backoff * 2 ** max(info.attempts - 1, 0), self.max_backoff)
        return info.timestamp + duration

    # --- time -------------------------------------------------------------------------------------------------
    def flush(self) -> None:
        """Move expired backoffs to active, and pods unschedulable for too long back to active/backoff."""
        now = self.clock()
        while self._backoff and self._backoff[0][0] <= now:
            _, seq, key = heapq.heappop(self._backoff)
            info = self._pods.get(key)
            if info is not None and info.where == "backoff" and info.seq == seq:
                self._push_active(info)
                metrics.incoming("active", "BackoffComplete")
        for info in self._parked_infos():
            if info.where == "unschedulable" and now - info.timestamp >= self.max_unschedulable:
                self._move(info, "UnschedulableTimeout")

    def next_deadline(self) -> float | None:
        """When ``flush`` next has something to do (None: nothing waits on time)."""
        deadlines = []
        while self._backoff:
            _, seq, key = self._backoff[0]
            info = self._pods.get(key)
            if info is not None and info.where == "backoff" and info.seq == seq:
                deadlines.append(self._backoff[0][0])
                break
            heapq.heappop(self._backoff)
        if any(info.where == "unschedulable" for info in self._parked_infos()):
            deadlines.append(self.clock() + UNSCHEDULABLE_FLUSH_PERIOD)
        return min(deadlines, default=None)

    async def run(self, stop: asyncio.Event) -> None:
        """Flush on time until ``stop``: sleeps until the next deadline or until the queue changes."""
        while not stop.is_set():
            self.flush()
            deadline = self.next_deadline()
            timeout = None if deadline is None else max(deadline - self.clock(), 0.0)
            self._timer_wakeup.clear()
            waiters = {asyncio.ensure_future(self._timer_wakeup.wait()), asyncio.ensure_future(stop.wait())}
            try:
                await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waiters:
                    w.cancel()

    # --- internals --------------------------------------------------------------------------------------------
    def _push_active(self, info: QueuedPodInfo) -> None:
        info.where, info.seq = "active", next(self._seq) if info.where != "active" else info.seq
        heapq.heappush(self._active, (-pod_priority(info.pod), info.seq, info.key))
        self._active_ready.set()

    def _push_backoff(self, info: QueuedPodInfo) -> None:
        info.where, info.seq = "backoff", next(self._seq)
        heapq.heappush(self._backoff, (self.backoff_expiry(info), info.seq, info.key))
        self._timer_wakeup.set()

    def _move(self, info: QueuedPodInfo, event: str) -> None:
        if self.backoff_expiry(info) > self.clock():
            self._push_backoff(info)
            metrics.incoming("backoff", event)
        else:
            self._push_active(info)
            metrics.incoming("active", event)
        self._timer_wakeup.set()


def _scheduling_relevant(pod: Pod) -> tuple[Any, Any]:
    """What an update must change for an unschedulable pod to deserve another try (not status, not RV)."""
    meta = pod.get("metadata", {})
    return pod.get("spec"), (meta.get("labels"), meta.get("annotations"))
