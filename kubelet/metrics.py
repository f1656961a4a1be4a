"""The kubelet's metrics (``pkg/kubelet/metrics``), kube 1.32's names, labels and buckets, served on ``/metrics``
of the kubelet's server beside ``/metrics/resource``.

Pod workers record what happens to them (a start, a sync, a runtime call); ``kubelet_running_pods`` and
``kubelet_running_containers`` are counted from the live pod workers when scraped, as kube counts them from the
runtime's cache. Hollow nodes run several kubelets in one process: they share the process's registry, so
``kubelet_node_name`` has one series per node and the counts add up over them.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from apimachinery.metrics import Counter, Gauge, Histogram, exponential_buckets

_POD_START_BUCKETS = [0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200,
                      1800, 2700, 3600]

NODE_NAME = Gauge("kubelet_node_name", "The node's name. The count is always 1.", ["node"])
POD_START_DURATION = Histogram(
    "kubelet_pod_start_duration_seconds",
    "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
    buckets=_POD_START_BUCKETS)
POD_START_SLI_DURATION = Histogram(
    "kubelet_pod_start_sli_duration_seconds",
    "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod "
    "creation timestamp to when all its containers are reported as started and observed via watch",
    buckets=_POD_START_BUCKETS)
POD_WORKER_DURATION = Histogram(
    "kubelet_pod_worker_duration_seconds",
    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
    ["operation_type"])  # kube: metrics.DefBuckets, prometheus_client's default
STARTED_PODS = Counter("kubelet_started_pods_total", "Cumulative number of pods started")
RUNTIME_OPERATIONS = Counter("kubelet_runtime_operations_total",
                             "Cumulative number of runtime operations by operation type.", ["operation_type"])
RUNTIME_OPERATIONS_DURATION = Histogram(
    "kubelet_runtime_operations_duration_seconds", "Duration in seconds of runtime operations. Broken down by "
    "operation type.", ["operation_type"], buckets=exponential_buckets(.005, 2.5, 14))


def runtime_operation(operation: str, seconds: float) -> None:
    """One call into the container runtime (``start_container``, ``stop_container``)."""
    RUNTIME_OPERATIONS.labels(operation).inc()
    RUNTIME_OPERATIONS_DURATION.labels(operation).observe(seconds)


class Kubelets(Protocol):
    def pod_container_statuses(self) -> Iterable[Iterable[Mapping[str, Any]]]:
        """The containerStatuses of each live pod worker."""
        ...


def container_state(status: Mapping[str, Any]) -> str | None:
    """kube's ``container_state`` of a containerStatus: the runtime's view, so a container waiting to restart is
    the ``exited`` one it was, and one waiting for its first start (an image pull) is no container yet (None)."""
    state = next(iter(status.get("state") or {}), "")
    if state == "running":
        return "running"
    if state == "terminated" or (state == "waiting" and "terminated" in (status.get("lastState") or {})):
        return "exited"
    return None if state == "waiting" else "unknown"


class _Running(Collector):
    """``kubelet_running_pods`` and ``kubelet_running_containers{container_state}``, at scrape time."""

    def __init__(self) -> None:
        self.kubelets: weakref.WeakSet[Kubelets] = weakref.WeakSet()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        pods = 0
        containers = dict.fromkeys(("created", "running", "exited", "unknown"), 0)
        for kubelet in list(self.kubelets):
            for statuses in kubelet.pod_container_statuses():
                states = [state for status in statuses if (state := container_state(status)) is not None]
                pods += "running" in states
                for state in states:
                    containers[state] += 1
        running_pods = GaugeMetricFamily("kubelet_running_pods", "Number of pods that have a running pod sandbox")
        running_pods.add_metric([], pods)
        yield running_pods
        running = GaugeMetricFamily("kubelet_running_containers", "Number of containers currently running",
                                    labels=["container_state"])
        for state, count in containers.items():
            running.add_metric([state], count)
        yield running


_RUNNING = _Running()
REGISTRY.register(_RUNNING)


def register(kubelet: Kubelets, node_name: str) -> None:
    """Count ``kubelet``'s pods and containers (held weakly) and name its node in ``kubelet_node_name``."""
    _RUNNING.kubelets.add(kubelet)
    NODE_NAME.labels(node_name).set(1)
