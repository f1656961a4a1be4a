"""Deployments (apps/v1): rollout strategy defaults, the ReplicaSet selector rules, ``/scale``.

A Deployment's generation also bumps when its annotations change (they are copied onto its ReplicaSets), so
``spec_changed`` looks at both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    Raw,
    forbidden,
    go_int_or_string,
    go_quote,
    int_or_percent_value,
    invalid,
    not_supported,
    required,
    validate_int_or_percent,
    validate_nonnegative,
    validate_not_decremented,
    validate_not_more_than_100_percent,
)
from apiserver.registry import selectors
from apiserver.registry.podspec import default_pod_template
from apiserver.registry.qos import reject_unparsable, resource_lists
from apiserver.registry.replicasets import validate_selector_and_template, validate_selector_unchanged
from apiserver.registry.scale import ScalableStrategy
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, TableColumn
from apiserver.registry.tables import container_cells, since, template_columns

DEFAULT_MAX_SURGE = "25%"
DEFAULT_MAX_UNAVAILABLE = "25%"
DEFAULT_REVISION_HISTORY_LIMIT = 10
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
STRATEGY_TYPES = ("Recreate", "RollingUpdate")


class DeploymentStrategy(ScalableStrategy):
    group = "apps"
    kind = "Deployment"
    resource = "deployments"
    singular = "deployment"
    short_names = ("deploy",)
    categories = ("all",)
    subresources = ("status", "scale")
    status_resets = ("labels",)  # a status write keeps the labels (its status strategy)

    def prepare_for_create(self, obj: Object) -> None:
        self.default(obj)
        obj["status"] = {}

    def default(self, obj: Object) -> None:
        """``SetDefaults_Deployment`` (apps/v1) plus the template's PodSpec defaults."""
        spec = obj.setdefault("spec", {})
        template = spec.setdefault("template", {})
        reject_unparsable(resource_lists(template.get("spec") or {}), self.kind, self.version)
        if spec.get("replicas") is None:
            spec["replicas"] = 1
        strategy = spec.get("strategy") or {}
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.get("rollingUpdate") or {}
            if rolling.get("maxUnavailable") is None:
                rolling["maxUnavailable"] = DEFAULT_MAX_UNAVAILABLE
            if rolling.get("maxSurge") is None:
                rolling["maxSurge"] = DEFAULT_MAX_SURGE
            strategy["rollingUpdate"] = rolling
        spec["strategy"] = strategy
        if spec.get("revisionHistoryLimit") is None:
            spec["revisionHistoryLimit"] = DEFAULT_REVISION_HISTORY_LIMIT
        if spec.get("progressDeadlineSeconds") is None:
            spec["progressDeadlineSeconds"] = DEFAULT_PROGRESS_DEADLINE_SECONDS
        default_pod_template(template)

    def validate(self, obj: Object) -> list[Cause]:
        """``ValidateDeploymentSpec``."""
        spec = obj.get("spec") or {}
        causes = validate_nonnegative(spec.get("replicas"), "spec.replicas")
        causes.extend(validate_selector_and_template(spec))
        causes.extend(_validate_strategy(spec.get("strategy") or {}, "spec.strategy"))
        causes.extend(validate_nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds"))
        causes.extend(validate_nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit"))
        deadline = spec.get("progressDeadlineSeconds")
        if deadline is not None:
            causes.extend(validate_nonnegative(deadline, "spec.progressDeadlineSeconds"))
            if deadline <= (spec.get("minReadySeconds") or 0):
                causes.append(invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
        return causes

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        return self.validate(new) + validate_selector_unchanged(new, old)

    def spec_changed(self, new: Object, old: Object) -> bool:
        annotations = (new.get("metadata") or {}).get("annotations") or {}
        old_annotations = (old.get("metadata") or {}).get("annotations") or {}
        return super().spec_changed(new, old) or annotations != old_annotations

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        status, old_status = new.get("status") or {}, old.get("status") or {}
        causes = _validate_deployment_status(status)
        causes.extend(validate_not_decremented(status.get("collisionCount"), old_status.get("collisionCount"),
                                               "status.collisionCount"))
        return causes

    def selector_string(self, obj: Object) -> str:
        return selectors.to_string((obj.get("spec") or {}).get("selector"))

    def columns(self) -> list[TableColumn]:
        return [
            NAME_COLUMN,
            TableColumn("Ready", description="Number of the pod with ready state"),
            TableColumn("Up-to-date", description="Total number of non-terminated pods targeted by this deployment "
                                                  "that have the desired template spec."),
            TableColumn("Available", description="Total number of available pods (ready for at least "
                                                 "minReadySeconds) targeted by this deployment."),
            AGE_COLUMN,
            *template_columns("Label selector for pods. Existing ReplicaSets whose pods are selected by this will "
                              "be the ones affected by this deployment."),
        ]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        names, images = container_cells(((spec.get("template") or {}).get("spec") or {}).get("containers"))
        selector = spec.get("selector")
        selector_cell = selectors.to_string(selector) if selectors.is_valid(selector) else "<invalid>"
        return [metadata.get("name", ""), f"{status.get('readyReplicas') or 0}/{spec.get('replicas') or 0}",
                int(status.get("updatedReplicas") or 0), int(status.get("availableReplicas") or 0),
                since(metadata.get("creationTimestamp")), names, images, selector_cell]


def _validate_strategy(strategy: Mapping[str, Any], path: str) -> list[Cause]:
    kind = strategy.get("type") or ""
    if kind == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            return [forbidden(f"{path}.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if rolling is None:
            return [required(f"{path}.rollingUpdate", "this should be defaulted and never be nil")]
        return _validate_rolling_update(rolling, f"{path}.rollingUpdate")
    return [not_supported(path, Raw(_go_strategy(strategy)), STRATEGY_TYPES)]


def _validate_rolling_update(rolling: Mapping[str, Any], path: str) -> list[Cause]:
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    causes = validate_int_or_percent(unavailable, f"{path}.maxUnavailable")
    causes.extend(validate_int_or_percent(surge, f"{path}.maxSurge"))
    if int_or_percent_value(unavailable) == 0 and int_or_percent_value(surge) == 0:
        causes.append(invalid(f"{path}.maxUnavailable", Raw(go_int_or_string(unavailable)),
                              "may not be 0 when `maxSurge` is 0"))
    return causes + validate_not_more_than_100_percent(unavailable, f"{path}.maxUnavailable")


def _go_strategy(strategy: Mapping[str, Any]) -> str:
    return f"apps.DeploymentStrategy{{Type:{go_quote(strategy.get('type') or '')}, RollingUpdate:(*apps." \
           "RollingUpdateDeployment)(nil)}"


def _validate_deployment_status(status: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for key in ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                "unavailableReplicas", "collisionCount"):
        causes.extend(validate_nonnegative(status.get(key), f"status.{key}"))
    replicas = status.get("replicas") or 0
    for key in ("updatedReplicas", "readyReplicas", "availableReplicas"):
        if (status.get(key) or 0) > replicas:
            causes.append(invalid(f"status.{key}", status.get(key), "cannot be greater than status.replicas"))
    if (status.get("availableReplicas") or 0) > (status.get("readyReplicas") or 0):
        causes.append(invalid("status.availableReplicas", status.get("availableReplicas"),
                              "cannot be greater than readyReplicas"))
    return causes
