"""The storage admission plugins: ``DefaultStorageClass`` and ``StorageObjectInUseProtection``.

* ``DefaultStorageClass`` (``plugin/pkg/admission/storage/storageclass/setdefault``): a new claim that names no
  class at all (``storageClassName`` unset and no beta annotation; ``""`` is a choice and stays) gets the default
  StorageClass — the newest when several are annotated ``storageclass.kubernetes.io/is-default-class: "true"``,
  the name first on a tie, as kube picks;
* ``PersistentVolumeClaimResize`` (validating): a bigger storage request only where the class has
  ``allowVolumeExpansion``, else 403 with kube's text;
* ``StorageObjectInUseProtection`` (``…/storageobjectinuseprotection``): new claims get the
  ``kubernetes.io/pvc-protection`` finalizer and new volumes ``kubernetes.io/pv-protection``; the protection
  controllers (``controllers.pvcprotection``, ``controllers.pvprotection``) remove it once nothing uses them.
"""

from __future__ import annotations

import copy

from apimachinery import errors
from apimachinery.volumes import BETA_STORAGE_CLASS_ANNOTATION, requested_storage, storage_class_of

from ..registry.storageclasses import is_default_class
from .attributes import Attributes
from .sources import Sources

PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"


def _creates(attrs: Attributes, resource: str) -> bool:
    return (attrs.group == "" and attrs.resource == resource and not attrs.subresource
            and attrs.operation == "CREATE" and attrs.obj is not None)


class DefaultStorageClass:
    def __init__(self, sources: Sources) -> None:
        self.sources = sources

    def configured(self) -> bool:
        return bool(self.sources.cached("storage.k8s.io", "storageclasses"))

    def concerns(self, group: str, resource: str) -> bool:
        return (group, resource) == ("", "persistentvolumeclaims")

    def handles(self, attrs: Attributes) -> bool:
        if not _creates(attrs, "persistentvolumeclaims") or attrs.obj is None:
            return False
        annotations = (attrs.obj.get("metadata") or {}).get("annotations") or {}
        return (attrs.obj.get("spec") or {}).get("storageClassName") is None and \
            BETA_STORAGE_CLASS_ANNOTATION not in annotations

    async def admit(self, attrs: Attributes) -> None:
        defaults = [sc for sc in self.sources.list("storage.k8s.io", "storageclasses") if is_default_class(sc)]
        if not defaults or attrs.obj is None:
            return
        chosen = max(defaults, key=lambda sc: (sc["metadata"].get("creationTimestamp", ""),
                                               [-ord(c) for c in sc["metadata"]["name"]]))
        claim = copy.deepcopy(attrs.obj)
        claim.setdefault("spec", {})["storageClassName"] = chosen["metadata"]["name"]
        attrs.obj = claim


class StorageObjectInUseProtection:
    def configured(self) -> bool:
        return True

    def concerns(self, group: str, resource: str) -> bool:
        return group == "" and resource in ("persistentvolumeclaims", "persistentvolumes")

    def handles(self, attrs: Attributes) -> bool:
        return _creates(attrs, "persistentvolumeclaims") or _creates(attrs, "persistentvolumes")

    async def admit(self, attrs: Attributes) -> None:
        if attrs.obj is None:
            return
        finalizer = PVC_PROTECTION_FINALIZER if attrs.resource == "persistentvolumeclaims" else \
            PV_PROTECTION_FINALIZER
        finalizers = (attrs.obj.get("metadata") or {}).get("finalizers") or []
        if finalizer in finalizers:
            return
        obj = copy.deepcopy(attrs.obj)
        obj.setdefault("metadata", {})["finalizers"] = [*finalizers, finalizer]
        attrs.obj = obj


class PersistentVolumeClaimResize:
    """``PersistentVolumeClaimResize`` (validating): a claim may ask for more storage only when its class allows
    volume expansion."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources

    def configured(self) -> bool:
        return True

    def concerns(self, group: str, resource: str) -> bool:
        return (group, resource) == ("", "persistentvolumeclaims")

    def handles(self, attrs: Attributes) -> bool:
        return (attrs.group == "" and attrs.resource == "persistentvolumeclaims" and not attrs.subresource
                and attrs.operation == "UPDATE" and attrs.obj is not None and attrs.old is not None)

    async def validate(self, attrs: Attributes) -> None:
        assert attrs.obj is not None and attrs.old is not None
        if requested_storage(attrs.obj) <= requested_storage(attrs.old):
            return
        storage_class = self.sources.get("storage.k8s.io", "storageclasses", None, storage_class_of(attrs.obj))
        if storage_class is None or not storage_class.get("allowVolumeExpansion"):
            raise errors.forbidden(attrs.resource, attrs.name, "only dynamically provisioned pvc can be resized and "
                                                               "the storageclass that provisions the pvc must "
                                                               "support resize")
