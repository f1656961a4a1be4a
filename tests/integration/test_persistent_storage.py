"""Persistent storage end to end: a real controller-manager (the PV binder, the protection controllers and the
expander), a real scheduler (VolumeBinding, VolumeZone) and a real kubelet (the ``kubelab.io/local-path``
provisioner, claims mounted into containers), driven by kubectl 1.32 and the Python client.

A pod with a claim of a ``WaitForFirstConsumer`` class gets a volume provisioned on its node, writes a file, and a
new pod with the same claim reads it after the first is deleted; an in-use claim is kept by pvc-protection; the
claim's deletion deletes the volume and its directory (``Delete``) or leaves it ``Released`` (``Retain``); a pod
whose claim is missing stays Pending and ``kubectl describe`` says why, until the claim appears; a static volume
binds an ``Immediate`` claim; a bound claim grows where its class allows expansion.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s

from conftest import Kubectl
from support.controllers import ControllerManager
from support.kubelet import Node, running_node
from support.scheduler import SchedulerProcess
from support.storage import STORAGE_CONTROLLERS, create_local_path_class
from support.wait import wait_for

pytestmark = pytest.mark.kubectl

PREFIX = f"st-{uuid.uuid4().hex[:6]}"
SCHEDULER = f"sched-{PREFIX}"
NODE = f"{PREFIX}-node"
LOCAL = f"{PREFIX}-local"  # WaitForFirstConsumer, Delete, expandable
RETAIN = f"{PREFIX}-retain"  # WaitForFirstConsumer, Retain


@pytest.fixture(scope="module")
def node(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    logs = tmp_path_factory.mktemp("storage")
    with httpx.Client(base_url=api_url, timeout=30) as client:
        for name, policy in ((LOCAL, "Delete"), (RETAIN, "Retain")):
            create_local_path_class(client, name, policy)
        cm = ControllerManager(api_url, logs / "controller-manager.log", "--leader-elect=false",
                               f"--controllers={STORAGE_CONTROLLERS}")
        scheduler = SchedulerProcess(api_url, logs / "scheduler.log", f"--scheduler-name={SCHEDULER}",
                                     f"--leader-elect-resource-name={SCHEDULER}")
        try:
            with running_node(api_url, NODE, logs) as kubelet:
                wait_for(lambda: client.get(f"/api/v1/nodes/{NODE}").status_code == 200, what="the node")
                yield kubelet
        finally:
            scheduler.stop()
            cm.stop()
            for name in (LOCAL, RETAIN):
                client.delete(f"/apis/storage.k8s.io/v1/storageclasses/{name}")
            client.delete(f"/api/v1/nodes/{NODE}")


def claim(name: str, storage_class: str, size: str = "1Gi") -> str:
    return json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                       "spec": {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"],
                                "resources": {"requests": {"storage": size}}}})


def pod(name: str, claim_name: str, script: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "schedulerName": SCHEDULER, "nodeSelector": {"kubernetes.io/hostname": NODE},
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", script],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]}})


def get(client: httpx.Client, path: str) -> dict[str, Any]:
    resp = client.get(path)
    return resp.json() if resp.status_code == 200 else {}


def pod_phase(client: httpx.Client, ns: str, name: str) -> str:
    return str((get(client, f"/api/v1/namespaces/{ns}/pods/{name}").get("status") or {}).get("phase") or "")


def claim_of(client: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    return get(client, f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}")


def volume(client: httpx.Client, name: str) -> dict[str, Any]:
    return get(client, f"/api/v1/persistentvolumes/{name}")


def bound_volume(client: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    """The claim's volume once the claim is Bound (waited for)."""
    found = wait_for(lambda: claim_of(client, ns, name) if (claim_of(client, ns, name).get("status") or {})
                     .get("phase") == "Bound" else None, what=f"claim {name} Bound")
    return volume(client, found["spec"]["volumeName"])


def delete_pod(kubectl: Kubectl, client: httpx.Client, ns: str, name: str) -> None:
    kubectl("-n", ns, "delete", "pod", name, "--wait=false")
    wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/{name}").status_code == 404, what=f"{name} gone")


