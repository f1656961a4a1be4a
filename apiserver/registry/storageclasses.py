"""StorageClasses (storage.k8s.io/v1): how volumes of a class are provisioned, bound and reclaimed.

What kube-apiserver does, and where (``pkg/registry/storage/storageclass``, ``pkg/apis/storage/validation``):

* ``SetDefaults_StorageClass``: ``reclaimPolicy: Delete``, ``volumeBindingMode: Immediate``;
* ``ValidateStorageClass``: a provisioner (a qualified name, lower-cased), reclaim policy ``Delete`` or
  ``Retain``, a known binding mode, at most 512 parameters; ``provisioner``, ``parameters``, ``reclaimPolicy``
  and ``volumeBindingMode`` never change;
* ``kubectl get sc`` prints NAME (``standard (default)`` for the class annotated
  ``storageclass.kubernetes.io/is-default-class: "true"``) PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE
  ALLOWVOLUMEEXPANSION AGE.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    forbidden,
    invalid,
    is_qualified_name,
    not_supported,
    required,
    too_many,
    validate_immutable,
)
from apiserver.registry.podscheduling import validate_node_selector_term
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
RECLAIM_POLICIES = ("Delete", "Retain")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
MAX_PARAMETERS = 512


def is_default_class(obj: Mapping[str, Any]) -> bool:
    """``IsDefaultAnnotation``: either annotation set to ``"true"``."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return "true" in (annotations.get(DEFAULT_CLASS_ANNOTATION), annotations.get(BETA_DEFAULT_CLASS_ANNOTATION))


def validate_provisioner(provisioner: Any, path: str) -> list[Cause]:
    if not provisioner:
        return [required(path)]
    return [invalid(path, provisioner, msg) for msg in is_qualified_name(str(provisioner).lower())]


def _validate_allowed_topologies(topologies: list[Mapping[str, Any]] | None, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, term in enumerate(topologies or []):
        expressions = term.get("matchLabelExpressions") or []
        if not expressions:
            causes.append(required(f"{path}[{i}].matchLabelExpressions", "must have at least one label expression"))
        as_node_term = {"matchExpressions": [{"key": e.get("key", ""), "operator": "In", "values": e.get("values")}
                                             for e in expressions]}
        causes.extend(validate_node_selector_term(as_node_term, f"{path}[{i}]", True))
    return causes


class StorageClassStrategy(Strategy):
    group = "storage.k8s.io"
    kind = "StorageClass"
    resource = "storageclasses"
    singular = "storageclass"
    namespaced = False
    short_names = ("sc",)
    bumps_generation = False

    def prepare_for_create(self, obj: Object) -> None:
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.prepare_for_create(new)

    def validate(self, obj: Object) -> list[Cause]:
        causes = validate_provisioner(obj.get("provisioner"), "provisioner")
        parameters = obj.get("parameters") or {}
        if len(parameters) > MAX_PARAMETERS:
            causes.append(too_many("parameters", len(parameters), MAX_PARAMETERS))
        for key in parameters:
            if not key:
                causes.append(invalid("parameters", key, "field can not be empty."))
        policy = obj.get("reclaimPolicy")
        if policy not in RECLAIM_POLICIES:
            causes.append(not_supported("reclaimPolicy", policy, RECLAIM_POLICIES))
        mode = obj.get("volumeBindingMode")
        if mode is None:
            causes.append(required("volumeBindingMode"))
        elif mode not in BINDING_MODES:
            causes.append(not_supported("volumeBindingMode", mode, BINDING_MODES))
        causes += _validate_allowed_topologies(obj.get("allowedTopologies"), "allowedTopologies")
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        """``ValidateStorageClassUpdate``."""
        causes = self.validate(new)
        for field in ("parameters", "provisioner", "reclaimPolicy"):
            if (new.get(field) or None) != (old.get(field) or None):
                causes.append(forbidden(field, f"updates to {field} are forbidden."))
        causes += validate_immutable(new.get("volumeBindingMode"), old.get("volumeBindingMode"),
                                     "volumeBindingMode")
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Provisioner", description="provisioner indicates the type of the provisioner."),
                TableColumn("ReclaimPolicy", description="reclaimPolicy controls the reclaimPolicy for dynamically "
                                                         "provisioned PersistentVolumes of this storage class."),
                TableColumn("VolumeBindingMode", description="volumeBindingMode indicates how PersistentVolumeClaims "
                                                             "should be provisioned and bound."),
                TableColumn("AllowVolumeExpansion", type="boolean", description="allowVolumeExpansion shows whether "
                                                                               "the storage class allow volume "
                                                                               "expand."),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        name = metadata.get("name", "")
        if is_default_class(obj):
            name += " (default)"
        return [name, obj.get("provisioner", ""), obj.get("reclaimPolicy") or "Delete",
                obj.get("volumeBindingMode") or "Immediate", bool(obj.get("allowVolumeExpansion")),
                since(metadata.get("creationTimestamp"))]
