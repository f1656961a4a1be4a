"""PersistentVolumes (core/v1): a piece of storage in the cluster, bound one-to-one to a claim.

What kube-apiserver does, and where (``pkg/registry/core/persistentvolume``, ``pkg/apis/core/validation``):

* ``PrepareForCreate`` resets ``status`` to phase ``Pending`` with ``lastPhaseTransitionTime`` now; the status
  strategy stamps ``lastPhaseTransitionTime`` whenever the phase changes (the binder writes ``/status``);
* ``SetDefaults_PersistentVolume``: ``persistentVolumeReclaimPolicy: Retain``, ``volumeMode: Filesystem``;
* ``ValidatePersistentVolumeSpec``: access modes required and known (``ReadWriteOncePod`` alone), capacity only
  ``storage``, exactly one volume source, ``hostPath``/``local`` paths without ``..``, ``local`` needs
  ``nodeAffinity``, ``nodeAffinity.required`` set, known reclaim policy and volume mode, storage class a DNS
  subdomain; an update may not change the volume source, volume mode or a set node affinity;
* ``kubectl get pv`` prints NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS
  VOLUMEATTRIBUTESCLASS REASON AGE (VOLUMEMODE with ``-o wide``), ``Terminating`` while deleted.

The access-mode and capacity helpers here are shared with claims (``persistentvolumeclaims``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.meta import now_rfc3339
from apimachinery.validation import (
    Raw,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_dns1123_subdomain,
)
from apimachinery.volumes import storage_class_of
from apiserver.registry.podscheduling import validate_node_selector_term
from apiserver.registry.qos import validate_quantity_value
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since
from apiserver.registry.volumefiles import validate_no_backsteps

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
# ``GetAccessModesAsString``: a fixed order, whatever order the object lists them in.
ACCESS_MODE_SHORT = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                     ("ReadWriteOncePod", "RWOP"))
RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
VOLUME_MODES = ("Block", "Filesystem")
# The PersistentVolumeSource members (one of them per volume).
PV_SOURCES = ("awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc", "flexVolume",
              "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local", "nfs",
              "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos",
              "vsphereVolume")


def access_modes_string(modes: list[str] | None) -> str:
    """``GetAccessModesAsString``: ``RWO,ROX`` in kube's fixed order."""
    present = set(modes or [])
    return ",".join(short for mode, short in ACCESS_MODE_SHORT if mode in present)


def validate_access_modes(modes: list[Any] | None, path: str, *, required_detail: str = "") -> list[Cause]:
    """Access modes present, known, and ``ReadWriteOncePod`` not mixed with others."""
    if not modes:
        return [required(path, required_detail)]
    causes = [not_supported(path, mode, ACCESS_MODES) for mode in modes if mode not in ACCESS_MODES]
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        causes.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return causes


def validate_common_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """What claims and volumes check alike: storage class name and volume mode."""
    causes: list[Cause] = []
    if spec.get("storageClassName"):
        causes.extend(validate_dns1123_subdomain(spec["storageClassName"], f"{path}.storageClassName"))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        causes.append(not_supported(f"{path}.volumeMode", mode, VOLUME_MODES))
    return causes


def _validate_capacity(capacity: Mapping[str, Any] | None, path: str) -> list[Cause]:
    if not capacity:
        return [required(path)]
    causes: list[Cause] = []
    if "storage" not in capacity or len(capacity) > 1:
        causes.append(not_supported(path, Raw(_go_resource_list(capacity)), ("storage",)))
    for name, value in capacity.items():
        causes.extend(validate_quantity_value(name, value, f"{path}[{name}]"))
    return causes


def _go_resource_list(resources: Mapping[str, Any]) -> str:
    return "core.ResourceList{" + ", ".join(f'"{k}":"{v}"' for k, v in sorted(resources.items())) + "}"


def _validate_source(spec: Mapping[str, Any], path: str) -> list[Cause]:
    sources = [s for s in PV_SOURCES if spec.get(s) is not None]
    if not sources:
        return [required(path, "must specify a volume type")]
    causes = [forbidden(f"{path}.{extra}", "may not specify more than 1 volume type") for extra in sources[1:]]
    source, body = sources[0], spec[sources[0]] or {}
    if source in ("hostPath", "local"):
        if not body.get("path"):
            causes.append(required(f"{path}.{source}.path"))
        else:
            causes.extend(validate_no_backsteps(body["path"], f"{path}.{source}.path"))
    if source == "local" and not spec.get("nodeAffinity"):
        causes.append(required(f"{path}.nodeAffinity", "Local volume requires node affinity"))
    if source == "nfs":
        if not body.get("server"):
            causes.append(required(f"{path}.nfs.server"))
        if not body.get("path"):
            causes.append(required(f"{path}.nfs.path"))
    if source == "csi":
        if not body.get("driver"):
            causes.append(required(f"{path}.csi.driver"))
        if not body.get("volumeHandle"):
            causes.append(required(f"{path}.csi.volumeHandle"))
    return causes


