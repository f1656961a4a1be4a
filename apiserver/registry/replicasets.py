"""ReplicaSets (apps/v1): a required label selector that the pod template must satisfy, and ``/scale``.

``validate_selector_and_template`` is apps/v1's shared rule (``ValidateReplicaSetSpec`` and
``ValidateDeploymentSpec`` both use it — including its ``for deployment`` and ``in ReplicaSet`` wording);
``validate_replica_status`` is shared with ReplicationControllers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    Raw,
    invalid,
    required,
    validate_immutable,
    validate_label_selector,
    validate_nonnegative,
)
from apiserver.registry import selectors
from apiserver.registry.podspec import default_pod_template, validate_controller_template
from apiserver.registry.qos import reject_unparsable, resource_lists
from apiserver.registry.scale import ScalableStrategy
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, TableColumn
from apiserver.registry.tables import container_cells, since, template_columns


class ReplicaSetStrategy(ScalableStrategy):
    group = "apps"
    kind = "ReplicaSet"
    resource = "replicasets"
    singular = "replicaset"
    short_names = ("rs",)
    categories = ("all",)
    subresources = ("status", "scale")
    status_resets = ("labels",)  # a status write keeps the labels (its status strategy)

    def prepare_for_create(self, obj: Object) -> None:
        self.default(obj)
        obj["status"] = {"replicas": 0}

    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        template = spec.setdefault("template", {})
        reject_unparsable(resource_lists(template.get("spec") or {}), self.kind, self.version)
        if spec.get("replicas") is None:
            spec["replicas"] = 1
        default_pod_template(template)

    def validate(self, obj: Object) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes = validate_nonnegative(spec.get("replicas"), "spec.replicas")
        causes.extend(validate_nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds"))
        return causes + validate_selector_and_template(spec)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        return self.validate(new) + validate_selector_unchanged(new, old)

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        return validate_replica_status(new.get("status") or {})

    def selector_string(self, obj: Object) -> str:
        return selectors.to_string((obj.get("spec") or {}).get("selector"))

    def selectable_fields(self, obj: Object) -> dict[str, str]:
        fields = super().selectable_fields(obj)
        fields["status.replicas"] = str((obj.get("status") or {}).get("replicas") or 0)
        return fields

    def columns(self) -> list[TableColumn]:
        return replica_columns("Selector is a label query over pods that should match the replica count.")

    def row(self, obj: Object) -> list[Any]:
        spec = obj.get("spec") or {}
        return replica_row(obj, selectors.format_label_selector(spec.get("selector")))


def replica_columns(selector_description: str) -> list[TableColumn]:
    """NAME DESIRED CURRENT READY AGE (+ CONTAINERS IMAGES SELECTOR): ReplicaSets and ReplicationControllers."""
    return [
        NAME_COLUMN,
        TableColumn("Desired", type="integer", description="Replicas is the number of desired replicas."),
        TableColumn("Current", type="integer", description="Replicas is the most recently observed number of "
                                                           "replicas."),
        TableColumn("Ready", type="integer", description="The number of ready replicas for this replica set."),
        AGE_COLUMN,
        *template_columns(selector_description),
    ]


def replica_row(obj: Mapping[str, Any], selector: str) -> list[Any]:
    metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    names, images = container_cells(((spec.get("template") or {}).get("spec") or {}).get("containers"))
    return [metadata.get("name", ""), int(spec.get("replicas") or 0), int(status.get("replicas") or 0),
            int(status.get("readyReplicas") or 0), since(metadata.get("creationTimestamp")), names, images, selector]


def validate_selector_and_template(spec: Mapping[str, Any], path: str = "spec", *, workload: str = "deployment",
                                   owner: str = "ReplicaSet") -> list[Cause]:
    """A required, non-empty, valid selector, and a template whose labels it selects (``workload`` names the
    kind in kube's "empty selector is invalid for …", ``owner`` in the template's activeDeadlineSeconds rule)."""
    causes: list[Cause] = []
    selector = spec.get("selector")
    if selector is None:
        causes.append(required(f"{path}.selector"))
    else:
        causes.extend(validate_label_selector(selector, f"{path}.selector"))
        if selectors.is_empty(selector):
            causes.append(invalid(f"{path}.selector", Raw(selectors.go_label_selector(selector)),
                                  f"empty selector is invalid for {workload}"))
    if not selectors.is_valid(selector):
        causes.append(invalid(f"{path}.selector", Raw(selectors.go_label_selector(selector)), "invalid label selector"))
        return causes
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels")
    labels_match = selectors.is_empty(selector) or selectors.matches(selector, labels)
    causes.extend(validate_controller_template(template, f"{path}.template", owner=owner,
                                               labels_match=labels_match))
    return causes


def validate_selector_unchanged(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """apps/v1 selectors are immutable: changing one would orphan the pods it selected."""
    new_selector = (new.get("spec") or {}).get("selector")
    old_selector = (old.get("spec") or {}).get("selector")
    return validate_immutable(new_selector, old_selector, "spec.selector", selectors.go_label_selector(new_selector))


def validate_replica_status(status: Mapping[str, Any], path: str = "status") -> list[Cause]:
    """Counts are non-negative and nested: available ≤ ready ≤ replicas, fullyLabeled ≤ replicas."""
    causes: list[Cause] = []
    for key in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"):
        causes.extend(validate_nonnegative(status.get(key), f"{path}.{key}"))
    replicas = status.get("replicas") or 0
    for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if (status.get(key) or 0) > replicas:
            causes.append(invalid(f"{path}.{key}", status.get(key), "cannot be greater than status.replicas"))
    if (status.get("availableReplicas") or 0) > (status.get("readyReplicas") or 0):
        causes.append(invalid(f"{path}.availableReplicas", status.get("availableReplicas"),
                              "cannot be greater than readyReplicas"))
    return causes