def test_a_provisioned_volume_keeps_its_data_across_pods(node: Node, kubectl: Kubectl, client: httpx.Client,
                                                         ns: str, api: Any) -> None:
    kubectl("-n", ns, "create", "-f", "-", input=claim("data", LOCAL))
    wait_for(lambda: "waiting for first consumer to be created before binding" in
             kubectl("-n", ns, "describe", "pvc", "data").stdout, what="the WaitForFirstConsumer event")
    assert kubectl("-n", ns, "get", "pvc", "data").stdout.splitlines()[1].split()[:2] == ["data", "Pending"]

    kubectl("-n", ns, "create", "-f", "-", input=pod("writer", "data", "echo hello > /data/f && sleep 3600"))
    wait_for(lambda: pod_phase(client, ns, "writer") == "Running", what="writer Running")
    pv = bound_volume(client, ns, "data")
    uid = claim_of(client, ns, "data")["metadata"]["uid"]
    assert pv["metadata"]["name"] == f"pvc-{uid}"
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "kubelab.io/local-path"
    assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE]}]
    directory = Path(pv["spec"]["hostPath"]["path"])
    assert directory.parent == node.root / "root" / "local-path"
    wait_for(lambda: (directory / "f").exists(), what="the file written through the mount")
    assert (directory / "f").read_text() == "hello\n"
    row = kubectl("get", "pv", pv["metadata"]["name"]).stdout.splitlines()[1].split()
    assert row[1:7] == ["1Gi", "RWO", "Delete", "Bound", f"{ns}/data", LOCAL]
    pvc_row = kubectl("-n", ns, "get", "pvc", "data").stdout.splitlines()[1].split()
    assert pvc_row[:6] == ["data", "Bound", pv["metadata"]["name"], "1Gi", "RWO", LOCAL]
    wait_for(lambda: f"Successfully provisioned volume {pv['metadata']['name']}" in
             kubectl("-n", ns, "describe", "pvc", "data").stdout, what="the ProvisioningSucceeded event")

    delete_pod(kubectl, client, ns, "writer")
    kubectl("-n", ns, "create", "-f", "-", input=pod("reader", "data", "cat /data/f && sleep 3600"))
    wait_for(lambda: pod_phase(client, ns, "reader") == "Running", what="reader Running")
    wait_for(lambda: kubectl("-n", ns, "logs", "reader", check=False).stdout == "hello\n", what="reader's log")
    described = kubectl("-n", ns, "describe", "pvc", "data").stdout
    assert "Used By:       reader" in described and "Status:        Bound" in described
    core = k8s.CoreV1Api(api)
    listed = {v.metadata.name: v for v in core.list_persistent_volume().items}
    assert listed[pv["metadata"]["name"]].spec.claim_ref.name == "data"
    assert core.read_namespaced_persistent_volume_claim_status("data", ns).status.capacity == {"storage": "1Gi"}

    # pvc-protection: the claim a running pod uses stays, Terminating, until the pod is gone.
    kubectl("-n", ns, "delete", "pvc", "data", "--wait=false")
    kept = core.read_namespaced_persistent_volume_claim("data", ns)
    assert kept.metadata.deletion_timestamp is not None
    assert kept.metadata.finalizers == ["kubernetes.io/pvc-protection"]
    assert kubectl("-n", ns, "get", "pvc", "data").stdout.splitlines()[1].split()[1] == "Terminating"
    delete_pod(kubectl, client, ns, "reader")
    wait_for(lambda: client.get(f"/api/v1/persistentvolumes/{pv['metadata']['name']}").status_code == 404,
             what="the volume deleted with its claim (reclaim policy Delete)")
    assert claim_of(client, ns, "data") == {}
    assert not directory.exists()


