"""``kubectl top`` and the metrics.k8s.io API against a real kubelet whose containers are real processes: a pod
spinning a core shows clearly more CPU than an idle one, for kubectl 1.32 (and 1.27, 1.33) and the official Python
client; selectors, sorting, ``--containers``, ``kubectl get``/``explain``, discovery, and the API being read-only."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from apimachinery.quantity import parse_quantity
from conftest import Kubectl
from kubelab.etcd import free_port
from support.process import ComponentProcess
from support.wait import wait_for

SPIN = ["python3", "-c", "while True: pass"]
IDLE = ["python3", "-c", "import time; time.sleep(100000)"]


def pod(name: str, node: str, labels: dict[str, str], *containers: tuple[str, list[str]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": c, "image": "python", "command": cmd} for c, cmd in containers]}}


@pytest.fixture(scope="module")
def cluster(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A namespace and a kubelet running a busy pod (``web``: a spinning and an idle container) and an idle pod
    (``db``), both Running."""
    ns = f"t-{uuid.uuid4().hex[:10]}"
    node = f"{ns}-node"
    tmp: Path = tmp_path_factory.mktemp("metrics")
    with httpx.Client(base_url=api_url, timeout=30) as client:
        assert client.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
        kubelet = ComponentProcess("kubelet", api_url, tmp / "kubelet.log", "--node-name", node,
                                   "--port", str(free_port()), "--root-dir", str(tmp / "root"), "--runtime", "process")
        try:
            for obj in (pod("busy", node, {"app": "web"}, ("spin", SPIN), ("idle", IDLE)),
                        pod("quiet", node, {"app": "db"}, ("main", IDLE))):
                assert client.post(f"/api/v1/namespaces/{ns}/pods", json=obj).status_code == 201
            for name in ("busy", "quiet"):
                wait_for(lambda name=name: client.get(f"/api/v1/namespaces/{ns}/pods/{name}").json()
                         .get("status", {}).get("phase") == "Running", what=f"{name} Running")
            yield ns, node
        finally:
            client.delete(f"/api/v1/namespaces/{ns}/pods", params={"gracePeriodSeconds": "0"})
            kubelet.stop()


def table(out: str) -> list[list[str]]:
    lines = out.splitlines()
    return [line.split() for line in lines[1:] if line.strip()]


def millicores(cell: str) -> int:
    return parse_quantity(cell).milli_value()


def test_top_pods_busy_uses_more_cpu_than_idle(kubectl: Kubectl, cluster: tuple[str, str]) -> None:
    ns, _ = cluster
    out = kubectl("top", "pods", "-n", ns)
    assert out.stdout.splitlines()[0].split() == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    rows = {r[0]: r for r in table(out.stdout)}
    assert set(rows) == {"busy", "quiet"}
    assert millicores(rows["busy"][1]) > millicores(rows["quiet"][1])
    assert all(r[2].endswith("Mi") and parse_quantity(r[2]).value() > 0 for r in rows.values())


def test_top_pod_containers_labels_sort_and_all_namespaces(kubectl: Kubectl, cluster: tuple[str, str]) -> None:
    ns, _ = cluster
    containers = {r[1]: r for r in table(kubectl("top", "pod", "busy", "-n", ns, "--containers").stdout)}
    assert set(containers) == {"spin", "idle"} and all(r[0] == "busy" for r in containers.values())
    assert millicores(containers["spin"][2]) > millicores(containers["idle"][2])
    assert [r[0] for r in table(kubectl("top", "pods", "-n", ns, "-l", "app=web").stdout)] == ["busy"]
    assert [r[0] for r in table(kubectl("top", "pods", "-n", ns, "--sort-by=cpu").stdout)] == ["busy", "quiet"]
    everywhere = [r[:2] for r in table(kubectl("top", "pods", "-A").stdout)]
    assert [ns, "busy"] in everywhere and [ns, "quiet"] in everywhere
    missing = kubectl("top", "pod", "nope", "-n", ns, check=False)
    assert missing.returncode != 0
    assert f'podmetrics.metrics.k8s.io "{ns}/nope" not found' in missing.stderr


