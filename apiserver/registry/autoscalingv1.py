"""autoscaling/v1 HorizontalPodAutoscalers: the same objects as autoscaling/v2, converted on the way in and out.

v1 knows one metric, ``targetCPUUtilizationPercentage`` (↔ v2's Resource cpu Utilization metric, and
``currentCPUUtilizationPercentage`` ↔ its current average utilization). So that a v1 client's read-modify-write
loses nothing, kube's conversion (``pkg/apis/autoscaling/v1/conversion.go``) carries the rest in annotations:

* ``autoscaling.alpha.kubernetes.io/metrics``: the other metrics, as v1 ``MetricSpec``s (the v2beta1 shape:
  ``targetAverageUtilization``, ``metricName`` …);
* ``autoscaling.alpha.kubernetes.io/current-metrics``: every current metric, as v1 ``MetricStatus``es;
* ``autoscaling.alpha.kubernetes.io/conditions``: ``status.conditions``;
* ``autoscaling.alpha.kubernetes.io/behavior``: ``spec.behavior`` (the internal Go struct, so its keys are Go's
  field names: ``{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[...]}}``).

Converting v1 → v2 lifts them back out and drops them from the annotations; a v1 object with no metric at all
gets the cpu 80 % default there (autoscaling/v1 used to apply it in the controller).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from apimachinery.errors import Cause
from apiserver.registry.horizontalpodautoscalers import (
    DEFAULT_CPU_UTILIZATION,
    HorizontalPodAutoscalerStrategy,
    cpu_utilization_metric,
)
from apiserver.registry.strategy import Object

METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
_STATUS_ANNOTATIONS = (CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION)
_GO_NAMES = {"scaleUp": "ScaleUp", "scaleDown": "ScaleDown", "stabilizationWindowSeconds": "StabilizationWindowSeconds",
             "selectPolicy": "SelectPolicy", "policies": "Policies", "type": "Type", "value": "Value",
             "periodSeconds": "PeriodSeconds"}
_JSON_NAMES = {go: name for name, go in _GO_NAMES.items()}


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _renamed(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {names.get(k, k): _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return value


def _behavior_to_go(behavior: dict[str, Any]) -> dict[str, Any]:
    go = _renamed(behavior, _GO_NAMES)
    return {"ScaleUp": go.get("ScaleUp"), "ScaleDown": go.get("ScaleDown")}


def _behavior_from_go(go: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in _renamed(go, _JSON_NAMES).items() if v is not None}


def _is_cpu_utilization(metric: dict[str, Any]) -> bool:
    resource = metric.get("resource") or {}
    return (metric.get("type") == "Resource" and resource.get("name") == "cpu"
            and ((resource.get("target") or {}).get("averageUtilization")) is not None)


# --- metric shapes: v2 ↔ v1 (v2beta1-like) --------------------------------------------------------------------

def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _spec_to_v1(metric: dict[str, Any]) -> dict[str, Any]:
    kind = metric.get("type")
    out: dict[str, Any] = {"type": kind}
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        src = metric.get(field) or {}
        target = src.get("target") or {}
        out[field] = _drop_none({"name": src.get("name"), "container": src.get("container"),
                                 "targetAverageUtilization": target.get("averageUtilization"),
                                 "targetAverageValue": target.get("averageValue")})
    elif kind == "Pods":
        src = metric.get("pods") or {}
        out["pods"] = _drop_none({"metricName": (src.get("metric") or {}).get("name"),
                                  "targetAverageValue": (src.get("target") or {}).get("averageValue", "0"),
                                  "selector": (src.get("metric") or {}).get("selector")})
    elif kind == "Object":
        src = metric.get("object") or {}
        target = src.get("target") or {}
        out["object"] = _drop_none({"target": src.get("describedObject"),
                                    "metricName": (src.get("metric") or {}).get("name"),
                                    "targetValue": target.get("value", "0"), "averageValue": target.get("averageValue"),
                                    "selector": (src.get("metric") or {}).get("selector")})
    elif kind == "External":
        src = metric.get("external") or {}
        target = src.get("target") or {}
        out["external"] = _drop_none({"metricName": (src.get("metric") or {}).get("name"),
                                      "metricSelector": (src.get("metric") or {}).get("selector"),
                                      "targetValue": target.get("value"),
                                      "targetAverageValue": target.get("averageValue")})
    return out


def _target(utilization: Any = None, average: Any = None, value: Any = None) -> dict[str, Any]:
    kind = "Utilization" if utilization is not None else "AverageValue" if average is not None else "Value"
    return _drop_none({"type": kind, "averageUtilization": utilization, "averageValue": average, "value": value})


def _spec_from_v1(metric: dict[str, Any]) -> dict[str, Any]:
    kind = metric.get("type")
    out: dict[str, Any] = {"type": kind}
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        src = metric.get(field) or {}
        out[field] = _drop_none({"name": src.get("name"), "container": src.get("container"),
                                 "target": _target(src.get("targetAverageUtilization"), src.get("targetAverageValue"))})
    elif kind == "Pods":
        src = metric.get("pods") or {}
        out["pods"] = {"metric": _drop_none({"name": src.get("metricName"), "selector": src.get("selector")}),
                       "target": _target(average=src.get("targetAverageValue"))}
    elif kind == "Object":
        src = metric.get("object") or {}
        out["object"] = {"describedObject": src.get("target") or {},
                         "metric": _drop_none({"name": src.get("metricName"), "selector": src.get("selector")}),
                         "target": _target(average=src.get("averageValue"), value=src.get("targetValue"))}
    elif kind == "External":
        src = metric.get("external") or {}
        out["external"] = {"metric": _drop_none({"name": src.get("metricName"),
                                                 "selector": src.get("metricSelector")}),
                           "target": _target(average=src.get("targetAverageValue"), value=src.get("targetValue"))}
    return out


def _status_to_v1(metric: dict[str, Any]) -> dict[str, Any]:
    kind = metric.get("type")
    out: dict[str, Any] = {"type": kind}
    field = {"Resource": "resource", "ContainerResource": "containerResource", "Pods": "pods", "Object": "object",
             "External": "external"}.get(kind or "")
    if field is None:
        return out
    src = metric.get(field) or {}
    current = src.get("current") or {}
    ident = src.get("metric") or {}
    if field in ("resource", "containerResource"):
        out[field] = _drop_none({"name": src.get("name"), "container": src.get("container"),
                                 "currentAverageUtilization": current.get("averageUtilization"),
                                 "currentAverageValue": current.get("averageValue", "0")})
    elif field == "pods":
        out[field] = _drop_none({"metricName": ident.get("name"), "selector": ident.get("selector"),
                                 "currentAverageValue": current.get("averageValue", "0")})
    elif field == "object":
        out[field] = _drop_none({"target": src.get("describedObject"), "metricName": ident.get("name"),
                                 "selector": ident.get("selector"), "currentValue": current.get("value", "0"),
                                 "averageValue": current.get("averageValue")})
    else:
        out[field] = _drop_none({"metricName": ident.get("name"), "metricSelector": ident.get("selector"),
                                 "currentValue": current.get("value", "0"),
                                 "currentAverageValue": current.get("averageValue")})
    return out


def _status_from_v1(metric: dict[str, Any]) -> dict[str, Any]:
    kind = metric.get("type")
    out: dict[str, Any] = {"type": kind}
    for field in ("resource", "containerResource"):
        if metric.get(field) is not None:
            src = metric[field]
            out[field] = _drop_none({"name": src.get("name"), "container": src.get("container"),
                                     "current": _drop_none({"averageUtilization": src.get("currentAverageUtilization"),
                                                            "averageValue": src.get("currentAverageValue")})})
    if metric.get("pods") is not None:
        src = metric["pods"]
        out["pods"] = {"metric": _drop_none({"name": src.get("metricName"), "selector": src.get("selector")}),
                       "current": _drop_none({"averageValue": src.get("currentAverageValue")})}
    if metric.get("object") is not None:
        src = metric["object"]
        out["object"] = {"describedObject": src.get("target") or {},
                         "metric": _drop_none({"name": src.get("metricName"), "selector": src.get("selector")}),
                         "current": _drop_none({"value": src.get("currentValue"),
                                                "averageValue": src.get("averageValue")})}
    if metric.get("external") is not None:
        src = metric["external"]
        out["external"] = {"metric": _drop_none({"name": src.get("metricName"),
                                                 "selector": src.get("metricSelector")}),
                           "current": _drop_none({"value": src.get("currentValue"),
                                                  "averageValue": src.get("currentAverageValue")})}
    return out


# --- whole objects ------------------------------------------------------------------------------------------

def v2_to_v1(obj: Object) -> Object:
    """``Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler`` (through the internal type)."""
    spec, status = obj.get("spec") or {}, obj.get("status")
    metadata = copy.deepcopy(obj.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    metrics = spec.get("metrics") or []
    v1_spec: dict[str, Any] = {"scaleTargetRef": spec.get("scaleTargetRef") or {}}
    if spec.get("minReplicas") is not None:
        v1_spec["minReplicas"] = spec["minReplicas"]
    v1_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    cpu = next((m for m in metrics if (m.get("type") == "Resource" and (m.get("resource") or {}).get("name") == "cpu")),
               None)
    if cpu is not None and _is_cpu_utilization(cpu):
        v1_spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    others = [_spec_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRICS_ANNOTATION] = _dumps(others)
    if spec.get("behavior") is not None:
        annotations[BEHAVIOR_ANNOTATION] = _dumps(_behavior_to_go(spec["behavior"]))
    out: Object = {"apiVersion": "autoscaling/v1", "kind": obj.get("kind", "HorizontalPodAutoscaler"),
                   "metadata": metadata, "spec": v1_spec}
    if status is not None:
        current = status.get("currentMetrics") or []
        if current:
            annotations[CURRENT_METRICS_ANNOTATION] = _dumps([_status_to_v1(m) for m in current])
        if status.get("conditions"):
            annotations[CONDITIONS_ANNOTATION] = _dumps(status["conditions"])
        v1_status = {k: status[k] for k in ("observedGeneration", "lastScaleTime") if status.get(k) is not None}
        v1_status.update(_replica_counts(status))
        for m in current:
            utilization = ((m.get("resource") or {}).get("current") or {}).get("averageUtilization")
            if m.get("type") == "Resource" and m["resource"].get("name") == "cpu" and utilization is not None:
                v1_status["currentCPUUtilizationPercentage"] = utilization
        out["status"] = v1_status
    if annotations:
        metadata["annotations"] = annotations
    return out


def _replica_counts(status: dict[str, Any]) -> dict[str, Any]:
    """currentReplicas and desiredReplicas: plain int32 in both versions, so always written."""
    return {"currentReplicas": status.get("currentReplicas", 0), "desiredReplicas": status.get("desiredReplicas", 0)}


def _pop_json(annotations: dict[str, str], key: str) -> Any:
    raw = annotations.pop(key, None)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def v1_to_v2(obj: Object) -> Object:
    """``Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`` (through the internal type)."""
    spec, status = obj.get("spec") or {}, obj.get("status")
    metadata = copy.deepcopy(obj.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    metrics: list[dict[str, Any]] = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.append(cpu_utilization_metric(spec["targetCPUUtilizationPercentage"]))
    metrics.extend(_spec_from_v1(m) for m in _pop_json(annotations, METRICS_ANNOTATION) or [])
    if not metrics:
        metrics.append(cpu_utilization_metric(DEFAULT_CPU_UTILIZATION))
    v2_spec: dict[str, Any] = {"scaleTargetRef": spec.get("scaleTargetRef") or {},
                               "maxReplicas": spec.get("maxReplicas", 0), "metrics": metrics}
    if spec.get("minReplicas") is not None:
        v2_spec["minReplicas"] = spec["minReplicas"]
    behavior = _pop_json(annotations, BEHAVIOR_ANNOTATION)
    if isinstance(behavior, dict):
        v2_spec["behavior"] = _behavior_from_go(behavior)
    current = _pop_json(annotations, CURRENT_METRICS_ANNOTATION)
    conditions = _pop_json(annotations, CONDITIONS_ANNOTATION)
    out: Object = {"apiVersion": "autoscaling/v2", "kind": obj.get("kind", "HorizontalPodAutoscaler"),
                   "metadata": metadata, "spec": v2_spec}
    if status is not None:
        v2_status = {k: status[k] for k in ("observedGeneration", "lastScaleTime") if status.get(k) is not None}
        v2_status.update(_replica_counts(status))
        if current is not None:
            v2_status["currentMetrics"] = [_status_from_v1(m) for m in current]
        elif status.get("currentCPUUtilizationPercentage") is not None:
            v2_status["currentMetrics"] = [{"type": "Resource", "resource": {
                "name": "cpu", "current": {"averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
        if conditions:
            v2_status["conditions"] = conditions
        out["status"] = v2_status
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    return out


def _in_v2(check: Callable[..., list[Cause]]) -> Callable[..., list[Cause]]:
    """Validate the v2 form of v1 objects, as kube validates the internal object whichever version came in."""
    def wrapped(self: HorizontalPodAutoscalerStrategy, *objs: Object) -> list[Cause]:
        return check(self, *(v1_to_v2(o) for o in objs))
    return wrapped


class HorizontalPodAutoscalerV1Strategy(HorizontalPodAutoscalerStrategy):
    """autoscaling/v1: its objects are v1-shaped in the handlers and the watch cache, v2 in etcd."""

    version = "v1"

    def prepare_for_create(self, obj: Object) -> None:
        obj["status"] = {"currentReplicas": 0, "desiredReplicas": 0}
        if (obj.setdefault("spec", {})).get("minReplicas") is None:
            obj["spec"]["minReplicas"] = 1

    def prepare_for_update(self, new: Object, old: Object) -> None:
        """Status is kept, and so are the annotations that carry the rest of it."""
        super(HorizontalPodAutoscalerStrategy, self).prepare_for_update(new, old)
        if (new.setdefault("spec", {})).get("minReplicas") is None:
            new["spec"]["minReplicas"] = 1
        old_annotations = old.get("metadata", {}).get("annotations") or {}
        annotations = {k: v for k, v in (new.setdefault("metadata", {}).get("annotations") or {}).items()
                       if k not in _STATUS_ANNOTATIONS}
        annotations.update({k: v for k, v in old_annotations.items() if k in _STATUS_ANNOTATIONS})
        if annotations:
            new["metadata"]["annotations"] = annotations
        else:
            new["metadata"].pop("annotations", None)

    validate = _in_v2(HorizontalPodAutoscalerStrategy.validate)
    validate_update = _in_v2(HorizontalPodAutoscalerStrategy.validate_update)
    validate_status_update = _in_v2(HorizontalPodAutoscalerStrategy.validate_status_update)

    def to_storage(self, obj: Object) -> Object:
        return v1_to_v2(obj)

    def from_storage(self, obj: Object) -> Object:
        return v2_to_v1(obj)