def test_retain_keeps_the_released_volume_and_its_data(node: Node, kubectl: Kubectl, client: httpx.Client,
                                                       ns: str) -> None:
    kubectl("-n", ns, "create", "-f", "-", input=claim("keep", RETAIN))
    kubectl("-n", ns, "create", "-f", "-", input=pod("w", "keep", "echo kept > /data/f && sleep 3600"))
    pv = bound_volume(client, ns, "keep")
    directory = Path(pv["spec"]["hostPath"]["path"])
    wait_for(lambda: (directory / "f").exists(), what="the file")
    delete_pod(kubectl, client, ns, "w")
    kubectl("-n", ns, "delete", "pvc", "keep")
    name = pv["metadata"]["name"]
    wait_for(lambda: (volume(client, name).get("status") or {}).get("phase") == "Released",
             what="the volume Released")
    row = kubectl("get", "pv", name).stdout.splitlines()[1].split()
    assert row[3:6] == ["Retain", "Released", f"{ns}/keep"]
    assert (directory / "f").read_text() == "kept\n"
    kubectl("delete", "pv", name)  # not bound: pv-protection lets it go
    assert volume(client, name) == {}


def test_a_pod_whose_claim_is_missing_stays_pending_until_it_exists(node: Node, kubectl: Kubectl,
                                                                      client: httpx.Client, ns: str) -> None:
    kubectl("-n", ns, "create", "-f", "-", input=pod("waiting", "nope", "sleep 3600"))

    def scheduled_condition() -> dict[str, Any] | None:
        conditions = (get(client, f"/api/v1/namespaces/{ns}/pods/waiting").get("status") or {}).get("conditions")
        return next((c for c in conditions or [] if c["type"] == "PodScheduled"), None)

    condition = wait_for(scheduled_condition, what="PodScheduled=False")
    assert condition["status"] == "False" and condition["reason"] == "Unschedulable"
    assert 'nodes are available: persistentvolumeclaim "nope" not found.' in condition["message"]
    described = kubectl("-n", ns, "describe", "pod", "waiting").stdout
    assert re.search(r"^Status:\s+Pending$", described, re.M), described  # the width follows the longest label
    assert "FailedScheduling" in described and 'persistentvolumeclaim "nope" not found' in described
    assert pod_phase(client, ns, "waiting") == "Pending"

    kubectl("-n", ns, "create", "-f", "-", input=claim("nope", LOCAL))
    wait_for(lambda: pod_phase(client, ns, "waiting") == "Running", what="the pod Running once its claim exists")
    delete_pod(kubectl, client, ns, "waiting")


