"""HorizontalPodAutoscalers (autoscaling/v2, the storage version): how many replicas a scalable target should run.

What kube-apiserver does, and where:

* ``SetDefaults_HorizontalPodAutoscaler`` (v2): ``minReplicas`` 1, no metrics → cpu Utilization 80 %, and a
  ``behavior`` that is set gets every unset rule, policy list, selectPolicy and window filled from the defaults
  (``GenerateHPAScaleUpRules`` / ``GenerateHPAScaleDownRules``); an unset behavior stays unset;
* ``PrepareForCreate`` clears ``status`` (``desiredReplicas: 0`` is all a new one shows); an update keeps it
  (status subresource) and bumps the generation on a spec change;
* ``ValidateHorizontalPodAutoscaler``: minReplicas ≥ 1, maxReplicas > 0 and ≥ minReplicas, the scale target's kind
  and name, each metric (type, its one source, the target), the behavior's windows and policies;
  ``ValidateHorizontalPodAutoscalerStatusUpdate``: non-negative replica counts;
* ``kubectl get hpa`` prints NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE (``printHorizontalPodAutoscaler``:
  TARGETS like ``cpu: 12%/50%``, ``<unknown>`` for a metric not measured yet, at most two then ``+ N more...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.quantity import parse_quantity
from apimachinery.validation import (
    forbidden,
    invalid,
    not_supported,
    path_segment_problems,
    required,
    validate_nonnegative,
)
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

DEFAULT_CPU_UTILIZATION = 80
MAX_STABILIZATION_WINDOW_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800
METRIC_SOURCE_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
METRIC_SOURCE_FIELDS = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
                        "ContainerResource": "containerResource"}
SELECT_POLICIES = ("Disabled", "Max", "Min")
POLICY_TYPES = ("Percent", "Pods")


def default_scale_up() -> dict[str, Any]:
    """``GenerateHPAScaleUpRules(nil)``: no window, the larger of 4 pods or 100 % per 15 s."""
    return {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                         {"type": "Percent", "value": 100, "periodSeconds": 15}]}


def default_scale_down() -> dict[str, Any]:
    """``GenerateHPAScaleDownRules(nil)``: a 5 minute window, then up to 100 % per 15 s."""
    return {"stabilizationWindowSeconds": 300, "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def cpu_utilization_metric(percent: int) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                       "averageUtilization": percent}}}


def _filled_rules(rules: Mapping[str, Any] | None, defaults: dict[str, Any]) -> dict[str, Any]:
    if rules is None:
        return defaults
    out = dict(rules)
    for key in ("stabilizationWindowSeconds", "selectPolicy", "policies"):
        if out.get(key) is None:
            out[key] = defaults[key]
    return out


def set_defaults(obj: Object) -> None:
    """``SetDefaults_HorizontalPodAutoscaler`` (autoscaling/v2)."""
    spec = obj.setdefault("spec", {})
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [cpu_utilization_metric(DEFAULT_CPU_UTILIZATION)]
    behavior = spec.get("behavior")
    if behavior is not None:
        behavior["scaleUp"] = _filled_rules(behavior.get("scaleUp"), default_scale_up())
        behavior["scaleDown"] = _filled_rules(behavior.get("scaleDown"), default_scale_down())


# --- validation ------------------------------------------------------------------------------------------------

def validate_cross_version_ref(ref: Mapping[str, Any] | None, path: str) -> list[Cause]:
    causes: list[Cause] = []
    ref = ref or {}
    for key in ("kind", "name"):
        value = ref.get(key) or ""
        if not value:
            causes.append(required(f"{path}.{key}"))
        causes.extend(invalid(f"{path}.{key}", value, msg) for msg in path_segment_problems(value))
    return causes


def _sign(value: Any) -> int:
    try:
        nanos = parse_quantity(value).nanos
    except ValueError:
        return 0
    return (nanos > 0) - (nanos < 0)


def validate_metric_target(target: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    kind = target.get("type") or ""
    if not kind:
        causes.append(required(f"{path}.type", "must specify a metric target type"))
    if kind not in ("Utilization", "Value", "AverageValue"):
        causes.append(invalid(f"{path}.type", kind, "must be either Utilization, Value, or AverageValue"))
    for key in ("value", "averageValue"):
        if target.get(key) is not None and _sign(target[key]) != 1:
            causes.append(invalid(f"{path}.{key}", target[key], "must be positive"))
    if target.get("averageUtilization") is not None and target["averageUtilization"] < 1:
        causes.append(invalid(f"{path}.averageUtilization", target["averageUtilization"], "must be greater than 0"))
    return causes


def _validate_metric_name(metric: Mapping[str, Any] | None, path: str) -> list[Cause]:
    name = (metric or {}).get("name") or ""
    if not name:
        return [required(f"{path}.name", "must specify a metric name")]
    return [invalid(f"{path}.name", name, msg) for msg in path_segment_problems(name)]


def _one_of(target: Mapping[str, Any], path: str, keys: tuple[str, str], missing: str, both: str) -> list[Cause]:
    """Exactly one of two target fields: Required at the first when neither is set, Forbidden at the second
    when both are."""
    first, second = (target.get(k) is not None for k in keys)
    if not first and not second:
        return [required(f"{path}.{keys[0]}", missing)]
    return [forbidden(f"{path}.{keys[1]}", both)] if first and second else []


def _validate_source(field: str, src: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateResourceSource`` & co.: what each kind of metric source must carry."""
    target = src.get("target") or {}
    causes: list[Cause] = []
    if field in ("resource", "containerResource"):
        if not src.get("name"):
            causes.append(required(f"{path}.name", "must specify a resource name"))
        if field == "containerResource" and not src.get("container"):
            causes.append(required(f"{path}.container", "must specify a container"))
        causes.extend(validate_metric_target(target, f"{path}.target"))
        causes.extend(_one_of(target, f"{path}.target", ("averageUtilization", "averageValue"),
                              "must set either a target raw value or a target utilization",
                              "may not set both a target raw value and a target utilization"))
        return causes
    if field == "object":
        causes.extend(validate_cross_version_ref(src.get("describedObject"), f"{path}.describedObject"))
    causes.extend(_validate_metric_name(src.get("metric"), f"{path}.metric"))
    causes.extend(validate_metric_target(target, f"{path}.target"))
    if field == "pods" and target.get("averageValue") is None:
        causes.append(required(f"{path}.target.averageValue", "must specify a positive target averageValue"))
    if field == "object" and target.get("value") is None and target.get("averageValue") is None:
        causes.append(required(f"{path}.target.averageValue", "must set either a target value or averageValue"))
    if field == "external":
        causes.extend(_one_of(target, f"{path}.target", ("averageValue", "value"),
                              "must set either a target value for metric or a per-pod target",
                              "may not set both a target value for metric and a per-pod target"))
    return causes


