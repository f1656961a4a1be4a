"""An operator written with kopf (from PyPI, unmodified) against a real cluster: its CRD applied with kubectl, a
custom resource created → the operator's handler creates a Deployment owned by it, whose pod a scheduler binds
and a kubelet runs, and writes the resource's status; deleting the resource runs the operator's deletion handler
(kopf's finalizer) and the garbage collector removes the Deployment, its ReplicaSet and pods."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from conftest import Kubectl
from kubelab.etcd import free_port
from support.controllers import ControllerManager
from support.crds import CRDS, new_group
from support.process import ComponentProcess, kill_containers
from support.scheduler import SchedulerProcess
from support.wait import wait_for

pytest.importorskip("kopf")

OPERATOR = textwrap.dedent('''
    import kopf
    import kubernetes

    GROUP = {group!r}


    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_):
        settings.watching.server_timeout = 30
        settings.watching.client_timeout = 40


    @kopf.on.create(GROUP, "v1", "webapps")
    def create_fn(spec, name, namespace, **_):
        labels = {{"app": name}}
        deployment = {{
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {{"name": f"{{name}}-web"}},
            "spec": {{"replicas": spec.get("replicas", 1), "selector": {{"matchLabels": labels}},
                     "template": {{"metadata": {{"labels": labels}}, "spec": {{
                         "nodeSelector": spec["nodeSelector"], "terminationGracePeriodSeconds": 1,
                         "containers": [{{"name": "main", "image": "busybox",
                                         "command": ["sleep", "3600"]}}]}}}}}}}}
        kopf.adopt(deployment)
        created = kubernetes.client.AppsV1Api().create_namespaced_deployment(namespace, deployment)
        return {{"deployment": created.metadata.name}}


    @kopf.on.delete(GROUP, "v1", "webapps")
    def delete_fn(name, namespace, **_):
        kubernetes.client.CoreV1Api().create_namespaced_config_map(
            namespace, {{"metadata": {{"name": f"{{name}}-farewell"}}}})
''')


def webapp_crd(group: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 0, "default": 1},
            "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"webapps.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "webapps", "singular": "webapp", "kind": "WebApp"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}}]}}


@pytest.fixture(scope="module")
def cluster(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """The operator's CRD applied with kubectl, then a controller-manager (Deployments, ReplicaSets, the garbage
    collector), a scheduler and a kubelet whose node carries a label of this module's own."""
    root = tmp_path_factory.mktemp("kopf")
    label = root.name.replace("_", "-").lower()
    group = new_group()
    crd_file = root / "crd.yaml"
    crd_file.write_text(yaml.safe_dump(webapp_crd(group)))
    kubectl = Kubectl(os.environ.get("KUBELAB_KUBECTL", "/usr/lib/google-cloud-sdk/bin/kubectl.1.32"), api_url,
                      root)
    kubectl("apply", "-f", str(crd_file))
    kubectl("wait", "--for=condition=Established", f"crd/webapps.{group}", "--timeout=20s")
    cm = ControllerManager(api_url, root / "controller-manager.log", "--leader-elect=false",
                           "--controllers=deployment,replicaset,garbagecollector")
    scheduler = SchedulerProcess(api_url, root / "scheduler.log", "--leader-elect=false")
    kubelet = ComponentProcess("kubelet", api_url, root / "kubelet.log", "--node-name", f"{label}-node",
                               "--port", str(free_port()), "--root-dir", str(root / "kubelet"),
                               "--node-labels", f"kopftest={label}", "--runtime", "process")
    try:
        yield group, label, root
    finally:
        kubelet.stop()
        kill_containers(root / "kubelet")
        scheduler.stop()
        cm.stop()
        httpx.delete(f"{api_url}{CRDS}/webapps.{group}")


@pytest.fixture()
def operator(api_url: str, cluster: tuple[str, str, Path], ns: str) -> Iterator[subprocess.Popen[bytes]]:
    """``kopf run --standalone --namespace ns`` on the operator, with a kubeconfig for the test apiserver."""
    group, _, root = cluster
    (root / "operator.py").write_text(OPERATOR.format(group=group))
    kubeconfig = root / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": api_url}}],
        "users": [{"name": "test", "user": {}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}))
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    with open(root / "kopf.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", ns,
                                 str(root / "operator.py")], stdout=log, stderr=subprocess.STDOUT, env=env,
                                cwd=root)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def running_pods(client: httpx.Client, ns: str, app: str) -> list[dict[str, Any]]:
    items = client.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": f"app={app}"}).json()["items"]
    return [p for p in items if (p.get("status") or {}).get("phase") == "Running"]


def test_a_kopf_operator_runs_its_handlers_and_its_children_are_collected(
        client: httpx.Client, ns: str, cluster: tuple[str, str, Path], operator: subprocess.Popen[bytes]) -> None:
    group, label, root = cluster
    base = f"/apis/{group}/v1/namespaces/{ns}/webapps"
    body = {"apiVersion": f"{group}/v1", "kind": "WebApp", "metadata": {"name": "shop"},
            "spec": {"nodeSelector": {"kopftest": label}}}
    created = client.post(base, json=body)
    assert created.status_code == 201, created.text
    uid = created.json()["metadata"]["uid"]

    deployment = wait_for(lambda: (r := client.get(f"/apis/apps/v1/namespaces/{ns}/deployments/shop-web"))
                          .status_code == 200 and r.json(), 60, "the operator's Deployment")
    assert [(o["kind"], o["name"], o["uid"]) for o in deployment["metadata"]["ownerReferences"]] == \
        [("WebApp", "shop", uid)]
    wait_for(lambda: running_pods(client, ns, "shop"), 60, "the Deployment's pod Running")
    status = wait_for(lambda: (client.get(f"{base}/shop").json().get("status") or {}).get("create_fn"), 30,
                      "the handler's result in the status")
    assert status == {"deployment": "shop-web"}
    shop = client.get(f"{base}/shop").json()
    assert any(f.startswith("kopf.zalando.org/") for f in shop["metadata"].get("finalizers") or [])

    assert client.delete(f"{base}/shop").status_code == 200
    wait_for(lambda: client.get(f"{base}/shop").status_code == 404, 60, "the resource gone after kopf's finalizer")
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/shop-farewell").status_code == 200
    wait_for(lambda: client.get(f"/apis/apps/v1/namespaces/{ns}/deployments/shop-web").status_code == 404, 60,
             "the Deployment collected")
    wait_for(lambda: not client.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": "app=shop"})
             .json()["items"], 60, "the pods collected")
    assert operator.poll() is None, (root / "kopf.log").read_text()[-3000:]
