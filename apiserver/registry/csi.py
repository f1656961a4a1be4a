"""CSIDrivers, CSINodes and CSIStorageCapacities (storage.k8s.io/v1): what CSI drivers publish about themselves.

Stored and validated as kube-apiserver does (``pkg/apis/storage/validation``, ``SetDefaults_CSIDriver``); no
component of kubelab reads them yet (its one provisioner, ``kubelab.io/local-path``, is built in, not CSI):

* CSIDriver: defaults ``attachRequired: true``, ``podInfoOnMount``, ``storageCapacity``, ``requiresRepublish``
  and ``seLinuxMount`` false, ``fsGroupPolicy: ReadWriteOnceWithFSType``, ``volumeLifecycleModes:
  [Persistent]``; ``attachRequired`` and the lifecycle modes never change;
* CSINode: one entry per driver on the node, unique names, a ``nodeID`` of at most 192 characters;
* CSIStorageCapacity: namespaced; a storage class name and non-negative capacities.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    Raw,
    duplicate,
    go_pointer,
    go_quote,
    invalid,
    is_dns1123_subdomain,
    is_qualified_name,
    not_supported,
    required,
    too_long,
    validate_dns1123_subdomain,
    validate_immutable,
    validate_label_selector,
)
from apiserver.registry.qos import validate_quantity_value
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

CSI_DRIVER_NAME_MAX = 63
CSI_NODE_ID_MAX = 192
FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
LIFECYCLE_MODES = ("Ephemeral", "Persistent")


def csi_driver_name_problems(name: str) -> list[str]:
    """``validateCSIDriverName``'s messages (length first, then a lower-cased DNS subdomain)."""
    if len(name) > CSI_DRIVER_NAME_MAX:
        return [f"must be no more than {CSI_DRIVER_NAME_MAX} characters"]
    return is_dns1123_subdomain(name.lower())


def validate_csi_driver_name(name: Any, path: str) -> list[Cause]:
    if not name:
        return [required(path)]
    if len(str(name)) > CSI_DRIVER_NAME_MAX:
        return [too_long(path, CSI_DRIVER_NAME_MAX)]
    return [invalid(path, name, msg) for msg in is_dns1123_subdomain(str(name).lower())]


def _yes_no(value: Any) -> str:
    return "true" if value else "false"


