"""Namespaces (core/v1, cluster-scoped): the ``kubernetes`` finalizer, the phase, and the name label.

``spec.finalizers`` changes only through ``/finalize`` and ``status`` only through ``/status``; a plain update
keeps both. Every namespace carries ``kubernetes.io/metadata.name=<name>``, set on create and on every update
(kube-apiserver's defaulting), so label selectors can pick namespaces by name.
"""

from __future__ import annotations

import copy
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import invalid, name_is_dns_label, validate_kube_finalizer_name
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

FINALIZER_KUBERNETES = "kubernetes"
# NamespaceLifecycle admission refuses to delete these: the cluster's own objects live there.
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
METADATA_NAME_LABEL = "kubernetes.io/metadata.name"


class NamespaceStrategy(Strategy):
    kind = "Namespace"
    resource = "namespaces"
    singular = "namespace"
    namespaced = False
    short_names = ("ns",)
    verbs = ("create", "delete", "get", "list", "patch", "update", "watch")  # no deletecollection, as in kube
    subresources = ("status", "finalize")
    bumps_generation = False

    def name_validator(self, name: str) -> list[str]:
        return name_is_dns_label(name)

    def prepare_for_create(self, obj: Object) -> None:
        _label_with_name(obj)
        obj["status"] = {"phase": "Active"}
        spec = obj.get("spec") or {}
        finalizers = list(spec.get("finalizers") or [])
        if FINALIZER_KUBERNETES not in finalizers:
            finalizers.append(FINALIZER_KUBERNETES)
        spec["finalizers"] = finalizers
        obj["spec"] = spec

    def validate(self, obj: Object) -> list[Cause]:
        return _validate_finalizers((obj.get("spec") or {}).get("finalizers"))

    def prepare_for_update(self, new: Object, old: Object) -> None:
        _label_with_name(new)
        for key in ("spec", "status"):
            if key in old:
                new[key] = copy.deepcopy(old[key])
            else:
                new.pop(key, None)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        return []

    def spec_changed(self, new: Object, old: Object) -> bool:
        return False

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        """The phase follows deletion: ``Active`` until ``deletionTimestamp`` is set, ``Terminating`` after."""
        phase = (new.get("status") or {}).get("phase") or ""
        if not (new.get("metadata") or {}).get("deletionTimestamp"):
            if phase != "Active":
                return [invalid("status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty")]
        elif phase != "Terminating":
            return [invalid("status.Phase", phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")]
        return []

    # --- deletion: Terminating until the namespace controller empties spec.finalizers ----------------------
    def forbid_delete(self, name: str) -> str | None:
        return "this namespace may not be deleted" if name in IMMORTAL_NAMESPACES else None

    def deletion_pending(self, obj: Object) -> bool:
        return bool((obj.get("spec") or {}).get("finalizers"))

    def prepare_for_delete(self, obj: Object) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"

    # --- finalize subresource (called by the handler of PUT /api/v1/namespaces/{name}/finalize) -------------
    def prepare_for_finalize_update(self, new: Object, old: Object) -> None:
        """``/finalize`` changes only ``spec.finalizers``: metadata and status come from the stored object."""
        spec = copy.deepcopy(new.get("spec") or {})
        new.clear()
        new.update(copy.deepcopy(old))
        new["spec"] = spec

    def validate_finalize_update(self, new: Object, old: Object) -> list[Cause]:
        return _validate_finalizers((new.get("spec") or {}).get("finalizers"))

    # --- fields and tables --------------------------------------------------------------------------------
    def selectable_fields(self, obj: Object) -> dict[str, str]:
        fields = super().selectable_fields(obj)
        fields["status.phase"] = (obj.get("status") or {}).get("phase") or ""
        fields["name"] = fields["metadata.name"]  # the deprecated field kube-apiserver still accepts
        return fields

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("Status", description="The status of the namespace"), AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), (obj.get("status") or {}).get("phase") or "",
                since(metadata.get("creationTimestamp"))]


def _label_with_name(obj: Object) -> None:
    metadata = obj.setdefault("metadata", {})
    if metadata.get("name"):
        labels = metadata.get("labels") or {}
        labels[METADATA_NAME_LABEL] = metadata["name"]
        metadata["labels"] = labels


def _validate_finalizers(finalizers: list[str] | None) -> list[Cause]:
    causes: list[Cause] = []
    for finalizer in finalizers or []:
        causes.extend(validate_kube_finalizer_name(finalizer, "spec.finalizers"))
    return causes
