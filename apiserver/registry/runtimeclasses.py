"""RuntimeClasses (node.k8s.io/v1): which container runtime configuration (``handler``) a pod asks for.

``ValidateRuntimeClass``: ``handler`` is a DNS-1123 label and never changes; ``scheduling.nodeSelector`` holds
valid labels and ``scheduling.tolerations`` valid tolerations. ``kubectl get runtimeclass`` prints NAME, HANDLER,
AGE. The RuntimeClass admission plugin (``apiserver.admission.runtimeclass``) checks that a pod's class exists and
merges its overhead and scheduling into the pod; kubelab's kubelets have one runtime, so the handler picks none.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import FIELD_IMMUTABLE_ERROR_MSG, invalid, is_dns1123_label, required, validate_labels
from apiserver.registry.podscheduling import validate_tolerations
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since


class RuntimeClassStrategy(Strategy):
    group = "node.k8s.io"
    kind = "RuntimeClass"
    resource = "runtimeclasses"
    singular = "runtimeclass"
    namespaced = False
    bumps_generation = False

    def validate(self, obj: Object) -> list[Cause]:
        handler = obj.get("handler") or ""
        causes: list[Cause] = [invalid("handler", handler, msg) for msg in is_dns1123_label(handler)] if handler \
            else [required("handler")]
        scheduling = obj.get("scheduling") or {}
        causes.extend(validate_labels(scheduling.get("nodeSelector"), "scheduling.nodeSelector"))
        causes.extend(validate_tolerations(scheduling.get("tolerations"), "scheduling.tolerations"))
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        causes = self.validate(new)
        if new.get("handler") != old.get("handler"):
            causes.append(invalid("handler", new.get("handler"), FIELD_IMMUTABLE_ERROR_MSG))
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("Handler", description="handler specifies the underlying runtime and "
                                                                "configuration that the CRI implementation will use "
                                                                "to handle pods of this class."), AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), obj.get("handler") or "", since(metadata.get("creationTimestamp"))]
