"""client-go's metrics: the REST client's (``tools/metrics``) and the workqueues' (``util/workqueue`` with
component-base's Prometheus provider), with kube 1.32's names, labels and buckets.

They live in the process's registry (``apimachinery.metrics``), so every component that talks to the apiserver
exposes ``rest_client_requests_total{code,host,method}`` and ``rest_client_request_duration_seconds{host,verb}``
on its ``/metrics``, and every named queue (``Controller`` queues carry kube's names: ``replicaset``,
``deployment``, ``endpoint_slice`` …) its ``workqueue_*`` series. Unnamed queues are not measured, as in client-go.

Cost: a request or a queue operation costs a dictionary look-up and one or two lock-free counter/histogram updates
(``apimachinery.metrics``); the ``workqueue_unfinished_work_seconds`` and
``workqueue_longest_running_processor_seconds`` gauges are computed when scraped (client-go refreshes them every
500 ms), so idle queues cost nothing.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Hashable, Iterator

from aiohttp import web
from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from apimachinery.metrics import CONTENT_TYPE, Counter, Gauge, Histogram, exponential_buckets, scrape

# --- the REST client ---------------------------------------------------------------------------------------------
REQUEST_LATENCY = Histogram(
    "rest_client_request_duration_seconds", "Request latency in seconds. Broken down by verb, and host.",
    ["verb", "host"], buckets=[0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0])
REQUEST_RESULT = Counter(
    "rest_client_requests_total", "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"])



def observe_request(method: str, host: str, code: str, seconds: float) -> None:
    """One request's result (``code``: the status, or ``<error>`` when no response came) and latency."""
    REQUEST_LATENCY.labels(method, host).observe(seconds)
    REQUEST_RESULT.labels(code, method, host).inc()


# --- workqueues --------------------------------------------------------------------------------------------------
_WORK_BUCKETS = exponential_buckets(10e-9, 10, 10)
DEPTH = Gauge("workqueue_depth", "Current depth of workqueue", ["name"])
ADDS = Counter("workqueue_adds_total", "Total number of adds handled by workqueue", ["name"])
QUEUE_LATENCY = Histogram("workqueue_queue_duration_seconds",
                          "How long in seconds an item stays in workqueue before being requested.",
                          ["name"], buckets=_WORK_BUCKETS)
WORK_DURATION = Histogram("workqueue_work_duration_seconds",
                          "How long in seconds processing an item from workqueue takes.",
                          ["name"], buckets=_WORK_BUCKETS)
RETRIES = Counter("workqueue_retries_total", "Total number of retries handled by workqueue", ["name"])


class QueueMetrics:
    """One named queue's series; the queue calls ``add`` (an item entered), ``get`` (a worker took it), ``done``
    (the worker finished it) and ``retry`` (``add_after``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._depth = DEPTH.labels(name)
        self._adds = ADDS.labels(name)
        self._latency = QUEUE_LATENCY.labels(name)
        self._work = WORK_DURATION.labels(name)
        self._retries = RETRIES.labels(name)
        self._added_at: dict[Hashable, float] = {}
        self.processing_since: dict[Hashable, float] = {}
        _QUEUES.add(self)

    def add(self, item: Hashable) -> None:
        self._adds.inc()
        self._depth.inc()
        self._added_at.setdefault(item, time.monotonic())

    def get(self, item: Hashable) -> None:
        now = time.monotonic()
        self._depth.dec()
        added = self._added_at.pop(item, None)
        if added is not None:
            self._latency.observe(now - added)
        self.processing_since[item] = now

    def done(self, item: Hashable) -> None:
        started = self.processing_since.pop(item, None)
        if started is not None:
            self._work.observe(time.monotonic() - started)

    def retry(self) -> None:
        self._retries.inc()


_QUEUES: weakref.WeakSet[QueueMetrics] = weakref.WeakSet()


class _InProgress(Collector):
    """``workqueue_unfinished_work_seconds`` and ``workqueue_longest_running_processor_seconds``, at scrape time."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by work_duration. "
            "Large values indicate stuck threads. One can deduce the number of stuck threads by observing the "
            "rate at which this increases.", labels=["name"])
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.", labels=["name"])
        now = time.monotonic()
        by_name: dict[str, list[float]] = {}
        for queue in list(_QUEUES):  # two queues of one name (a restarted controller) are one series
            by_name.setdefault(queue.name, []).extend(now - started for started in queue.processing_since.values())
        for name, ages in sorted(by_name.items()):
            unfinished.add_metric([name], sum(ages))
            longest.add_metric([name], max(ages, default=0.0))
        yield unfinished
        yield longest


REGISTRY.register(_InProgress())


def queue_metrics(name: str) -> QueueMetrics | None:
    """The series of the queue ``name``; None for an unnamed queue (not measured)."""
    return QueueMetrics(name) if name else None


async def serve(request: web.Request) -> web.Response:
    """``GET /metrics`` for the components' aiohttp servers (scheduler, controller-manager, kubelet)."""
    return web.Response(body=scrape(), headers={"Content-Type": CONTENT_TYPE})