def validate_volume_node_affinity(affinity: Mapping[str, Any] | None, path: str) -> list[Cause]:
    """``validateVolumeNodeAffinity``: ``required`` set, with at least one valid term."""
    if affinity is None:
        return []
    selector = affinity.get("required")
    if selector is None:
        return [required(f"{path}.required", "must specify required node constraints")]
    terms = selector.get("nodeSelectorTerms") or []
    if not terms:
        return [required(f"{path}.required.nodeSelectorTerms", "must have at least one node selector term")]
    causes: list[Cause] = []
    for i, term in enumerate(terms):
        causes.extend(validate_node_selector_term(term, f"{path}.required.nodeSelectorTerms[{i}]", True))
    return causes


def validate_pv_spec(spec: Mapping[str, Any], path: str = "spec") -> list[Cause]:
    """``ValidatePersistentVolumeSpec``."""
    causes = validate_access_modes(spec.get("accessModes"), f"{path}.accessModes")
    causes += _validate_capacity(spec.get("capacity"), f"{path}.capacity")
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in RECLAIM_POLICIES:
        causes.append(not_supported(f"{path}.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES))
    causes += _validate_source(spec, path)
    causes += validate_volume_node_affinity(spec.get("nodeAffinity"), f"{path}.nodeAffinity")
    causes += validate_common_spec(spec, path)
    return causes


def phase_cell(obj: Mapping[str, Any]) -> str:
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    return str((obj.get("status") or {}).get("phase") or "")


def _stamp_phase_transition(new: Object, old: Object | None) -> None:
    status = new.setdefault("status", {})
    old_phase = ((old or {}).get("status") or {}).get("phase")
    if status.get("phase") != old_phase or old is None:
        status["lastPhaseTransitionTime"] = now_rfc3339()


class PersistentVolumeStrategy(Strategy):
    kind = "PersistentVolume"
    resource = "persistentvolumes"
    singular = "persistentvolume"
    namespaced = False
    short_names = ("pv",)
    subresources = ("status",)
    bumps_generation = False

    def prepare_for_create(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")
        obj["status"] = {"phase": "Pending"}
        _stamp_phase_transition(obj, None)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        spec = new.setdefault("spec", {})
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")
        super().prepare_for_update(new, old)

    def validate(self, obj: Object) -> list[Cause]:
        return validate_pv_spec(obj.get("spec") or {})

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        """``ValidatePersistentVolumeUpdate``: the source, volume mode and a set node affinity are fixed."""
        causes = self.validate(new)
        spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        if any(spec.get(s) != old_spec.get(s) for s in PV_SOURCES):
            causes.append(forbidden("spec.persistentvolumesource",
                                    "spec.persistentvolumesource is immutable after creation"))
        if spec.get("volumeMode") != old_spec.get("volumeMode"):
            causes.append(invalid("spec.volumeMode", spec.get("volumeMode"), "field is immutable"))
        if old_spec.get("nodeAffinity") is not None and spec.get("nodeAffinity") != old_spec["nodeAffinity"]:
            causes.append(invalid("spec.nodeAffinity", Raw("core.VolumeNodeAffinity{...}"), "field is immutable"))
        return causes

    def prepare_for_status_update(self, new: Object, old: Object) -> None:
        super().prepare_for_status_update(new, old)
        _stamp_phase_transition(new, old)

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        phase = (new.get("status") or {}).get("phase")
        phases = ("Available", "Bound", "Failed", "Pending", "Released")
        return [not_supported("status.phase", phase, phases)] if phase and phase not in phases else []

    def selectable_fields(self, obj: Object) -> dict[str, str]:
        return {**super().selectable_fields(obj), "name": (obj.get("metadata") or {}).get("name", "")}

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Capacity", description="capacity is the description of the persistent volume's "
                                                    "resources and capacity."),
                TableColumn("Access Modes", description="accessModes contains all ways the volume can be mounted."),
                TableColumn("Reclaim Policy", description="persistentVolumeReclaimPolicy defines what happens to a "
                                                          "persistent volume when released from its claim."),
                TableColumn("Status", description="phase indicates if a volume is available, bound to a claim, or "
                                                  "released by a claim."),
                TableColumn("Claim", description="claimRef is part of a bi-directional binding between "
                                                 "PersistentVolume and PersistentVolumeClaim."),
                TableColumn("StorageClass", description="StorageClass of the pv"),
                TableColumn("VolumeAttributesClass", description="VolumeAttributesClass of the pv"),
                TableColumn("Reason", description="reason is a brief CamelCase string that describes any failure."),
                AGE_COLUMN,
                TableColumn("VolumeMode", priority=1, description="volumeMode defines if a volume is intended to be "
                                                                  "used with a formatted filesystem or to remain in "
                                                                  "raw block state.")]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        ref = spec.get("claimRef") or {}
        claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref else ""
        return [metadata.get("name", ""), str((spec.get("capacity") or {}).get("storage", "0")),
                access_modes_string(spec.get("accessModes")), spec.get("persistentVolumeReclaimPolicy", ""),
                phase_cell(obj), claim, storage_class_of(obj), spec.get("volumeAttributesClassName") or "<unset>",
                status.get("reason", ""), since(metadata.get("creationTimestamp")),
                spec.get("volumeMode") or "<unset>"]
