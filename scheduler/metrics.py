"""kube-scheduler's metrics (``pkg/scheduler/metrics``), kube 1.32's names, labels and buckets, served on the
scheduler's ``/metrics`` (its healthz port).

Every update is a counter increment or one histogram observation per scheduling cycle, not per node or plugin, so
scheduling throughput does not notice them. ``scheduler_pending_pods`` is counted from the queue when scraped
(kube updates the gauge on every queue move). ``scheduler_framework_extension_point_duration_seconds`` covers the
extension points the loop itself runs (PostFilter, PreBind, Bind); the filter and score phases run batched over
the node table (``runner.py``) and have no per-extension-point timing.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator
from typing import Protocol

from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from apimachinery.metrics import Counter, Histogram, exponential_buckets

SCHEDULED, UNSCHEDULABLE, ERROR = "scheduled", "unschedulable", "error"

SCHEDULE_ATTEMPTS = Counter(
    "scheduler_schedule_attempts_total",
    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, "
    "while 'error' means an internal scheduler problem.", ["result", "profile"])
ATTEMPT_DURATION = Histogram(
    "scheduler_scheduling_attempt_duration_seconds",
    "Scheduling attempt latency in seconds (scheduling algorithm + binding)", ["result", "profile"],
    buckets=exponential_buckets(0.001, 2, 15))
SLI_DURATION = Histogram(
    "scheduler_pod_scheduling_sli_duration_seconds",
    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might involve "
    "multiple scheduling attempts.", ["attempts"], buckets=exponential_buckets(0.01, 2, 20))
POD_ATTEMPTS = Histogram(
    "scheduler_pod_scheduling_attempts", "Number of attempts to successfully schedule a pod.",
    buckets=exponential_buckets(1, 2, 5))
EXTENSION_POINT_DURATION = Histogram(
    "scheduler_framework_extension_point_duration_seconds",
    "Latency for running all plugins of a specific extension point.", ["extension_point", "status", "profile"],
    buckets=exponential_buckets(0.0001, 2, 12))
INCOMING_PODS = Counter(
    "scheduler_queue_incoming_pods_total",
    "Number of pods added to scheduling queues by event and queue type.", ["queue", "event"])
PREEMPTION_ATTEMPTS = Counter("scheduler_preemption_attempts_total",
                              "Total preemption attempts in the cluster till now")
PREEMPTION_VICTIMS = Histogram("scheduler_preemption_victims", "Number of selected preemption victims",
                               buckets=exponential_buckets(1, 2, 7))



def pod_scheduled(profile: str, seconds: float, attempts: int, since_first_attempt: float) -> None:
    """A pod was bound: its cycle's latency, and its whole way through the queue (kube's SLI)."""
    SCHEDULE_ATTEMPTS.labels(SCHEDULED, profile).inc()
    ATTEMPT_DURATION.labels(SCHEDULED, profile).observe(seconds)
    SLI_DURATION.labels(str(attempts) if attempts < 15 else "15+").observe(since_first_attempt)
    POD_ATTEMPTS.observe(attempts)


def pod_failed(result: str, profile: str, seconds: float) -> None:
    """A cycle ended ``unschedulable`` (no node fits) or in ``error``."""
    SCHEDULE_ATTEMPTS.labels(result, profile).inc()
    ATTEMPT_DURATION.labels(result, profile).observe(seconds)


def extension_point(point: str, status: str, profile: str, started: float) -> None:
    """The plugins of ``point`` ran from ``started`` (``time.monotonic()``) until now and returned ``status``."""
    EXTENSION_POINT_DURATION.labels(point, status, profile).observe(time.monotonic() - started)


def incoming(queue: str, event: str) -> None:
    """A pod entered the ``active``, ``backoff`` or ``unschedulable`` queue because of ``event``."""
    INCOMING_PODS.labels(queue, event).inc()


class PendingCounts(Protocol):
    def pending(self) -> dict[str, int]: ...


class _PendingPods(Collector):
    """``scheduler_pending_pods{queue}`` from the registered queue's counts, at scrape time."""

    def __init__(self) -> None:
        self.queue: weakref.ref[PendingCounts] | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("scheduler_pending_pods",
                                   "Number of pending pods, by the queue type. 'active' means number of pods in "
                                   "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
                                   "number of pods in unschedulablePods that the scheduler attempted to schedule "
                                   "and failed; 'gated' is the number of unschedulable pods that the scheduler "
                                   "never attempted to schedule because they are gated.", labels=["queue"])
        queue = self.queue() if self.queue is not None else None
        counts = queue.pending() if queue is not None else {}
        for name in ("active", "backoff", "unschedulable", "gated"):
            family.add_metric([name], counts.get(name, 0))
        yield family


_PENDING = _PendingPods()
REGISTRY.register(_PENDING)


def count_pending(queue: PendingCounts) -> None:
    """Report ``queue.pending()`` as ``scheduler_pending_pods``: the scheduler of this process registers its queue
    (held weakly, so a scheduler closed in a test does not linger)."""
    _PENDING.queue = weakref.ref(queue)