class CSIDriverStrategy(Strategy):
    group = "storage.k8s.io"
    kind = "CSIDriver"
    resource = "csidrivers"
    singular = "csidriver"
    namespaced = False
    bumps_generation = False

    def name_validator(self, name: str) -> list[str]:
        return csi_driver_name_problems(name)

    def prepare_for_create(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        for field, value in (("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
                             ("requiresRepublish", False), ("seLinuxMount", False),
                             ("fsGroupPolicy", "ReadWriteOnceWithFSType")):
            if spec.get(field) is None:
                spec[field] = value
        if not spec.get("volumeLifecycleModes"):
            spec["volumeLifecycleModes"] = ["Persistent"]

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.prepare_for_create(new)

    def validate(self, obj: Object) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        policy = spec.get("fsGroupPolicy")
        if policy is not None and policy not in FS_GROUP_POLICIES:
            causes.append(not_supported("spec.fsGroupPolicy", policy, FS_GROUP_POLICIES))
        for i, mode in enumerate(spec.get("volumeLifecycleModes") or []):
            if mode not in LIFECYCLE_MODES:
                causes.append(not_supported(f"spec.volumeLifecycleModes[{i}]", mode, LIFECYCLE_MODES))
        audiences: set[str] = set()
        for i, request in enumerate(spec.get("tokenRequests") or []):
            audience = request.get("audience", "")
            if audience in audiences:
                causes.append(duplicate(f"spec.tokenRequests[{i}].audience", audience))
            audiences.add(audience)
            seconds = request.get("expirationSeconds")
            if seconds is not None and seconds < 600:
                causes.append(invalid(f"spec.tokenRequests[{i}].expirationSeconds", seconds,
                                      "may not specify a duration less than 10 minutes"))
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        return (self.validate(new)
                + validate_immutable(spec.get("attachRequired"), old_spec.get("attachRequired"),
                                     "spec.attachRequired")
                + validate_immutable(spec.get("volumeLifecycleModes"), old_spec.get("volumeLifecycleModes"),
                                     "spec.volumeLifecycleModes"))

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("AttachRequired", type="boolean", description="attachRequired indicates this CSI volume "
                                                                         "driver requires an attach operation."),
                TableColumn("PodInfoOnMount", type="boolean", description="podInfoOnMount indicates this CSI volume "
                                                                         "driver requires additional pod "
                                                                         "information during mount operations."),
                TableColumn("StorageCapacity", type="boolean", description="storageCapacity indicates that the CSI "
                                                                          "volume driver wants pod scheduling to "
                                                                          "consider the storage capacity."),
                TableColumn("TokenRequests", description="tokenRequests indicates the CSI driver needs pods' service "
                                                         "account tokens it is mounting volume for to do necessary "
                                                         "authentication."),
                TableColumn("RequiresRepublish", type="boolean", description="requiresRepublish indicates the CSI "
                                                                            "driver wants `NodePublishVolume` being "
                                                                            "periodically called."),
                TableColumn("Modes", description="volumeLifecycleModes defines what kind of volumes this CSI volume "
                                                 "driver supports."),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        tokens = ",".join(t.get("audience", "") for t in spec.get("tokenRequests") or []) or "<unset>"
        modes = ",".join(spec.get("volumeLifecycleModes") or []) or "<none>"
        return [metadata.get("name", ""), bool(spec.get("attachRequired")), bool(spec.get("podInfoOnMount")),
                bool(spec.get("storageCapacity")), tokens, bool(spec.get("requiresRepublish")), modes,
                since(metadata.get("creationTimestamp"))]


class CSINodeStrategy(Strategy):
    group = "storage.k8s.io"
    kind = "CSINode"
    resource = "csinodes"
    singular = "csinode"
    namespaced = False
    bumps_generation = False

    def validate(self, obj: Object) -> list[Cause]:
        """``ValidateCSINode``: each driver named once, with a node ID and valid topology keys."""
        causes: list[Cause] = []
        seen: set[str] = set()
        for i, driver in enumerate((obj.get("spec") or {}).get("drivers") or []):
            path = f"spec.drivers[{i}]"
            name = driver.get("name", "")
            causes += validate_csi_driver_name(name, f"{path}.name")
            if name in seen:
                causes.append(duplicate(f"{path}.name", name))
            seen.add(name)
            node_id = driver.get("nodeID", "")
            if not node_id:
                causes.append(required(f"{path}.nodeID"))
            elif len(node_id) > CSI_NODE_ID_MAX:
                causes.append(too_long(f"{path}.nodeID", CSI_NODE_ID_MAX))
            keys: set[str] = set()
            for j, key in enumerate(driver.get("topologyKeys") or []):
                causes.extend(invalid(f"{path}.topologyKeys[{j}]", key, msg) for msg in is_qualified_name(key))
                if key in keys:
                    causes.append(duplicate(f"{path}.topologyKeys[{j}]", key))
                keys.add(key)
            count = (driver.get("allocatable") or {}).get("count")
            if count is not None and count < 0:
                causes.append(invalid(f"{path}.allocatable.count", count, "must be greater than or equal to 0"))
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("Drivers", type="integer", description="Drivers indicates the number of "
                                                                               "CSI drivers registered on the node"),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), len((obj.get("spec") or {}).get("drivers") or []),
                since(metadata.get("creationTimestamp"))]


