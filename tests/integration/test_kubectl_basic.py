"""The real kubectl (1.32) against the apiserver: the foundation's acceptance commands."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import yaml

from conftest import Kubectl

POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: nginx
  labels:
    app: nginx
spec:
  containers:
  - name: nginx
    image: nginx:1.25
    ports:
    - containerPort: 80
"""


def test_create_get_yaml_delete(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD_YAML)
    out = kubectl("create", "-f", str(manifest), "-n", ns)
    assert out.stdout.strip() == "pod/nginx created"

    table = kubectl("get", "pods", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert table[1].split()[:4] == ["nginx", "0/1", "Pending", "0"]

    pod = yaml.safe_load(kubectl("get", "pod", "nginx", "-n", ns, "-o", "yaml").stdout)
    assert pod["kind"] == "Pod"
    assert pod["metadata"]["labels"] == {"app": "nginx"}
    assert pod["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert pod["spec"]["restartPolicy"] == "Always"  # defaulted by the server

    out = kubectl("delete", "pod", "nginx", "-n", ns)
    assert out.stdout.strip() == 'pod "nginx" deleted'
    missing = kubectl("get", "pod", "nginx", "-n", ns, check=False)
    assert missing.returncode == 1
    assert 'Error from server (NotFound): pods "nginx" not found' in missing.stderr


def test_create_twice_reports_already_exists(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD_YAML)
    kubectl("create", "-f", str(manifest), "-n", ns)
    again = kubectl("create", "-f", str(manifest), "-n", ns, check=False)
    assert again.returncode == 1
    assert 'Error from server (AlreadyExists): error when creating' in again.stderr
    assert 'pods "nginx" already exists' in again.stderr


def test_get_pods_watch(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD_YAML)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none")}
    watcher = subprocess.Popen([kubectl.binary, "-s", kubectl.server, "get", "pods", "-n", ns, "-w"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        time.sleep(1.0)
        kubectl("create", "-f", str(manifest), "-n", ns)
        kubectl("label", "pod", "nginx", "tier=web", "-n", ns)
        time.sleep(1.5)
    finally:
        watcher.terminate()
        out, err = watcher.communicate(timeout=10)
    lines = [line.split() for line in out.splitlines() if line.strip()]
    assert lines[0][:3] == ["NAME", "READY", "STATUS"]
    assert [line[0] for line in lines[1:]] == ["nginx", "nginx"], (out, err)


def test_get_all_namespaces_and_labels(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD_YAML)
    kubectl("create", "-f", str(manifest), "-n", ns)
    out = kubectl("get", "pods", "-A", "-l", "app=nginx", "--show-labels").stdout.splitlines()
    assert out[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert out[0].split()[-1] == "LABELS"
    row = next(line.split() for line in out[1:] if line.split()[0] == ns)
    assert row[1] == "nginx" and row[-1] == "app=nginx"


def test_get_namespaces_and_api_resources(kubectl: Kubectl) -> None:
    out = kubectl("get", "namespaces").stdout
    for name in ("default", "kube-system", "kube-node-lease"):
        assert name in out
    resources = kubectl("api-resources").stdout
    for line in ("pods", "po", "replicationcontrollers", "rc", "deployments", "deploy", "leases"):
        assert line in resources
    version = kubectl("version", "-o", "yaml").stdout
    assert "gitVersion: v1.32" in version


def test_the_kubernetes_service_is_there_as_in_every_cluster(kubectl: Kubectl) -> None:
    out = kubectl("get", "svc", "kubernetes", "-n", "default").stdout.splitlines()
    assert out[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert out[1].split()[:5] == ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"]
    labels = kubectl("get", "svc", "kubernetes", "-n", "default", "-o", "jsonpath={.metadata.labels}").stdout
    assert '"provider":"kubernetes"' in labels and '"component":"apiserver"' in labels
