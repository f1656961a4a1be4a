"""A StatefulSet end to end: a real controller-manager (statefulset, the PV binder, pvc-protection, the garbage
collector), a real scheduler and a real kubelet (the ``kubelab.io/local-path`` provisioner, claims mounted into
containers), driven by kubectl 1.32.

Three replicas come up in order, each with its own provisioned, Bound claim; a file written in ``web-0`` through
``kubectl exec`` is there again after ``kubectl delete pod web-0`` (the new ``web-0`` mounts the same claim); the
containers see their stable hostname.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from conftest import Kubectl
from support.controllers import ControllerManager
from support.kubelet import Node, running_node
from support.scheduler import SchedulerProcess
from support.wait import wait_for

pytestmark = pytest.mark.kubectl

PREFIX = f"sts-{uuid.uuid4().hex[:6]}"
SCHEDULER = f"sched-{PREFIX}"
NODE = f"{PREFIX}-node"
CLASS = f"{PREFIX}-local"


@pytest.fixture(scope="module")
def node(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    logs = tmp_path_factory.mktemp("sts-storage")
    with httpx.Client(base_url=api_url, timeout=30) as client:
        body = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": CLASS},
                "provisioner": "kubelab.io/local-path", "reclaimPolicy": "Delete",
                "volumeBindingMode": "WaitForFirstConsumer"}
        assert client.post("/apis/storage.k8s.io/v1/storageclasses", json=body).status_code == 201
        cm = ControllerManager(api_url, logs / "controller-manager.log", "--leader-elect=false",
                               "--controllers=statefulset,persistentvolume-binder,pvc-protection,garbagecollector")
        scheduler = SchedulerProcess(api_url, logs / "scheduler.log", f"--scheduler-name={SCHEDULER}",
                                     f"--leader-elect-resource-name={SCHEDULER}")
        try:
            with running_node(api_url, NODE, logs) as kubelet:
                wait_for(lambda: client.get(f"/api/v1/nodes/{NODE}").status_code == 200, what="the node")
                yield kubelet
        finally:
            scheduler.stop()
            cm.stop()
            client.delete(f"/apis/storage.k8s.io/v1/storageclasses/{CLASS}")
            client.delete(f"/api/v1/nodes/{NODE}")


def statefulset() -> str:
    return json.dumps({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"}, "spec": {
        "serviceName": "nginx", "replicas": 3, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "schedulerName": SCHEDULER, "nodeSelector": {"kubernetes.io/hostname": NODE},
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 3600"],
                            "volumeMounts": [{"name": "www", "mountPath": "/data"}]}]}},
        "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {
            "storageClassName": CLASS, "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}]}})


def get(client: httpx.Client, path: str) -> dict[str, Any]:
    resp = client.get(path)
    return resp.json() if resp.status_code == 200 else {}


def ready_since(pod: dict[str, Any]) -> str | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return str(condition.get("lastTransitionTime"))
    return None


def test_ordered_pods_with_bound_claims_keep_their_data(node: Node, kubectl: Kubectl, client: httpx.Client,
                                                        ns: str) -> None:
    kubectl("-n", ns, "apply", "-f", "-", input=statefulset())
    wait_for(lambda: (get(client, f"/apis/apps/v1/namespaces/{ns}/statefulsets/web").get("status") or {})
             .get("readyReplicas") == 3, timeout=90, what="3 ready replicas")
    pods = {i: get(client, f"/api/v1/namespaces/{ns}/pods/web-{i}") for i in range(3)}
    for i in (1, 2):  # each pod was created only once its predecessor was Ready
        before = ready_since(pods[i - 1])
        assert before is not None and pods[i]["metadata"]["creationTimestamp"] >= before
    claims = client.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims").json()["items"]
    assert sorted((c["metadata"]["name"], c["status"]["phase"]) for c in claims) == [
        ("www-web-0", "Bound"), ("www-web-1", "Bound"), ("www-web-2", "Bound")]
    listed = kubectl("-n", ns, "get", "pvc").stdout.splitlines()
    assert [line.split()[:2] for line in listed[1:]] == [["www-web-0", "Bound"], ["www-web-1", "Bound"],
                                                        ["www-web-2", "Bound"]]
    assert kubectl("-n", ns, "exec", "web-1", "--", "sh", "-c", "echo $HOSTNAME").stdout.strip() == "web-1"

    kubectl("-n", ns, "exec", "web-0", "--", "sh", "-c", "echo hello from web-0 > /data/f")
    old_uid = pods[0]["metadata"]["uid"]
    kubectl("-n", ns, "delete", "pod", "web-0", "--wait=false")

    def replaced() -> bool:
        pod = get(client, f"/api/v1/namespaces/{ns}/pods/web-0")
        return bool(pod) and pod["metadata"]["uid"] != old_uid and (pod.get("status") or {}).get("phase") == \
            "Running"
    wait_for(replaced, timeout=90, what="web-0 made anew")
    assert kubectl("-n", ns, "exec", "web-0", "--", "cat", "/data/f").stdout == "hello from web-0\n"
    claim = get(client, f"/api/v1/namespaces/{ns}/persistentvolumeclaims/www-web-0")
    assert claim["metadata"]["uid"] == next(c for c in claims if c["metadata"]["name"] == "www-web-0")[
        "metadata"]["uid"]