def test_top_node(kubectl: Kubectl, cluster: tuple[str, str]) -> None:
    _, node = cluster
    out = kubectl("top", "node", node).stdout
    assert out.splitlines()[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    [row] = table(out)
    assert row[0] == node and millicores(row[1]) > 0 and row[2].endswith("%") and row[3].endswith("Mi")
    assert node in [r[0] for r in table(kubectl("top", "nodes").stdout)]


def test_kubectl_get_and_explain(kubectl: Kubectl, cluster: tuple[str, str]) -> None:
    ns, node = cluster
    out = kubectl("get", "podmetrics", "-n", ns).stdout
    assert out.splitlines()[0].split() == ["NAME", "CPU", "MEMORY", "WINDOW"]
    rows = {r[0]: r for r in table(out)}
    assert set(rows) == {"busy", "quiet"} and parse_quantity(rows["busy"][1]) > parse_quantity(rows["quiet"][1])
    assert [r[0] for r in table(kubectl("get", "nodemetrics", node).stdout)] == [node]
    assert "NodeMetrics sets resource usage metrics of a node." in kubectl("explain", "nodemetrics").stdout
    containers = kubectl("explain", "podmetrics.containers.usage").stdout
    assert "The memory usage is the memory working set." in containers


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_other_kubectl_versions(api_url: str, tmp_path: Path, cluster: tuple[str, str], version: str) -> None:
    binary = Path(f"/usr/lib/google-cloud-sdk/bin/kubectl.{version}")
    if not binary.exists():
        pytest.skip(f"no kubectl {version}")
    ns, node = cluster
    kubectl = Kubectl(str(binary), api_url, tmp_path)
    rows = {r[0]: r for r in table(kubectl("top", "pods", "-n", ns).stdout)}
    assert millicores(rows["busy"][1]) > millicores(rows["quiet"][1])
    assert table(kubectl("top", "node", node).stdout)[0][0] == node


@pytest.fixture()
def custom(api_url: str) -> Iterator[k8s.CustomObjectsApi]:
    cfg = k8s.Configuration()
    cfg.host = api_url
    with k8s.ApiClient(cfg) as api:
        yield k8s.CustomObjectsApi(api)


def test_python_client(custom: k8s.CustomObjectsApi, cluster: tuple[str, str]) -> None:
    ns, node = cluster
    nodes = custom.list_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes")
    assert nodes["kind"] == "NodeMetricsList"
    [mine] = [n for n in nodes["items"] if n["metadata"]["name"] == node]
    assert mine["kind"] == "NodeMetrics" and mine["window"].endswith("s") and mine["timestamp"].endswith("Z")
    assert parse_quantity(mine["usage"]["cpu"]).nanos > 0 and parse_quantity(mine["usage"]["memory"]).value() > 0
    pods = custom.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", ns, "pods")["items"]
    cpu = {p["metadata"]["name"]: sum(parse_quantity(c["usage"]["cpu"]).nanos for c in p["containers"])
           for p in pods}
    assert cpu["busy"] > cpu["quiet"]
    busy = custom.get_namespaced_custom_object("metrics.k8s.io", "v1beta1", ns, "pods", "busy")
    assert busy["metadata"]["labels"] == {"app": "web"} and [c["name"] for c in busy["containers"]] == ["spin", "idle"]
    db = custom.list_cluster_custom_object("metrics.k8s.io", "v1beta1", "pods", label_selector="app=db")["items"]
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in db if p["metadata"]["namespace"] == ns] \
        == [(ns, "quiet")]
    named = custom.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", ns, "pods",
                                                 field_selector="metadata.name=quiet")["items"]
    assert [p["metadata"]["name"] for p in named] == ["quiet"]


def test_discovery_and_read_only(client: httpx.Client, custom: k8s.CustomObjectsApi,
                                 cluster: tuple[str, str]) -> None:
    groups = {g["name"]: g for g in client.get("/apis").json()["groups"]}
    assert groups["metrics.k8s.io"]["preferredVersion"]["groupVersion"] == "metrics.k8s.io/v1beta1"
    resources = {r["name"]: r for r in client.get("/apis/metrics.k8s.io/v1beta1").json()["resources"]}
    assert resources["nodes"]["kind"] == "NodeMetrics" and not resources["nodes"]["namespaced"]
    assert resources["pods"]["kind"] == "PodMetrics" and resources["pods"]["verbs"] == ["get", "list"]
    with pytest.raises(ApiException) as err:
        custom.create_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes",
                                            {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetrics",
                                             "metadata": {"name": "x"}})
    assert err.value.status == 405
    ns, node = cluster
    put = client.put(f"/apis/metrics.k8s.io/v1beta1/nodes/{node}", json={})
    assert put.status_code == 405 and put.json()["reason"] == "MethodNotAllowed"
    assert client.get("/apis/metrics.k8s.io/v1beta1/nodes", params={"watch": "true"}).status_code == 405
    gone = client.get("/apis/metrics.k8s.io/v1beta1/nodes/no-such-node")
    assert gone.status_code == 404 and gone.json()["message"] == 'nodemetrics.metrics.k8s.io "no-such-node" not found'
    assert client.get(f"/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/nodes").status_code == 404
