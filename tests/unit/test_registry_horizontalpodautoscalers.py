"""HorizontalPodAutoscalers: autoscaling/v2 defaults and ValidateHorizontalPodAutoscaler's causes, the table kubectl
prints (TARGETS as ``cpu: 12%/50%``), and the v1 ↔ v2 conversion with kube's round-trip annotations."""

from __future__ import annotations

import json
from typing import Any

from apiserver.registry.autoscalingv1 import (
    BEHAVIOR_ANNOTATION,
    CONDITIONS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    METRICS_ANNOTATION,
    HorizontalPodAutoscalerV1Strategy,
    v1_to_v2,
    v2_to_v1,
)
from apiserver.registry.horizontalpodautoscalers import HorizontalPodAutoscalerStrategy, format_hpa_metrics

V2 = HorizontalPodAutoscalerStrategy()
V1 = HorizontalPodAutoscalerV1Strategy()
CPU50 = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
MEMORY = {"type": "Resource",
          "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}


def messages(causes: list[Any]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def hpa(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "maxReplicas": 5, **spec}}


def test_defaults_min_replicas_cpu_metric_and_a_given_behavior() -> None:
    obj = hpa(status={"currentReplicas": 3})
    V2.prepare_for_create(obj)
    assert obj["spec"]["minReplicas"] == 1
    assert obj["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert "behavior" not in obj["spec"] and obj["status"] == {"desiredReplicas": 0}
    obj = hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 10}})
    V2.prepare_for_create(obj)
    assert obj["spec"]["behavior"] == {
        "scaleDown": {"stabilizationWindowSeconds": 10, "selectPolicy": "Max",
                      "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                                 {"type": "Percent", "value": 100, "periodSeconds": 15}]}}
    assert V2.validate(obj) == []


def test_validation_follows_validate_horizontal_pod_autoscaler() -> None:
    assert messages(V2.validate(hpa(minReplicas=7, maxReplicas=5))) == [
        "spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`"]
    assert messages(V2.validate(hpa(minReplicas=0, maxReplicas=0, scaleTargetRef={"kind": "Deployment"}))) == [
        "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
        "spec.maxReplicas: Invalid value: 0: must be greater than 0",
        "spec.scaleTargetRef.name: Required value",
        "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero "
        "replicas"]
    bad_metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                               "averageUtilization": 0}}},
                   {"type": "Pods"},
                   {"type": "Bogus"}]
    assert messages(V2.validate(hpa(metrics=bad_metrics))) == [
        "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
        "spec.metrics[1].pods: Required value: must populate information for the given metric source",
        'spec.metrics[2].type: Unsupported value: "Bogus": supported values: "ContainerResource", "External", '
        '"Object", "Pods", "Resource"',
    ]
    behavior = {"scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Any", "policies": []},
                "scaleDown": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 2000}]}}
    assert messages(V2.validate(hpa(behavior=behavior))) == [
        "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
        'spec.behavior.scaleUp.selectPolicy: Unsupported value: "Any": supported values: "Disabled", "Max", "Min"',
        "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
        "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
        "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 2000: must be less than or equal to 1800",
    ]
    status = {**hpa(), "status": {"currentReplicas": -1, "desiredReplicas": 2}}
    assert messages(V2.validate_status_update(status, hpa())) == [
        "status.currentReplicas: Invalid value: -1: must be greater than or equal to 0"]


def test_table_shows_reference_targets_and_replicas_as_kubectl() -> None:
    assert [c.name for c in V2.columns()] == ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"]
    obj = hpa(minReplicas=1, metrics=[CPU50])
    assert V2.row(obj)[:6] == ["web", "Deployment/web", "cpu: <unknown>/50%", "1", 5, 0]
    obj["status"] = {"currentReplicas": 2, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 12,
                                                                    "averageValue": "12m"}}}]}
    assert V2.row(obj)[2:6] == ["cpu: 12%/50%", "1", 5, 2]
    assert format_hpa_metrics([CPU50, MEMORY, CPU50], [{"type": ""}]) == \
        "cpu: <unknown>/50%, memory: <unknown>/100Mi + 1 more..."
    assert format_hpa_metrics([], []) == "<none>"
    assert V1.row(v2_to_v1(obj))[:6] == V2.row(obj)[:6]


def test_v1_round_trips_through_v2_with_kubes_annotations() -> None:
    v2 = hpa(minReplicas=2, metrics=[CPU50, MEMORY], behavior={"scaleDown": {"stabilizationWindowSeconds": 10}})
    v2["status"] = {"currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": [
        {"type": "Resource",
         "resource": {"name": "cpu", "current": {"averageUtilization": 70, "averageValue": "70m"}}}],
        "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}]}
    v1 = v2_to_v1(v2)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {"scaleTargetRef": v2["spec"]["scaleTargetRef"], "minReplicas": 2, "maxReplicas": 5,
                          "targetCPUUtilizationPercentage": 50}
    assert v1["status"] == {"currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 70}
    annotations = v1["metadata"]["annotations"]
    assert json.loads(annotations[METRICS_ANNOTATION]) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}}]
    assert json.loads(annotations[CURRENT_METRICS_ANNOTATION]) == [
        {"type": "Resource",
         "resource": {"name": "cpu", "currentAverageUtilization": 70, "currentAverageValue": "70m"}}]
    assert json.loads(annotations[BEHAVIOR_ANNOTATION]) == {
        "ScaleUp": None, "ScaleDown": {"StabilizationWindowSeconds": 10}}
    assert json.loads(annotations[CONDITIONS_ANNOTATION]) == v2["status"]["conditions"]
    back = v1_to_v2(v1)
    assert back["spec"] == v2["spec"] and back["status"] == v2["status"]
    assert "annotations" not in back["metadata"]


def test_v1_without_a_target_gets_the_cpu_default_and_keeps_status_annotations_on_update() -> None:
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
          "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}}
    V1.prepare_for_create(v1)
    assert v1["spec"]["minReplicas"] == 1 and V1.validate(v1) == []
    stored = V1.to_storage(v1)
    assert stored["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert V1.from_storage(stored)["spec"]["targetCPUUtilizationPercentage"] == 80
    old = {**v1, "metadata": {"name": "web", "annotations": {CONDITIONS_ANNOTATION: "[]", "team": "a"}}}
    new = {**v1, "metadata": {"name": "web", "annotations": {"team": "b"}}, "spec": {**v1["spec"], "maxReplicas": 0}}
    V1.prepare_for_update(new, old)
    assert new["metadata"]["annotations"] == {"team": "b", CONDITIONS_ANNOTATION: "[]"}
    assert messages(V1.validate_update(new, old)) == [
        "spec.maxReplicas: Invalid value: 0: must be greater than 0",
        "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`"]