class CSIStorageCapacityStrategy(Strategy):
    group = "storage.k8s.io"
    kind = "CSIStorageCapacity"
    resource = "csistoragecapacities"
    singular = "csistoragecapacity"
    bumps_generation = False

    def validate(self, obj: Object) -> list[Cause]:
        """``ValidateCSIStorageCapacity``."""
        causes: list[Cause] = []
        name = obj.get("storageClassName")
        if not name:
            causes.append(required("storageClassName"))
        else:
            causes += validate_dns1123_subdomain(name, "storageClassName")
        causes += validate_label_selector(obj.get("nodeTopology"), "nodeTopology")
        for field in ("capacity", "maximumVolumeSize"):
            if obj.get(field) is not None:
                causes += validate_quantity_value("storage", obj[field], field)
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("StorageClassName", description="storageClassName represents the name of the "
                                                            "StorageClass that the reported capacity applies to."),
                TableColumn("Capacity", description="capacity is the value reported by the CSI driver in its "
                                                    "GetCapacityResponse."),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        capacity = obj.get("capacity")
        return [metadata.get("name", ""), obj.get("storageClassName", ""),
                str(capacity) if capacity is not None else "<unset>", since(metadata.get("creationTimestamp"))]


def _go_attachment_spec(spec: Mapping[str, Any]) -> str:
    """``%#v`` of the spec, as the Invalid cause prints it (pointers shown as set or nil, never as addresses)."""
    source, pointer = spec.get("source") or {}, go_pointer
    return (f"storage.VolumeAttachmentSpec{{Attacher:{go_quote(str(spec.get('attacher', '')))}, "
            "Source:storage.VolumeAttachmentSource{"
            f"PersistentVolumeName:{pointer('string', source.get('persistentVolumeName'))}, "
            f"InlineVolumeSpec:{pointer('core.PersistentVolumeSpec', source.get('inlineVolumeSpec'))}}}, "
            f"NodeName:{go_quote(str(spec.get('nodeName', '')))}}}")


def source_pv_name(attachment: Mapping[str, Any]) -> str:
    return str(((attachment.get("spec") or {}).get("source") or {}).get("persistentVolumeName") or "")


class VolumeAttachmentStrategy(Strategy):
    """VolumeAttachments: a request to attach a volume to a node (an attach/detach controller's intent); the
    status subresource is the attacher's answer. The spec never changes (``ValidateVolumeAttachmentUpdate``)."""

    group = "storage.k8s.io"
    kind = "VolumeAttachment"
    resource = "volumeattachments"
    singular = "volumeattachment"
    namespaced = False
    subresources = ("status",)
    bumps_generation = False

    def prepare_for_create(self, obj: Object) -> None:
        obj.pop("status", None)

    def validate(self, obj: Object) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes = validate_csi_driver_name(spec.get("attacher"), "spec.attacher")
        node = spec.get("nodeName")
        if not node:
            causes.append(required("spec.nodeName"))
        else:
            causes += validate_dns1123_subdomain(node, "spec.nodeName")
        source = spec.get("source") or {}
        pv, inline = source.get("persistentVolumeName"), source.get("inlineVolumeSpec")
        if (pv is None) == (inline is None):
            causes.append(required("spec.source", "must specify exactly one of inlineVolumeSpec and "
                                                  "persistentVolumeName"))
        elif pv is not None:
            causes += validate_dns1123_subdomain(pv, "spec.source.persistentVolumeName") if pv else \
                [required("spec.source.persistentVolumeName", "must specify non empty persistentVolumeName")]
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        causes = self.validate(new)
        if new.get("spec") != old.get("spec"):
            causes.append(invalid("spec", Raw(_go_attachment_spec(new.get("spec") or {})), "field is immutable"))
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Attacher", format="name", description="attacher indicates the name of the volume "
                                                                  "driver that MUST handle this request."),
                TableColumn("PV", format="name", description="persistentVolumeName represents the name of the "
                                                            "persistent volume to attach."),
                TableColumn("Node", format="name", description="nodeName represents the node that the volume "
                                                              "should be attached to."),
                TableColumn("Attached", type="boolean", description="attached indicates the volume is successfully "
                                                                   "attached."),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        return [metadata.get("name", ""), spec.get("attacher", ""), source_pv_name(obj), spec.get("nodeName", ""),
                bool((obj.get("status") or {}).get("attached")), since(metadata.get("creationTimestamp"))]
