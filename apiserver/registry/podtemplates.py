"""PodTemplates (core/v1): a named pod template, stored for others to copy (defaults and validation of the
template as the controllers' own templates get them; no selector, no restart-policy rule).

``kubectl get podtemplates`` prints NAME, CONTAINERS, IMAGES, POD LABELS (``printPodTemplate``)."""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apiserver.registry.podspec import default_pod_template, validate_pod_template
from apiserver.registry.qos import reject_unparsable, resource_lists
from apiserver.registry.strategy import NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import container_cells, format_labels


class PodTemplateStrategy(Strategy):
    kind = "PodTemplate"
    resource = "podtemplates"
    singular = "podtemplate"

    def prepare_for_create(self, obj: Object) -> None:
        template = obj.setdefault("template", {})
        reject_unparsable(resource_lists(template.get("spec") or {}), self.kind, self.version)
        default_pod_template(template)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.prepare_for_create(new)

    def spec_changed(self, new: Object, old: Object) -> bool:
        return new.get("template") != old.get("template")

    def validate(self, obj: Object) -> list[Cause]:
        """``ValidatePodTemplate``: the template's labels, annotations and PodSpec."""
        return validate_pod_template(obj.get("template"), "template")

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Containers", description="Names of each container in the template."),
                TableColumn("Images", description="Images referenced by each container in the template."),
                TableColumn("Pod Labels", description="The labels for the pod template.")]

    def row(self, obj: Object) -> list[Any]:
        template = obj.get("template") or {}
        names, images = container_cells((template.get("spec") or {}).get("containers"))
        return [(obj.get("metadata") or {}).get("name", ""), names, images,
                format_labels((template.get("metadata") or {}).get("labels"))]
