"""The real kubectl (1.32, with 1.27 and 1.33 spot checks): tables, describe, apply, edit, label, annotate,
taint, scale, patch, cordon, cluster-info — checking what a user reads, not only exit codes."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import httpx
import pytest
import yaml

from conftest import Kubectl
from support.builders import make_node, make_pod

RC_YAML = """\
apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  replicas: {replicas}
  selector:
    app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports:
        - containerPort: 80
"""


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.strip()]


@pytest.fixture()
def node_name(client: httpx.Client, ns: str) -> str:
    name = f"{ns}-node"
    node = make_node(name, {"disk": "ssd"})
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                     "message": "kubelet is posting ready status",
                                     "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                                     "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    node["status"]["nodeInfo"] = {"kubeletVersion": "v1.32.4", "osImage": "Debian", "kernelVersion": "6.1",
                                  "containerRuntimeVersion": "kubelab://0.1", "operatingSystem": "linux",
                                  "architecture": "amd64", "machineID": "", "systemUUID": "", "bootID": "",
                                  "kubeProxyVersion": ""}
    node["status"]["addresses"] = [{"type": "InternalIP", "address": "127.0.0.1"},
                                   {"type": "Hostname", "address": name}]
    resp = client.post("/api/v1/nodes", json=node)
    assert resp.status_code == 201, resp.text
    return name


def test_apply_creates_then_configures(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "rc.yaml"
    manifest.write_text(RC_YAML.format(replicas=3))
    assert kubectl("apply", "-f", str(manifest), "-n", ns).stdout.strip() == "replicationcontroller/web created"
    manifest.write_text(RC_YAML.format(replicas=4))
    assert kubectl("apply", "-f", str(manifest), "-n", ns).stdout.strip() == "replicationcontroller/web configured"
    assert kubectl("apply", "-f", str(manifest), "-n", ns).stdout.strip() == "replicationcontroller/web unchanged"
    rc = json.loads(kubectl("get", "rc", "web", "-n", ns, "-o", "json").stdout)
    assert rc["spec"]["replicas"] == 4
    assert "kubectl.kubernetes.io/last-applied-configuration" in rc["metadata"]["annotations"]
    table = rows(kubectl("get", "rc", "-n", ns).stdout)
    assert table[0] == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert table[1][:2] == ["web", "4"]
    wide = rows(kubectl("get", "rc", "-n", ns, "-o", "wide").stdout)
    assert wide[0][-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1][-3:] == ["web", "nginx:1.25", "app=web"]
    assert kubectl("delete", "-f", str(manifest), "-n", ns).stdout.strip() == \
        'replicationcontroller "web" deleted'


def test_replace_and_scale(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "rc.yaml"
    manifest.write_text(RC_YAML.format(replicas=1))
    kubectl("create", "-f", str(manifest), "-n", ns)
    manifest.write_text(RC_YAML.format(replicas=2))
    assert kubectl("replace", "-f", str(manifest), "-n", ns).stdout.strip() == "replicationcontroller/web replaced"
    assert kubectl("scale", "rc", "web", "--replicas=5", "-n", ns).stdout.strip() == "replicationcontroller/web scaled"
    assert kubectl("get", "rc", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}").stdout == "5"


def test_label_annotate_and_selectors(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod("p").build())
    assert kubectl("label", "pod", "p", "tier=front", "-n", ns).stdout.strip() == "pod/p labeled"
    overwrite = kubectl("label", "pod", "p", "tier=back", "-n", ns, check=False)
    assert overwrite.returncode == 1 and "already has a value (front)" in overwrite.stderr
    kubectl("label", "pod", "p", "tier=back", "--overwrite", "-n", ns)
    out = rows(kubectl("get", "pods", "-n", ns, "-L", "tier").stdout)
    assert out[0][-1] == "TIER" and out[1][-1] == "back"
    assert rows(kubectl("get", "pods", "-n", ns, "-l", "tier=back", "-o", "name").stdout) == [["pod/p"]]
    assert kubectl("label", "pod", "p", "tier-", "-n", ns).stdout.strip() == "pod/p unlabeled"
    kubectl("annotate", "pod", "p", "note=hello", "-n", ns)
    pod = client.get(f"/api/v1/namespaces/{ns}/pods/p").json()
    assert "tier" not in (pod["metadata"].get("labels") or {})
    assert pod["metadata"]["annotations"]["note"] == "hello"


@pytest.mark.parametrize("patch_type,patch", [
    ("strategic", '{"spec":{"containers":[{"name":"main","image":"busybox:1.36"}]}}'),
    ("merge", '{"metadata":{"labels":{"patched":"yes"}}}'),
    ("json", '[{"op":"add","path":"/metadata/labels","value":{"patched":"yes"}}]'),
])
def test_patch_types(kubectl: Kubectl, client: httpx.Client, ns: str, patch_type: str, patch: str) -> None:
    client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod("p").build())
    out = kubectl("patch", "pod", "p", "-n", ns, "--type", patch_type, "-p", patch)
    assert out.stdout.strip() == "pod/p patched"
    pod = client.get(f"/api/v1/namespaces/{ns}/pods/p").json()
    if patch_type == "strategic":
        assert pod["spec"]["containers"][0]["image"] == "busybox:1.36"
        assert pod["spec"]["containers"][0]["command"] == ["sleep", "3600"]  # merged by name, not replaced
    else:
        assert pod["metadata"]["labels"] == {"patched": "yes"}


def test_edit_with_editor_script(kubectl: Kubectl, client: httpx.Client, ns: str, tmp_path: Path) -> None:
    client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod("p").build())
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/image: busybox$/image: busybox:1.37/' \"$1\"\n")
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    out = kubectl("edit", "pod", "p", "-n", ns, env={"EDITOR": str(editor), "KUBE_EDITOR": str(editor)})
    assert out.stdout.strip() == "pod/p edited"
    assert client.get(f"/api/v1/namespaces/{ns}/pods/p").json()["spec"]["containers"][0]["image"] == "busybox:1.37"


def test_taint_cordon_and_node_table(kubectl: Kubectl, client: httpx.Client, node_name: str) -> None:
    assert kubectl("taint", "nodes", node_name, "check=mycheck:NoExecute").stdout.strip() == \
        f"node/{node_name} tainted"
    kubectl("taint", "nodes", node_name, "foo=bar:NoSchedule")
    taints = client.get(f"/api/v1/nodes/{node_name}").json()["spec"]["taints"]
    assert {(t["key"], t.get("value"), t["effect"]) for t in taints} == {("check", "mycheck", "NoExecute"),
                                                                        ("foo", "bar", "NoSchedule")}
    described = kubectl("describe", "node", node_name).stdout
    assert "Taints:             check=mycheck:NoExecute" in described
    assert "foo=bar:NoSchedule" in described
    kubectl("taint", "nodes", node_name, "check=mycheck:NoExecute-")
    kubectl("taint", "nodes", node_name, "foo:NoSchedule-")
    assert not client.get(f"/api/v1/nodes/{node_name}").json()["spec"].get("taints")

    assert kubectl("cordon", node_name).stdout.strip() == f"node/{node_name} cordoned"
    table = rows(kubectl("get", "node", node_name).stdout)
    assert table[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert table[1][1] == "Ready,SchedulingDisabled" and table[1][-1] == "v1.32.4"
    assert kubectl("uncordon", node_name).stdout.strip() == f"node/{node_name} uncordoned"
    assert rows(kubectl("get", "node", node_name).stdout)[1][1] == "Ready"
    kubectl("label", "nodes", node_name, "node-role.kubernetes.io/worker=")
    assert rows(kubectl("get", "node", node_name).stdout)[1][2] == "worker"
    wide = rows(kubectl("get", "node", node_name, "-o", "wide").stdout)
    assert wide[0][5:7] == ["INTERNAL-IP", "EXTERNAL-IP"] and wide[1][5] == "127.0.0.1"
    assert {"disk=ssd"} <= set(rows(kubectl("get", "nodes", "-l", "disk=ssd", "--show-labels").stdout)[1][-1]
                                .split(","))


def test_describe_pod_shows_events_and_node(kubectl: Kubectl, client: httpx.Client, ns: str,
                                            node_name: str) -> None:
    pod = client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod("p").node(node_name).build()).json()
    event = {"metadata": {"name": "p.1", "namespace": ns},
             "involvedObject": {"kind": "Pod", "namespace": ns, "name": "p", "uid": pod["metadata"]["uid"],
                                "apiVersion": "v1"},
             "reason": "Scheduled", "message": f"Successfully assigned {ns}/p to {node_name}", "type": "Normal",
             "source": {"component": "default-scheduler"}, "count": 1,
             "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"}
    assert client.post(f"/api/v1/namespaces/{ns}/events", json=event).status_code == 201
    out = kubectl("describe", "pod", "p", "-n", ns).stdout
    # (the column width follows the longest label: "Service Account:" only when the pod names one)
    assert re.search(rf"^Node:\s+{node_name}", out, re.M)
    assert "Tolerations:" in out and "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s" in out
    assert "Events:" in out and "Scheduled" in out and f"Successfully assigned {ns}/p to {node_name}" in out
    node_out = kubectl("describe", "node", node_name).stdout
    assert "Non-terminated Pods:" in node_out and f"{ns}" in node_out and " p " in node_out
    events = rows(kubectl("get", "events", "-n", ns).stdout)
    assert events[0][:4] == ["LAST", "SEEN", "TYPE", "REASON"]
    assert events[1][1:3] == ["Normal", "Scheduled"]


def test_pod_status_column(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod("done").node("somewhere").build())
    status = {"status": {"phase": "Succeeded", "containerStatuses": [
        {"name": "main", "ready": False, "restartCount": 0, "image": "busybox", "imageID": "",
         "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}
    resp = client.patch(f"/api/v1/namespaces/{ns}/pods/done/status", json=status,
                        headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 200, resp.text
    table = rows(kubectl("get", "pods", "-n", ns, "-o", "wide").stdout)
    assert table[0][:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert table[0][5:] == ["IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]
    assert table[1][:3] == ["done", "0/1", "Completed"]
    assert "somewhere" in table[1]


def test_output_formats(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    for name in ("b", "a"):
        client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod(name).label(app=name).build())
    assert kubectl("get", "pods", "-n", ns, "-o", "name").stdout.split() == ["pod/a", "pod/b"]
    assert kubectl("get", "pods", "-n", ns, "-o", "jsonpath={.items[*].metadata.name}").stdout == "a b"
    custom = rows(kubectl("get", "pods", "-n", ns, "-o", "custom-columns=N:.metadata.name,APP:.metadata.labels.app")
                  .stdout)
    assert custom == [["N", "APP"], ["a", "a"], ["b", "b"]]
    by_creation = rows(kubectl("get", "pods", "-n", ns, "--sort-by=.metadata.creationTimestamp", "-o", "name")
                       .stdout)
    assert sorted(by_creation) == [["pod/a"], ["pod/b"]]
    doc = yaml.safe_load(kubectl("get", "pods", "-n", ns, "-o", "yaml").stdout)
    assert doc["kind"] == "List" and len(doc["items"]) == 2


def test_errors_read_like_kubernetes(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    missing = kubectl("get", "pod", "ghost", "-n", ns, check=False)
    assert missing.stderr.strip() == 'Error from server (NotFound): pods "ghost" not found'
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: c\n")
    out = kubectl("create", "-f", str(bad), "-n", ns, check=False)
    assert out.returncode == 1
    assert 'The Pod "bad" is invalid: spec.containers[0].image: Required value' in out.stderr
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: u\nspec:\n  bogus: 1\n  containers:\n"
                       "  - name: c\n    image: busybox\n")
    out = kubectl("create", "-f", str(unknown), "-n", ns, check=False)
    assert out.returncode == 1 and 'unknown field "spec.bogus"' in out.stderr


def test_cluster_info_and_api_versions(kubectl: Kubectl, api_url: str) -> None:
    out = kubectl("cluster-info").stdout
    assert f"Kubernetes control plane is running at {api_url}" in out
    versions = kubectl("api-versions").stdout.split()
    assert {"v1", "apps/v1", "coordination.k8s.io/v1"} <= set(versions)


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_other_kubectl_versions(api_url: str, ns: str, tmp_path: Path, version: str) -> None:
    binary = f"/usr/lib/google-cloud-sdk/bin/kubectl.{version}"
    if not os.path.exists(binary):
        pytest.skip(f"{binary} not installed")
    k = Kubectl(binary, api_url, tmp_path)
    manifest = tmp_path / "rc.yaml"
    manifest.write_text(RC_YAML.format(replicas=2))
    assert k("apply", "-f", str(manifest), "-n", ns).stdout.strip() == "replicationcontroller/web created"
    assert rows(k("get", "rc", "-n", ns).stdout)[1][:2] == ["web", "2"]
    assert "web" in k("describe", "rc", "web", "-n", ns).stdout
    k("delete", "rc", "web", "-n", ns)
