"""The metrics.k8s.io objects as metrics-server shapes them, and the metav1 Time/Duration spellings they carry."""

from __future__ import annotations

import pytest

from apimachinery.meta import format_duration, format_rfc3339
from apiserver.metrics.api import node_metrics, pod_metrics, resource_list
from apiserver.metrics.collector import ContainerSample, NodeScrape, Point

NOW = 1796362374.0  # 2026-12-04T05:32:54Z


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (0.25, "250ms"), (1.5, "1.5s"), (15, "15s"), (20.037, "20.037s"), (60.25, "1m0.25s"),
    (3600, "1h0m0s"), (-1.5, "-1.5s"),
])
def test_durations_print_as_go_does(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_node_metrics() -> None:
    node = {"metadata": {"name": "node01", "labels": {"kubernetes.io/hostname": "node01"}, "uid": "u"}}
    obj = node_metrics(node, Point(NOW, 1.079, 137190727, 1234 * 1024), NOW)
    assert obj == {"kind": "NodeMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
                   "metadata": {"name": "node01", "creationTimestamp": format_rfc3339(NOW),
                                "labels": {"kubernetes.io/hostname": "node01"}},
                   "timestamp": "2026-12-04T05:32:54Z", "window": "1.079s",
                   "usage": {"cpu": "137190727n", "memory": "1234Ki"}}


def test_pod_metrics_lists_running_containers_in_spec_order() -> None:
    pod = {"metadata": {"name": "busy", "namespace": "default", "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "spin"}, {"name": "idle"}, {"name": "waiting"}],
                    "initContainers": [{"name": "setup"}, {"name": "proxy", "restartPolicy": "Always"}]}}
    base = NodeScrape(NOW - 2, 0.0, 0, {("default", "busy", "spin"): ContainerSample(1.0, 4096, NOW - 60)})
    current = NodeScrape(NOW, 0.0, 0, {("default", "busy", "spin"): ContainerSample(3.0, 4096, NOW - 60),
                                       ("default", "busy", "idle"): ContainerSample(0.0, 8192, NOW - 1),
                                       ("default", "busy", "proxy"): ContainerSample(0.5, 1024, NOW - 1)})
    obj = pod_metrics(pod, base, current, NOW)
    assert obj is not None and obj["kind"] == "PodMetrics" and obj["window"] == "2s"
    assert obj["metadata"]["namespace"] == "default" and obj["metadata"]["labels"] == {"app": "web"}
    assert obj["containers"] == [{"name": "spin", "usage": {"cpu": "1", "memory": "4Ki"}},
                                 {"name": "idle", "usage": {"cpu": "0", "memory": "8Ki"}},
                                 {"name": "proxy", "usage": {"cpu": "500m", "memory": "1Ki"}}]
    assert pod_metrics({**pod, "metadata": {"name": "other", "namespace": "default"}}, base, current, NOW) is None


def test_discovery() -> None:
    doc = resource_list("v1beta1")
    assert doc is not None and doc["groupVersion"] == "metrics.k8s.io/v1beta1"
    assert [(r["name"], r["kind"], r["namespaced"]) for r in doc["resources"]] == [
        ("nodes", "NodeMetrics", False), ("pods", "PodMetrics", True)]
    assert resource_list("v1") is None
