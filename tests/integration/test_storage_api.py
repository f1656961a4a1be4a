"""The storage API with the real apiserver and kubectl 1.32: PersistentVolumes, PersistentVolumeClaims,
StorageClasses and the CSI kinds are served, defaulted, validated and printed as kube-apiserver does; the
DefaultStorageClass and StorageObjectInUseProtection admission fill in the class and the protection finalizers."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from conftest import Kubectl

pytestmark = pytest.mark.kubectl


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def host_path_pv(name: str, size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": f"/tmp/{name}"}, **spec}}


def claim(name: str, size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}}


def test_pv_is_defaulted_protected_and_printed_as_kube(kubectl: Kubectl, client: httpx.Client) -> None:
    name = unique("pv")
    kubectl("create", "-f", "-", input=json.dumps(host_path_pv(name, storageClassName="manual")))
    try:
        pv = client.get(f"/api/v1/persistentvolumes/{name}").json()
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        assert pv["spec"]["volumeMode"] == "Filesystem"
        assert pv["status"]["phase"] == "Pending" and pv["status"]["lastPhaseTransitionTime"]
        assert pv["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
        table = kubectl("get", "pv", name).stdout.splitlines()
        assert table[0].split() == ["NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY", "STATUS", "CLAIM",
                                    "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"]
        assert table[1].split()[:6] == [name, "1Gi", "RWO", "Retain", "Pending", "manual"]
        described = kubectl("describe", "pv", name).stdout
        assert "Finalizers:      [kubernetes.io/pv-protection]" in described
        assert "Type:          HostPath (bare host directory volume)" in described
    finally:
        client.patch(f"/api/v1/persistentvolumes/{name}", json={"metadata": {"finalizers": None}},
                     headers={"content-type": "application/merge-patch+json"})
        kubectl("delete", "pv", name, "--wait=false", check=False)


def test_bad_volumes_and_claims_get_kubes_causes(kubectl: Kubectl, ns: str) -> None:
    bad_pv = host_path_pv(unique("pv"), accessModes=["ReadWriteOncePod", "ReadOnlyMany"])
    bad_pv["spec"]["capacity"] = {"storage": "1Gi", "cpu": "1"}
    bad_pv["spec"]["local"] = {"path": "/mnt/x"}
    out = kubectl("create", "-f", "-", input=json.dumps(bad_pv), check=False).stderr
    assert "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes" in out
    assert 'spec.capacity: Unsupported value: core.ResourceList{"cpu":"1", "storage":"1Gi"}' in out \
        or "spec.capacity: Unsupported value" in out
    assert "spec.local: Forbidden: may not specify more than 1 volume type" in out
    bad_claim = claim("c", size="0")
    bad_claim["spec"]["accessModes"] = []
    out = kubectl("-n", ns, "create", "-f", "-", input=json.dumps(bad_claim), check=False).stderr
    assert "spec.accessModes: Required value: at least 1 access mode is required" in out
    assert "spec.resources[storage]: Invalid value: \"0\": must be greater than zero" in out


def test_claim_spec_is_immutable_but_a_bound_claim_may_grow(kubectl: Kubectl, ns: str, api: Any) -> None:
    core = k8s.CoreV1Api(api)
    kubectl("-n", ns, "create", "-f", "-", input=json.dumps(claim("data", storageClassName="none")))
    out = kubectl("-n", ns, "patch", "pvc", "data", "-p", '{"spec":{"accessModes":["ReadWriteMany"]}}',
                  check=False).stderr
    assert "spec: Forbidden: spec is immutable after creation except resources.requests and " \
           "volumeAttributesClassName for bound claims" in out
    kubectl("-n", ns, "patch", "pvc", "data", "--subresource=status", "-p", '{"status":{"phase":"Bound"}}')
    out = kubectl("-n", ns, "patch", "pvc", "data", "-p", '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}',
                  check=False).stderr
    assert 'persistentvolumeclaims "data" is forbidden: only dynamically provisioned pvc can be resized and the ' \
           "storageclass that provisions the pvc must support resize" in out
    out = kubectl("-n", ns, "patch", "pvc", "data", "-p", '{"spec":{"resources":{"requests":{"storage":"512Mi"}}}}',
                  check=False).stderr
    assert "spec.resources.requests.storage: Forbidden: field can not be less than previous value" in out
    read = core.read_namespaced_persistent_volume_claim("data", ns)
    assert read.spec.resources.requests == {"storage": "1Gi"}
    assert read.metadata.finalizers == ["kubernetes.io/pvc-protection"]
    table = kubectl("-n", ns, "get", "pvc").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS",
                                "VOLUMEATTRIBUTESCLASS", "AGE"]
    assert table[1].split()[:4] == ["data", "Bound", "none", "<unset>"]
    kubectl("-n", ns, "delete", "pvc", "data", "--wait=false")


def test_default_storage_class_names_the_class_of_claims_without_one(kubectl: Kubectl, ns: str, api: Any) -> None:
    name = unique("fast")
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
          "metadata": {"name": name, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
          "provisioner": "example.com/fast", "allowVolumeExpansion": True}
    kubectl("create", "-f", "-", input=json.dumps(sc))
    try:
        stored = k8s.StorageV1Api(api).read_storage_class(name)
        assert (stored.reclaim_policy, stored.volume_binding_mode) == ("Delete", "Immediate")
        row = next(line for line in kubectl("get", "sc").stdout.splitlines() if line.startswith(name))
        assert row.split()[:6] == [name, "(default)", "example.com/fast", "Delete", "Immediate", "true"]
        kubectl("-n", ns, "create", "-f", "-", input=json.dumps(claim("auto")))
        kubectl("-n", ns, "create", "-f", "-", input=json.dumps(claim("none", storageClassName="")))
        core = k8s.CoreV1Api(api)
        assert core.read_namespaced_persistent_volume_claim("auto", ns).spec.storage_class_name == name
        assert core.read_namespaced_persistent_volume_claim("none", ns).spec.storage_class_name == ""
        out = kubectl("patch", "sc", name, "-p", '{"provisioner":"other.com/x"}', check=False).stderr
        assert "provisioner: Forbidden: updates to provisioner are forbidden." in out
    finally:
        kubectl("delete", "sc", name)
        kubectl("-n", ns, "delete", "pvc", "--all", "--wait=false")  # no claim left to bind others' volumes


def test_csi_kinds_are_served_and_validated(kubectl: Kubectl, ns: str, api: Any) -> None:
    storage = k8s.StorageV1Api(api)
    driver = unique("csi.example.com")
    storage.create_csi_driver({"metadata": {"name": driver}, "spec": {}})
    try:
        spec = storage.read_csi_driver(driver).spec
        assert (spec.attach_required, spec.pod_info_on_mount, spec.volume_lifecycle_modes,
                spec.fs_group_policy) == (True, False, ["Persistent"], "ReadWriteOnceWithFSType")
        row = kubectl("get", "csidriver", driver).stdout.splitlines()[1].split()
        assert row[:7] == [driver, "true", "false", "false", "<unset>", "false", "Persistent"]
        with pytest.raises(ApiException) as refused:
            storage.patch_csi_driver(driver, {"spec": {"attachRequired": False}})
        assert "spec.attachRequired: Invalid value: false: field is immutable" in refused.value.body
        attachment = unique("va")
        storage.create_volume_attachment({"metadata": {"name": attachment}, "spec": {
            "attacher": driver, "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}}})
        storage.patch_volume_attachment_status(attachment, {"status": {"attached": True}})
        row = kubectl("get", "volumeattachment", attachment).stdout.splitlines()[1].split()
        assert row[:5] == [attachment, driver, "pv1", "n1", "true"]
        storage.delete_volume_attachment(attachment)
        with pytest.raises(ApiException) as refused:
            storage.create_volume_attachment({"metadata": {"name": "bad"}, "spec": {"attacher": driver,
                                                                                    "nodeName": "n1", "source": {}}})
        assert "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName" \
            in refused.value.body
        storage.create_namespaced_csi_storage_capacity(ns, {"metadata": {"name": "cap"}, "storageClassName": "sc",
                                                            "capacity": "10Gi"})
        assert kubectl("-n", ns, "get", "csistoragecapacities").stdout.splitlines()[1].split()[:3] == \
            ["cap", "sc", "10Gi"]
        storage.create_csi_node({"metadata": {"name": driver}, "spec": {"drivers": [
            {"name": driver, "nodeID": "n1"}]}})
        assert kubectl("get", "csinode", driver).stdout.splitlines()[1].split()[:2] == [driver, "1"]
        storage.delete_csi_node(driver)
    finally:
        storage.delete_csi_driver(driver)
