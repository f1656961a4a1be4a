"""The HPA's arithmetic, without a cluster: kube's replica calculator for resource metrics (utilization against
requests, tolerance, missing metrics, unready pods in the cpu initialization period) and the normalization of a
proposal (the downscale stabilization window, scale-up limit, behavior windows and policies, min/max)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers.horizontal import scale_target, set_condition
from controllers.support.hpanormalize import Recommendations, normalize, normalize_with_behavior
from controllers.support.replicacalculator import (
    MetricsError,
    PodMetric,
    group_pods,
    pod_metrics,
    raw_resource_replicas,
    resource_replicas,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
LONG_AGO = "2026-01-01T11:00:00Z"
WINDOW = timedelta(minutes=5)


def pod(name: str, cpu: str | None = "100m", *, phase: str = "Running", ready: str = "True",
        started: str = LONG_AGO, ready_at: str = LONG_AGO, **meta: Any) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu}} if cpu else {}
    return {"metadata": {"name": name, "namespace": "default", **meta},
            "spec": {"containers": [{"name": "c", "resources": resources}]},
            "status": {"phase": phase, "startTime": started,
                       "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": ready_at}]}}


def usage(**milli: int) -> dict[str, PodMetric]:
    return {name: PodMetric(value, NOW - timedelta(seconds=5), timedelta(seconds=10)) for name, value in milli.items()}


def test_utilization_above_and_below_target_and_within_tolerance() -> None:
    pods = [pod("a"), pod("b")]
    up = resource_replicas(2, 50, "cpu", pods, usage(a=100, b=100), NOW)
    assert (up.replicas, up.utilization, up.raw) == (4, 100, 100)
    down = resource_replicas(2, 50, "cpu", pods, usage(a=10, b=10), NOW)
    assert (down.replicas, down.utilization) == (1, 10)
    assert resource_replicas(2, 50, "cpu", pods, usage(a=54, b=54), NOW).replicas == 2  # |1 - 1.08| <= 0.1


def test_missing_requests_metrics_and_pods_are_kubes_errors() -> None:
    with pytest.raises(MetricsError, match="missing request for cpu in container c of Pod a"):
        resource_replicas(1, 50, "cpu", [pod("a", cpu=None)], usage(a=10), NOW)
    with pytest.raises(MetricsError, match="no pods returned by selector while calculating replica count"):
        resource_replicas(1, 50, "cpu", [], usage(a=10), NOW)
    with pytest.raises(MetricsError, match=r"did not receive metrics for targeted pods \(pods might be unready\)"):
        resource_replicas(1, 50, "cpu", [pod("a", phase="Pending")], usage(a=10), NOW)


def test_missing_metrics_count_as_full_on_scale_down_and_empty_on_scale_up() -> None:
    pods = [pod("a"), pod("b"), pod("c")]
    # scale-down: c (no metric) counts as using 100 % of its request → (10+10+100)/300 = 40 % of 50 → 0.8 → 3
    assert resource_replicas(3, 50, "cpu", pods, usage(a=10, b=10), NOW).replicas == 3
    # scale-up: c counts as 0 → (200+200+0)/300 = 133 % → ratio 2.66 → ceil(2.66 × 3) = 8
    assert resource_replicas(3, 50, "cpu", pods, usage(a=200, b=200), NOW).replicas == 8


def test_unready_pods_during_cpu_initialization_count_as_zero_on_scale_up() -> None:
    just_started = (NOW - timedelta(seconds=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pods = [pod("a"), pod("b", started=just_started, ready_at=just_started, ready="False")]
    groups = group_pods(pods, usage(a=100, b=100), "cpu", NOW)
    assert (groups.ready, groups.unready) == (1, {"b"})
    # a alone: 200 % of request = ratio 4; with b as 0: 100 % → ratio 2 → ceil(2 × 2) = 4
    assert resource_replicas(2, 50, "cpu", pods, usage(a=200, b=100), NOW).replicas == 4
    # a sample that started before the pod turned Ready does not count during the initialization period
    ready_now = (NOW - timedelta(seconds=8)).strftime("%Y-%m-%dT%H:%M:%SZ")
    fresh = pod("c", started=just_started, ready_at=ready_now)
    assert group_pods([fresh], usage(c=100), "cpu", NOW).unready == {"c"}
    assert group_pods([pod("d", deletionTimestamp=LONG_AGO)], usage(d=1), "cpu", NOW).ignored == {"d"}


def test_average_value_targets_and_the_metrics_api_shape() -> None:
    pods = [pod("a"), pod("b")]
    proposal = raw_resource_replicas(2, 100, "cpu", pods, usage(a=300, b=300), NOW)
    assert (proposal.replicas, proposal.utilization, proposal.raw) == (6, None, 300)
    items = [{"metadata": {"name": "a"}, "timestamp": "2026-01-01T11:59:55Z", "window": "10.5s",
              "containers": [{"name": "c", "usage": {"cpu": "250000000n", "memory": "1Mi"}},
                             {"name": "d", "usage": {"cpu": "50m", "memory": "1Mi"}}]},
             {"metadata": {"name": "b"}, "timestamp": "2026-01-01T11:59:55Z", "window": "10s",
              "containers": [{"name": "c", "usage": {"memory": "1Mi"}}]}]
    metrics = pod_metrics(items, "cpu")
    assert list(metrics) == ["a"] and metrics["a"].value == 300 and metrics["a"].window == timedelta(seconds=10.5)
    assert pod_metrics(items, "cpu", "d")["a"].value == 50


def test_normalize_stabilizes_scale_down_and_limits_scale_up() -> None:
    recs = Recommendations()
    recs.record_initial(4, NOW - timedelta(minutes=1))
    desired, conditions = normalize(recs, 4, 1, 1, 10, NOW, WINDOW)
    assert desired == 4
    assert conditions == [
        ("AbleToScale", "True", "ScaleDownStabilized",
         "recent recommendations were higher than current one, applying the highest recent recommendation"),
        ("ScalingLimited", "False", "DesiredWithinRange", "the desired count is within the acceptable range")]
    later = NOW + WINDOW + timedelta(seconds=1)  # both earlier recommendations left the window
    assert normalize(recs, 4, 1, 2, 10, later, WINDOW)[0] == 2
    desired, conditions = normalize(Recommendations(), 2, 9, 1, 10, NOW, WINDOW)
    assert desired == 4 and conditions[1][2] == "ScaleUpLimit"
    assert normalize(Recommendations(), 2, 4, 1, 3, NOW, WINDOW)[1][1] == (
        "ScalingLimited", "True", "TooManyReplicas", "the desired replica count is more than the maximum replica count")


def test_behavior_windows_and_policies() -> None:
    behavior = {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
                "scaleDown": {"stabilizationWindowSeconds": 10, "selectPolicy": "Max",
                              "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}]}}
    recs = Recommendations()
    recs.record_initial(1, NOW)
    desired, conditions = normalize_with_behavior(recs, behavior, 1, 5, 1, 10, NOW, WINDOW)
    assert desired == 2 and conditions[1][2] == "ScaleUpLimit"  # one pod per minute
    recs.store_scale_event(behavior, 1, 2, NOW)
    assert normalize_with_behavior(recs, behavior, 2, 5, 1, 10, NOW + timedelta(seconds=1), WINDOW)[0] == 2
    # down: the 10 s window still holds higher recommendations, then 50 % per minute
    assert normalize_with_behavior(recs, behavior, 4, 1, 1, 10, NOW + timedelta(seconds=2), WINDOW)[0] == 4
    later = NOW + timedelta(seconds=30)
    desired, conditions = normalize_with_behavior(Recommendations(), behavior, 4, 1, 1, 10, later, WINDOW)
    assert desired == 2 and conditions[1][2] == "ScaleDownLimit"
    disabled = {**behavior, "scaleDown": {**behavior["scaleDown"], "selectPolicy": "Disabled"}}
    assert normalize_with_behavior(Recommendations(), disabled, 4, 1, 1, 10, later, WINDOW)[0] == 4


def test_conditions_and_scale_targets() -> None:
    hpa: dict[str, Any] = {}
    set_condition(hpa, ("AbleToScale", "True", "SucceededGetScale", "m"), NOW)
    set_condition(hpa, ("AbleToScale", "True", "SucceededRescale", "n"), NOW + timedelta(minutes=1))
    assert hpa["status"]["conditions"] == [{"type": "AbleToScale", "lastTransitionTime": "2026-01-01T12:00:00Z",
                                            "status": "True", "reason": "SucceededRescale", "message": "n"}]
    assert scale_target({"apiVersion": "apps/v1", "kind": "Deployment"}).plural == "deployments"
    assert scale_target({"apiVersion": "v1", "kind": "ReplicationController"}).plural == "replicationcontrollers"
    with pytest.raises(LookupError, match='no matches for kind "StatefulSet" in group "apps"'):
        scale_target({"apiVersion": "apps/v1", "kind": "StatefulSet"})