def test_a_static_volume_binds_an_immediate_claim_which_then_grows(node: Node, kubectl: Kubectl,
                                                                   client: httpx.Client, ns: str,
                                                                   tmp_path: Path) -> None:
    static_class = f"{PREFIX}-static-{uuid.uuid4().hex[:4]}"
    kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": static_class},
        "provisioner": "kubernetes.io/no-provisioner", "allowVolumeExpansion": True}))
    pv_name = f"{static_class}-pv"
    kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce", "ReadWriteMany"],
                 "storageClassName": static_class, "hostPath": {"path": str(tmp_path / "static")}}}))
    try:
        wait_for(lambda: (volume(client, pv_name).get("status") or {}).get("phase") == "Available",
                 what="the static volume Available")
        kubectl("-n", ns, "create", "-f", "-", input=claim("big", static_class, size="10Gi"))
        kubectl("-n", ns, "create", "-f", "-", input=pod("unbound", "big", "sleep 3600"))
        wait_for(lambda: "pod has unbound immediate PersistentVolumeClaims" in
                 kubectl("-n", ns, "describe", "pod", "unbound").stdout, what="the unbound-claim FailedScheduling")

        kubectl("-n", ns, "create", "-f", "-", input=claim("small", static_class, size="2Gi"))
        assert bound_volume(client, ns, "small")["metadata"]["name"] == pv_name
        stored = claim_of(client, ns, "small")
        assert stored["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
        assert stored["status"]["capacity"] == {"storage": "5Gi"}
        assert stored["status"]["accessModes"] == ["ReadWriteOnce", "ReadWriteMany"]
        assert (claim_of(client, ns, "big").get("status") or {}).get("phase") == "Pending"

        kubectl("-n", ns, "patch", "pvc", "small", "-p", '{"spec":{"resources":{"requests":{"storage":"8Gi"}}}}')
        wait_for(lambda: (claim_of(client, ns, "small")["status"].get("capacity") or {}).get("storage") == "8Gi",
                 what="the claim expanded")
        assert volume(client, pv_name)["spec"]["capacity"] == {"storage": "8Gi"}
        wait_for(lambda: f"ExpandVolume succeeded for volume {ns}/small" in
                 kubectl("-n", ns, "describe", "pvc", "small").stdout, what="the VolumeResizeSuccessful event")
    finally:
        kubectl("-n", ns, "delete", "pod", "unbound", "--wait=false", check=False)
        kubectl("-n", ns, "delete", "pvc", "small", "big", "--wait=false", check=False)
        kubectl("delete", "pv", pv_name, "--wait=false", check=False)
        kubectl("delete", "sc", static_class, check=False)


def test_a_pod_on_its_node_waits_in_container_creating_until_its_claim_is_bound(
        node: Node, kubectl: Kubectl, client: httpx.Client, ns: str, tmp_path: Path) -> None:
    manual = f"{PREFIX}-manual-{uuid.uuid4().hex[:4]}"  # a class name with no StorageClass: binding only
    late = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "late"},
            "spec": {"storageClassName": manual, "accessModes": ["ReadWriteOnce"], "selector": {"matchLabels": {
                "for": PREFIX}}, "resources": {"requests": {"storage": "1Gi"}}}}
    kubectl("-n", ns, "create", "-f", "-", input=json.dumps(late))
    wait_for(lambda: f'storageclass.storage.k8s.io "{manual}" not found' in
             kubectl("-n", ns, "describe", "pvc", "late").stdout, what="the ProvisioningFailed event")
    body = json.loads(pod("early", "late", "cat /data/seed && sleep 3600"))
    body["spec"]["nodeName"] = NODE  # placed by hand: the kubelet must wait for the claim itself
    kubectl("-n", ns, "create", "-f", "-", input=json.dumps(body))

    def waiting_reason() -> str:
        statuses = (get(client, f"/api/v1/namespaces/{ns}/pods/early").get("status") or {}).get(
            "containerStatuses") or []
        return str(((statuses[0].get("state") or {}).get("waiting") or {}).get("reason") or "") if statuses else ""

    wait_for(lambda: waiting_reason() == "ContainerCreating", what="the container waiting in ContainerCreating")
    wait_for(lambda: f"error processing PVC {ns}/late: PVC is not bound" in
             kubectl("-n", ns, "describe", "pod", "early").stdout, what="the FailedMount event")
    described = kubectl("-n", ns, "describe", "pod", "early").stdout
    assert "Unable to attach or mount volumes: unmounted volumes=[data]" in described
    assert pod_phase(client, ns, "early") == "Pending"

    (tmp_path / "late").mkdir()
    (tmp_path / "late" / "seed").write_text("from the volume\n")
    pv_name = f"{PREFIX}-late-{uuid.uuid4().hex[:4]}"
    kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name, "labels": {"for": PREFIX}},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": manual,
                 "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": str(tmp_path / "late")}}}))
    try:
        assert bound_volume(client, ns, "late")["metadata"]["name"] == pv_name
        wait_for(lambda: pod_phase(client, ns, "early") == "Running", what="the pod Running once its claim is bound")
        wait_for(lambda: kubectl("-n", ns, "logs", "early", check=False).stdout == "from the volume\n",
                 what="the pod reading the volume")
    finally:
        delete_pod(kubectl, client, ns, "early")
        kubectl("-n", ns, "delete", "pvc", "late")
        wait_for(lambda: (volume(client, pv_name).get("status") or {}).get("phase") == "Released",
                 what="the static volume Released")
        kubectl("delete", "pv", pv_name)
