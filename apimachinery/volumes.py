"""Claims and volumes: which PersistentVolume may serve a PersistentVolumeClaim, shared by the PV controller
(binding) and the scheduler (VolumeBinding, VolumeZone), as kube's ``pkg/controller/volume/persistentvolume/util``
and ``component-helpers/storage/volume`` are.

The rules of ``FindMatchingVolume``: a volume already bound to the claim wins (unless its node affinity excludes
the node); otherwise the smallest volume that is unclaimed, not being deleted, of the claim's class and volume
mode, matched by its selector, with every access mode the claim asks for, at least as large, and — when a node
is given — whose node affinity admits the node. With delayed binding and no node, only a volume bound to the claim
matches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apimachinery.labels import selector_from_label_selector
from apimachinery.nodeaffinity import term_matches
from apimachinery.quantity import Quantity, parse_quantity

Object = Mapping[str, Any]

# Annotations kube's binder, provisioners and scheduler set (``pkg/controller/volume/persistentvolume/util``).
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
ZONE_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region",
               "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region")


def _meta(obj: Object) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Object) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def storage_class_of(obj: Object) -> str:
    """``GetPersistentVolume(Claim)Class``: the beta annotation wins over ``spec.storageClassName``."""
    annotations = _meta(obj).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    return str(_spec(obj).get("storageClassName") or "")


def claim_key(claim: Object) -> str:
    return f"{_meta(claim).get('namespace', '')}/{_meta(claim).get('name', '')}"


def claim_ref(claim: Object) -> dict[str, Any]:
    """``GetReference`` of a claim, as a volume's ``spec.claimRef`` holds it (the binder's and provisioners')."""
    meta = _meta(claim)
    return {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
            "uid": meta.get("uid", ""), "apiVersion": "v1", "resourceVersion": meta.get("resourceVersion", "")}


def requested_storage(claim: Object) -> Quantity:
    return parse_quantity(((_spec(claim).get("resources") or {}).get("requests") or {}).get("storage") or "0")


def capacity_of(volume: Object) -> Quantity:
    return parse_quantity((_spec(volume).get("capacity") or {}).get("storage") or "0")


def is_bound_to(volume: Object, claim: Object) -> bool:
    """``IsVolumeBoundToClaim``: the volume's claimRef names the claim (and its UID, when the ref has one)."""
    ref = _spec(volume).get("claimRef")
    if not ref:
        return False
    meta = _meta(claim)
    if ref.get("name") != meta.get("name") or ref.get("namespace") != meta.get("namespace"):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def node_affinity_matches(volume: Object, labels: Mapping[str, str], node_name: str) -> bool:
    """``CheckNodeAffinity``: a volume without node affinity fits every node; else one required term must match."""
    required = (_spec(volume).get("nodeAffinity") or {}).get("required")
    if not required:
        return True
    return any(term_matches(term, labels, node_name) for term in required.get("nodeSelectorTerms") or [])


def _access_modes_fit(claim: Object, volume: Object) -> bool:
    return set(_spec(claim).get("accessModes") or []) <= set(_spec(volume).get("accessModes") or [])


def _volume_mode(obj: Object) -> str:
    return str(_spec(obj).get("volumeMode") or "Filesystem")


def find_matching_volume(claim: Object, volumes: Iterable[Object], node: Object | None = None,
                         delay_binding: bool = False) -> Object | None:
    """``FindMatchingVolume`` (see the module docstring); ``node`` is a Node object or None."""
    labels = _meta(node).get("labels") or {} if node is not None else {}
    node_name = _meta(node).get("name", "") if node is not None else ""
    requested = requested_storage(claim)
    selector = _spec(claim).get("selector")
    matches = selector_from_label_selector(selector).matches if selector else None
    wanted_class = storage_class_of(claim)
    best: Object | None = None
    for volume in volumes:
        if _volume_mode(volume) != _volume_mode(claim) or _meta(volume).get("deletionTimestamp"):
            continue
        fits_node = node is None or node_affinity_matches(volume, labels, node_name)
        if is_bound_to(volume, claim):
            return volume if fits_node else None
        if (node is None and delay_binding) or _spec(volume).get("claimRef") or not fits_node:
            continue
        if matches is not None and not matches(_meta(volume).get("labels") or {}):
            continue
        if storage_class_of(volume) != wanted_class or not _access_modes_fit(claim, volume):
            continue
        if (volume.get("status") or {}).get("phase") not in (None, "Available", "Pending"):
            continue
        size = capacity_of(volume)
        if size < requested:
            continue
        if best is None or size < capacity_of(best):
            best = volume
    return best


def is_delay_binding(storage_class: Object | None) -> bool:
    return storage_class is not None and storage_class.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER


def pod_claim_names(pod: Object) -> list[str]:
    """The claims a pod's volumes name, in volume order (ephemeral volumes' claims are ``<pod>-<volume>``)."""
    names: list[str] = []
    for volume in _spec(pod).get("volumes") or []:
        source = volume.get("persistentVolumeClaim")
        if source is not None:
            names.append(str(source.get("claimName") or ""))
        elif volume.get("ephemeral") is not None:
            names.append(f"{_meta(pod).get('name', '')}-{volume.get('name', '')}")
    return names