def validate_metric_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateMetricSpec``: a known type, its own source populated, no other source."""
    causes: list[Cause] = []
    kind = spec.get("type") or ""
    if not kind:
        causes.append(required(f"{path}.type", "must specify a metric source type"))
    if kind not in METRIC_SOURCE_TYPES:
        causes.append(not_supported(f"{path}.type", kind, METRIC_SOURCE_TYPES))
    present = [f for f in ("object", "external", "pods", "resource", "containerResource") if spec.get(f) is not None]
    if present:
        causes.extend(_validate_source(present[0], spec[present[0]], f"{path}.{present[0]}"))
    expected = METRIC_SOURCE_FIELDS.get(kind)
    if expected is not None and spec.get(expected) is None:
        causes.append(required(f"{path}.{expected}", "must populate information for the given metric source"))
    if len(present) != 1:
        causes.extend(forbidden(f"{path}.{f}", "must populate the given metric source only")
                      for f in present if f != expected)
    return causes


def validate_scaling_rules(rules: Mapping[str, Any] | None, path: str) -> list[Cause]:
    if rules is None:
        return []
    causes: list[Cause] = []
    window = rules.get("stabilizationWindowSeconds")
    if window is not None and window < 0:
        causes.append(invalid(f"{path}.stabilizationWindowSeconds", window, "must be greater than or equal to zero"))
    if window is not None and window > MAX_STABILIZATION_WINDOW_SECONDS:
        causes.append(invalid(f"{path}.stabilizationWindowSeconds", window,
                              f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        causes.append(not_supported(f"{path}.selectPolicy", select, SELECT_POLICIES))
    policies = rules.get("policies") or []
    if not policies:
        causes.append(required(f"{path}.policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        at = f"{path}.policies[{i}]"
        if policy.get("type") not in POLICY_TYPES:
            causes.append(not_supported(f"{at}.type", policy.get("type") or "", POLICY_TYPES))
        if (policy.get("value") or 0) <= 0:
            causes.append(invalid(f"{at}.value", policy.get("value") or 0, "must be greater than zero"))
        period = policy.get("periodSeconds") or 0
        if period <= 0:
            causes.append(invalid(f"{at}.periodSeconds", period, "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            causes.append(invalid(f"{at}.periodSeconds", period, f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    return causes


def validate_hpa_spec(spec: Mapping[str, Any], path: str = "spec", min_replicas_lower_bound: int = 1) -> list[Cause]:
    """``validateHorizontalPodAutoscalerSpec``."""
    causes: list[Cause] = []
    min_replicas, max_replicas = spec.get("minReplicas"), spec.get("maxReplicas") or 0
    if min_replicas is not None and min_replicas < min_replicas_lower_bound:
        causes.append(invalid(f"{path}.minReplicas", min_replicas,
                              f"must be greater than or equal to {min_replicas_lower_bound}"))
    if max_replicas < 1:
        causes.append(invalid(f"{path}.maxReplicas", max_replicas, "must be greater than 0"))
    if min_replicas is not None and max_replicas < min_replicas:
        causes.append(invalid(f"{path}.maxReplicas", max_replicas, "must be greater than or equal to `minReplicas`"))
    causes.extend(validate_cross_version_ref(spec.get("scaleTargetRef"), f"{path}.scaleTargetRef"))
    metrics = spec.get("metrics") or []
    for i, metric in enumerate(metrics):
        causes.extend(validate_metric_spec(metric, f"{path}.metrics[{i}]"))
    if min_replicas == 0 and not any(m.get("type") in ("Object", "External") for m in metrics):
        causes.append(forbidden(f"{path}.metrics",
                                "must specify at least one Object or External metric to support scaling to zero "
                                "replicas"))
    behavior = spec.get("behavior")
    if behavior is not None:
        causes.extend(validate_scaling_rules(behavior.get("scaleUp"), f"{path}.behavior.scaleUp"))
        causes.extend(validate_scaling_rules(behavior.get("scaleDown"), f"{path}.behavior.scaleDown"))
    return causes


# --- table ---------------------------------------------------------------------------------------------------

def _target_cell(spec: Mapping[str, Any], status: Mapping[str, Any] | None) -> str:
    """One metric of ``formatHPAMetrics``."""
    kind = spec.get("type")
    status = status or {}
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        src, current = spec.get(field) or {}, (status.get(field) or {}).get("current") or {}
        target = src.get("target") or {}
        if target.get("averageValue") is not None:
            now = current.get("averageValue") if status.get(field) else None
            return f"{src.get('name', '')}: {now or '<unknown>'}/{target['averageValue']}"
        now = f"{current['averageUtilization']}%" if current.get("averageUtilization") is not None else "<unknown>"
        want = f"{target['averageUtilization']}%" if target.get("averageUtilization") is not None else "<auto>"
        return f"{src.get('name', '')}: {now}/{want}"
    if kind == "Pods":
        current = (status.get("pods") or {}).get("current") or {}
        target = ((spec.get("pods") or {}).get("target") or {}).get("averageValue")
        return f"{current.get('averageValue') or '<unknown>'}/{target}"
    if kind in ("Object", "External"):
        field = kind.lower()
        target = (spec.get(field) or {}).get("target") or {}
        current = (status.get(field) or {}).get("current") or {}
        if target.get("averageValue") is not None:
            return f"{current.get('averageValue') or '<unknown>'}/{target['averageValue']} (avg)"
        return f"{current.get('value') or '<unknown>'}/{target.get('value')}"
    return "<unknown type>"


def format_hpa_metrics(specs: list[dict[str, Any]], statuses: list[dict[str, Any]]) -> str:
    """``formatHPAMetrics``: each metric's current/target, the first two then ``+ N more...``."""
    if not specs:
        return "<none>"
    cells = [_target_cell(spec, statuses[i] if i < len(statuses) else None) for i, spec in enumerate(specs)]
    if len(cells) > 2:
        return f"{', '.join(cells[:2])} + {len(cells) - 2} more..."
    return ", ".join(cells)


