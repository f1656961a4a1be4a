"""PersistentVolumeClaims (core/v1): a user's request for storage, bound one-to-one to a volume.

What kube-apiserver does, and where (``pkg/registry/core/persistentvolumeclaim``, ``pkg/apis/core/validation``):

* ``PrepareForCreate`` resets ``status`` (read back defaulted to phase ``Pending``); ``volumeMode`` defaults to
  ``Filesystem``; the ``DefaultStorageClass`` and ``StorageObjectInUseProtection`` admission plugins fill in
  the storage class and the ``kubernetes.io/pvc-protection`` finalizer (``apiserver.admission.storage``);
* ``ValidatePersistentVolumeClaimSpec``: access modes (at least one), ``resources.requests.storage`` present
  and above zero, a valid selector, storage class and volume mode;
* ``ValidatePersistentVolumeClaimUpdate``: the spec is fixed except ``volumeName`` while unset (the binder sets
  it) and ``resources.requests`` of a bound claim, which may only grow (expansion);
* ``kubectl get pvc`` prints NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE
  (VOLUMEMODE with ``-o wide``); capacity and access modes come from ``status`` once a volume is named.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.quantity import parse_quantity
from apimachinery.validation import forbidden, invalid, required, validate_label_selector
from apimachinery.volumes import storage_class_of
from apiserver.registry.persistentvolumes import (
    access_modes_string,
    phase_cell,
    validate_access_modes,
    validate_common_spec,
)
from apiserver.registry.qos import validate_quantity_value
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

IMMUTABLE_SPEC = ("spec is immutable after creation except resources.requests and volumeAttributesClassName for "
                  "bound claims")


def requested_storage(claim: Mapping[str, Any]) -> str | None:
    return (((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")


def validate_pvc_spec(spec: Mapping[str, Any], path: str = "spec") -> list[Cause]:
    """``ValidatePersistentVolumeClaimSpec``."""
    causes = validate_access_modes(spec.get("accessModes"), f"{path}.accessModes",
                                   required_detail="at least 1 access mode is required")
    causes += validate_label_selector(spec.get("selector"), f"{path}.selector")
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    item = f"{path}.resources[storage]"
    if storage is None:
        causes.append(required(item))
    else:
        quantity_causes = validate_quantity_value("storage", storage, item)
        causes += quantity_causes
        if not quantity_causes and parse_quantity(storage).sign() <= 0:
            causes.append(invalid(item, str(storage), "must be greater than zero"))
    causes += validate_common_spec(spec, path)
    return causes


class PersistentVolumeClaimStrategy(Strategy):
    kind = "PersistentVolumeClaim"
    resource = "persistentvolumeclaims"
    singular = "persistentvolumeclaim"
    short_names = ("pvc",)
    subresources = ("status",)
    bumps_generation = False

    def prepare_for_create(self, obj: Object) -> None:
        obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
        obj["status"] = {"phase": "Pending"}

    def prepare_for_update(self, new: Object, old: Object) -> None:
        new.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
        super().prepare_for_update(new, old)

    def validate(self, obj: Object) -> list[Cause]:
        return validate_pvc_spec(obj.get("spec") or {})

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        causes = self.validate(new)
        spec, old_spec = copy.deepcopy(new.get("spec") or {}), copy.deepcopy(old.get("spec") or {})
        if not old_spec.get("volumeName") and "volumeName" in spec:
            old_spec["volumeName"] = spec["volumeName"]
        bound = (old.get("status") or {}).get("phase") == "Bound"
        if bound:
            new_size, old_size = requested_storage(new), requested_storage(old)
            if new_size is not None and old_size is not None and not causes and \
                    parse_quantity(new_size) < parse_quantity(old_size):
                causes.append(forbidden("spec.resources.requests.storage",
                                        "field can not be less than previous value"))
            if "resources" in spec:
                old_spec.setdefault("resources", {})["requests"] = spec["resources"].get("requests")
        if spec != old_spec:
            causes.append(forbidden("spec", IMMUTABLE_SPEC))
        return causes

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        causes: list[Cause] = []
        status = new.get("status") or {}
        for name, value in (status.get("capacity") or {}).items():
            causes.extend(validate_quantity_value(name, value, f"status.capacity[{name}]"))
        return causes

    def selectable_fields(self, obj: Object) -> dict[str, str]:
        return {**super().selectable_fields(obj), "name": (obj.get("metadata") or {}).get("name", "")}

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Status", description="phase represents the current phase of PersistentVolumeClaim."),
                TableColumn("Volume", description="volumeName is the binding reference to the PersistentVolume "
                                                  "backing this claim."),
                TableColumn("Capacity", description="capacity represents the actual resources of the underlying "
                                                    "volume."),
                TableColumn("Access Modes", description="accessModes contains the desired access modes the volume "
                                                        "should have."),
                TableColumn("StorageClass", description="storageClassName is the name of the StorageClass required "
                                                        "by the claim."),
                TableColumn("VolumeAttributesClass", description="volumeAttributesClassName may be used to set the "
                                                                 "VolumeAttributesClass used by this claim."),
                AGE_COLUMN,
                TableColumn("VolumeMode", priority=1, description="volumeMode defines what type of volume is "
                                                                  "required by the claim.")]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        capacity = modes = ""
        if spec.get("volumeName"):
            capacity = str((status.get("capacity") or {}).get("storage", ""))
            modes = access_modes_string(status.get("accessModes"))
        return [metadata.get("name", ""), phase_cell(obj), spec.get("volumeName", ""), capacity, modes,
                storage_class_of(obj), spec.get("volumeAttributesClassName") or "<unset>",
                since(metadata.get("creationTimestamp")), spec.get("volumeMode") or "<unset>"]
