"""ReplicationControllers (core/v1): a map selector defaulted from the template's labels, and ``/scale``.

v1 defaulting copies the template's labels into an empty ``spec.selector`` and empty ``metadata.labels``, so
``kubectl create -f rc.yaml`` works with only a template. Status rules are the ReplicaSet ones.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import required, validate_nonnegative
from apiserver.registry import selectors
from apiserver.registry.podspec import default_pod_template, validate_controller_template
from apiserver.registry.qos import reject_unparsable, resource_lists
from apiserver.registry.replicasets import replica_columns, replica_row, validate_replica_status
from apiserver.registry.scale import ScalableStrategy
from apiserver.registry.strategy import Object, TableColumn
from apiserver.registry.tables import format_labels


class ReplicationControllerStrategy(ScalableStrategy):
    kind = "ReplicationController"
    resource = "replicationcontrollers"
    singular = "replicationcontroller"
    short_names = ("rc",)
    categories = ("all",)
    subresources = ("status", "scale")

    def prepare_for_create(self, obj: Object) -> None:
        self.default(obj)
        obj["status"] = {"replicas": 0}

    def default(self, obj: Object) -> None:
        """``SetDefaults_ReplicationController`` plus the template's PodSpec defaults."""
        spec = obj.setdefault("spec", {})
        template = spec.get("template")
        if template is not None:
            reject_unparsable(resource_lists(template.get("spec") or {}), self.kind, self.version)
            labels = (template.get("metadata") or {}).get("labels")
            if labels is not None:
                if not spec.get("selector"):
                    spec["selector"] = dict(labels)
                metadata = obj.setdefault("metadata", {})
                if not metadata.get("labels"):
                    metadata["labels"] = dict(labels)
            default_pod_template(template)
        if spec.get("replicas") is None:
            spec["replicas"] = 1

    def validate(self, obj: Object) -> list[Cause]:
        """``ValidateReplicationControllerSpec``."""
        spec = obj.get("spec") or {}
        selector = spec.get("selector") or {}
        causes = validate_nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
        if not selector:
            causes.append(required("spec.selector"))
        causes.extend(validate_nonnegative(spec.get("replicas"), "spec.replicas"))
        template = spec.get("template")
        labels = ((template or {}).get("metadata") or {}).get("labels")
        labels_match = not selector or selectors.set_matches(selector, labels)
        causes.extend(validate_controller_template(template, "spec.template", owner="ReplicationController",
                                                   labels_match=labels_match))
        return causes

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        return validate_replica_status(new.get("status") or {})

    def selector_string(self, obj: Object) -> str:
        return selectors.set_to_string((obj.get("spec") or {}).get("selector"))

    def selectable_fields(self, obj: Object) -> dict[str, str]:
        fields = super().selectable_fields(obj)
        fields["status.replicas"] = str((obj.get("status") or {}).get("replicas") or 0)
        return fields

    def columns(self) -> list[TableColumn]:
        return replica_columns("Selector is a label query over pods that should match the Replicas count.")

    def row(self, obj: Object) -> list[Any]:
        return replica_row(obj, format_labels((obj.get("spec") or {}).get("selector")))
