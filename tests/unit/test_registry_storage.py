"""PersistentVolume, PersistentVolumeClaim, StorageClass and CSI strategies: defaults, kube's causes, table rows."""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apiserver.registry.csi import CSIDriverStrategy, CSINodeStrategy, VolumeAttachmentStrategy
from apiserver.registry.persistentvolumeclaims import PersistentVolumeClaimStrategy
from apiserver.registry.persistentvolumes import PersistentVolumeStrategy, access_modes_string
from apiserver.registry.storageclasses import StorageClassStrategy

PV, PVC, SC = PersistentVolumeStrategy(), PersistentVolumeClaimStrategy(), StorageClassStrategy()


def errors(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in causes]


def volume(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "pv1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": "/tmp/x"}, **spec}}


def claim(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "data", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec}}


def test_volume_defaults_and_status_on_create() -> None:
    pv = volume()
    PV.prepare_for_create(pv)
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain" and pv["spec"]["volumeMode"] == "Filesystem"
    assert pv["status"]["phase"] == "Pending" and pv["status"]["lastPhaseTransitionTime"]


def test_volume_validation_says_what_kube_says() -> None:
    assert errors(PV.validate(volume(accessModes=[], capacity={}))) == [
        "spec.accessModes: Required value", "spec.capacity: Required value"]
    bad = volume(local={"path": "/a/../b"}, persistentVolumeReclaimPolicy="Keep")
    del bad["spec"]["hostPath"]
    assert errors(PV.validate(bad)) == [
        'spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", '
        '"Retain"',
        "spec.local.path: Invalid value: \"/a/../b\": must not contain '..'",
        "spec.nodeAffinity: Required value: Local volume requires node affinity"]
    none = volume()
    del none["spec"]["hostPath"]
    assert errors(PV.validate(none)) == ["spec: Required value: must specify a volume type"]


def test_volume_source_is_immutable() -> None:
    old = volume()
    PV.prepare_for_create(old)
    new = volume(hostPath={"path": "/tmp/y"})
    PV.prepare_for_update(new, old)
    assert "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation" in \
        errors(PV.validate_update(new, old))


def test_volume_and_claim_rows() -> None:
    pv = volume(accessModes=["ReadWriteMany", "ReadWriteOnce"], storageClassName="standard",
                claimRef={"namespace": "ns", "name": "data"})
    PV.prepare_for_create(pv)
    assert PV.row(pv)[:8] == ["pv1", "1Gi", "RWO,RWX", "Retain", "Pending", "ns/data", "standard", "<unset>"]
    pvc = claim(storageClassName="standard")
    PVC.prepare_for_create(pvc)
    assert PVC.row(pvc)[:7] == ["data", "Pending", "", "", "", "standard", "<unset>"]
    pvc["spec"]["volumeName"] = "pv1"
    pvc["status"] = {"phase": "Bound", "capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"]}
    pvc["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z"
    assert PVC.row(pvc)[:5] == ["data", "Terminating", "pv1", "5Gi", "RWO"]
    assert access_modes_string(["ReadWriteOncePod", "ReadOnlyMany"]) == "ROX,RWOP"


def test_claim_validation_and_update_rules() -> None:
    assert errors(PVC.validate(claim(accessModes=[], resources={}))) == [
        "spec.accessModes: Required value: at least 1 access mode is required",
        "spec.resources[storage]: Required value"]
    old = claim()
    PVC.prepare_for_create(old)
    grown = claim(resources={"requests": {"storage": "2Gi"}})
    PVC.prepare_for_update(grown, old)
    assert errors(PVC.validate_update(grown, old)) == [
        "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName "
        "for bound claims"]
    old["status"]["phase"] = "Bound"
    PVC.prepare_for_update(grown, old)
    assert PVC.validate_update(grown, old) == []
    bound = claim(volumeName="pv1")
    PVC.prepare_for_update(bound, old)
    assert PVC.validate_update(bound, old) == []  # the binder sets volumeName once


def test_storage_class_defaults_immutability_and_default_marker() -> None:
    sc = {"metadata": {"name": "standard", "creationTimestamp": "2026-01-01T00:00:00Z",
                       "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
          "provisioner": "kubelab.io/local-path"}
    SC.prepare_for_create(sc)
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")
    assert SC.row(sc)[:5] == ["standard (default)", "kubelab.io/local-path", "Delete", "Immediate", False]
    changed = {**sc, "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer"}
    assert errors(SC.validate_update(changed, sc)) == [
        "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
        'volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable']
    assert errors(SC.validate({"metadata": {}, "reclaimPolicy": "Recycle", "volumeBindingMode": "Immediate"})) == [
        "provisioner: Required value", 'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", '
                                       '"Retain"']


def test_csi_kinds() -> None:
    driver = {"metadata": {"name": "csi.example.com"}, "spec": {}}
    CSIDriverStrategy().prepare_for_create(driver)
    assert driver["spec"]["attachRequired"] is True and driver["spec"]["volumeLifecycleModes"] == ["Persistent"]
    assert CSIDriverStrategy().name_validator("x" * 64) == ["must be no more than 63 characters"]
    node = {"metadata": {"name": "n1"}, "spec": {"drivers": [{"name": "a.b", "nodeID": ""},
                                                              {"name": "a.b", "nodeID": "x" * 193}]}}
    assert errors(CSINodeStrategy().validate(node)) == [
        "spec.drivers[0].nodeID: Required value", 'spec.drivers[1].name: Duplicate value: "a.b"',
        "spec.drivers[1].nodeID: Too long: may not be more than 192 bytes"]
    attachment = {"metadata": {"name": "va"}, "spec": {"attacher": "a.b", "nodeName": "n1", "source": {
        "persistentVolumeName": "pv1"}}}
    changed = {**attachment, "spec": {**attachment["spec"], "nodeName": "n2"}}
    assert errors(VolumeAttachmentStrategy().validate_update(changed, attachment)) == [
        'spec: Invalid value: storage.VolumeAttachmentSpec{Attacher:"a.b", Source:storage.VolumeAttachmentSource{'
        'PersistentVolumeName:(*string)(0xc000000000), InlineVolumeSpec:(*core.PersistentVolumeSpec)(nil)}, '
        'NodeName:"n2"}: field is immutable']