class HorizontalPodAutoscalerStrategy(Strategy):
    group = "autoscaling"
    version = "v2"
    kind = "HorizontalPodAutoscaler"
    resource = "horizontalpodautoscalers"
    singular = "horizontalpodautoscaler"
    short_names = ("hpa",)
    categories = ("all",)
    subresources = ("status",)

    def prepare_for_create(self, obj: Object) -> None:
        obj["status"] = {"desiredReplicas": 0}  # the one status field written even when zero
        set_defaults(obj)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        super().prepare_for_update(new, old)
        set_defaults(new)

    def validate(self, obj: Object) -> list[Cause]:
        return validate_hpa_spec(obj.get("spec") or {})

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        lower = 0 if (old.get("spec") or {}).get("minReplicas") == 0 else 1
        return validate_hpa_spec(new.get("spec") or {}, min_replicas_lower_bound=lower)

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        status = new.get("status") or {}
        return [cause for key in ("currentReplicas", "desiredReplicas")
                for cause in validate_nonnegative(status.get(key), f"status.{key}")]

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Reference", description="scaleTargetRef points to the target resource to scale, and is "
                                                     "used to the pods for which metrics should be collected, as "
                                                     "well as to actually change the replica count."),
                TableColumn("Targets", description="metrics contains the specifications for which to use to "
                                                   "calculate the desired replica count (the maximum replica count "
                                                   "across all metrics will be used)."),
                TableColumn("MinPods", description="minReplicas is the lower limit for the number of replicas to "
                                                   "which the autoscaler can scale down."),
                TableColumn("MaxPods", description="maxReplicas is the upper limit for the number of replicas to "
                                                   "which the autoscaler can scale up."),
                TableColumn("Replicas", description="currentReplicas is current number of replicas of pods managed "
                                                    "by this autoscaler, as last seen by the autoscaler."),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        obj = self.to_storage(obj)
        metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        ref = spec.get("scaleTargetRef") or {}
        min_pods = str(spec["minReplicas"]) if spec.get("minReplicas") is not None else "<unset>"
        return [metadata.get("name", ""), f"{ref.get('kind', '')}/{ref.get('name', '')}",
                format_hpa_metrics(spec.get("metrics") or [], status.get("currentMetrics") or []), min_pods,
                int(spec.get("maxReplicas") or 0), int(status.get("currentReplicas") or 0),
                since(metadata.get("creationTimestamp"))]
