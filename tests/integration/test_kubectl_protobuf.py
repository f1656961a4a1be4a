"""The real kubectl's typed-client commands, which send their bodies as Kubernetes protobuf: the objects they create
must come out as if they had been sent as JSON, and drain's DeleteOptions must keep their zero grace period.

kubectl 1.32 sends protobuf for ``create namespace|deployment|configmap|service`` and for the DELETE of
``drain --disable-eviction``; ``run`` and the Eviction of a default drain go out as JSON (checked with ``-v=8``)."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import httpx
import pytest

from conftest import Kubectl
from support.builders import make_node, make_pod

pytestmark = pytest.mark.kubectl

PROTOBUF = "application/vnd.kubernetes.protobuf"


def test_create_namespace_is_sent_as_protobuf(kubectl: Kubectl, api_url: str, client: httpx.Client) -> None:
    name = f"pb-{uuid.uuid4().hex[:8]}"
    result = kubectl("create", "namespace", name, "-v=8")
    assert result.stdout.strip() == f"namespace/{name} created"
    assert request_content_type(result.stderr, "POST", f"{api_url}/api/v1/namespaces") == PROTOBUF
    got = client.get(f"/api/v1/namespaces/{name}").json()
    assert got["metadata"]["name"] == name
    assert got["status"]["phase"] == "Active"
    assert got["metadata"]["creationTimestamp"]  # set by the server; the body carried an empty Time (null)


def test_create_deployment(kubectl: Kubectl, api_url: str, client: httpx.Client, ns: str) -> None:
    result = kubectl("-n", ns, "create", "deployment", "web", "--image=nginx:1.25", "--replicas=2", "-v=8")
    assert result.stdout.strip() == "deployment.apps/web created"
    url = f"{api_url}/apis/apps/v1/namespaces/{ns}/deployments"
    assert request_content_type(result.stderr, "POST", url) == PROTOBUF
    dep = client.get(f"/apis/apps/v1/namespaces/{ns}/deployments/web").json()
    assert dep["spec"]["replicas"] == 2
    assert dep["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    template = dep["spec"]["template"]
    assert template["metadata"]["labels"] == {"app": "web"}
    [container] = template["spec"]["containers"]
    assert container["name"] == "nginx"
    assert container["image"] == "nginx:1.25"
    # Defaults applied by the server, not empty strings from the wire: zero value fields were dropped.
    assert template["spec"]["restartPolicy"] == "Always"
    assert template["spec"]["dnsPolicy"] == "ClusterFirst"
    assert dep["spec"]["strategy"]["type"] == "RollingUpdate"
    assert dep["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": "25%", "maxSurge": "25%"}
    assert "generateName" not in dep["metadata"]


def test_create_deployment_with_zero_replicas(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    kubectl("-n", ns, "create", "deployment", "idle", "--image=nginx:1.25", "--replicas=0")
    dep = client.get(f"/apis/apps/v1/namespaces/{ns}/deployments/idle").json()
    assert dep["spec"]["replicas"] == 0  # a pointer field set to zero survives; absent would default to 1


def test_create_configmap(kubectl: Kubectl, api_url: str, client: httpx.Client, ns: str) -> None:
    result = kubectl("-n", ns, "create", "configmap", "c", "--from-literal=a=b", "--from-literal=empty=", "-v=8")
    assert result.stdout.strip() == "configmap/c created"
    url = f"{api_url}/api/v1/namespaces/{ns}/configmaps"
    assert request_content_type(result.stderr, "POST", url) == PROTOBUF
    cm = client.get(f"/api/v1/namespaces/{ns}/configmaps/c").json()
    assert cm["data"] == {"a": "b", "empty": ""}  # map values are data: an empty one is kept


def test_create_service_clusterip(kubectl: Kubectl, api_url: str, client: httpx.Client, ns: str) -> None:
    result = kubectl("-n", ns, "create", "service", "clusterip", "s", "--tcp=80:8080", "-v=8")
    assert result.stdout.strip() == "service/s created"
    url = f"{api_url}/api/v1/namespaces/{ns}/services"
    assert request_content_type(result.stderr, "POST", url) == PROTOBUF
    svc = client.get(f"/api/v1/namespaces/{ns}/services/s").json()
    [port] = svc["spec"]["ports"]
    assert port["port"] == 80
    assert port["targetPort"] == 8080  # IntOrString → int
    assert port["protocol"] == "TCP"
    assert port["name"] == "80-8080"
    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["selector"] == {"app": "s"}
    assert svc["spec"]["clusterIP"]


def test_run_pod(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    out = kubectl("-n", ns, "run", "p", "--image=busybox", "--labels=tier=debug", "--", "sleep", "3600").stdout
    assert out.strip() == "pod/p created"
    pod = client.get(f"/api/v1/namespaces/{ns}/pods/p").json()
    assert pod["metadata"]["labels"] == {"tier": "debug"}
    [container] = pod["spec"]["containers"]
    assert container["name"] == "p"
    assert container["image"] == "busybox"
    assert container["args"] == ["sleep", "3600"]
    assert pod["spec"]["restartPolicy"] == "Always"


def test_drain(kubectl: Kubectl, api_url: str, client: httpx.Client, ns: str) -> None:
    """Default drain evicts (kubectl 1.32 sends its policy/v1 Eviction as JSON); ``--disable-eviction`` deletes
    with a protobuf DeleteOptions body. Both carry ``gracePeriodSeconds: 0``, which must survive decoding: without it
    a bound pod would only get a deletionTimestamp (no kubelet here) and drain would wait for its timeout."""
    for mode in ("evict", "delete"):
        node = f"{ns}-{mode}"
        assert client.post("/api/v1/nodes", json=make_node(node)).status_code == 201
        pod_name = f"bound-{mode}"
        pod = make_pod(pod_name).namespace(ns).node(node).build()
        assert client.post(f"/api/v1/namespaces/{ns}/pods", json=pod).status_code == 201
        try:
            extra = ["--disable-eviction"] if mode == "delete" else []
            result = kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force",
                             "--grace-period=0", "--timeout=20s", "-v=8", *extra, check=False)
            assert result.returncode == 0, result.stderr[-3000:]
            lines = result.stdout.splitlines()
            assert f"node/{node} cordoned" in lines
            if mode == "evict":
                assert f"evicting pod {ns}/{pod_name}" in lines
                assert f"pod/{pod_name} evicted" in lines
            else:
                assert f"pod/{pod_name} deleted" in lines
                url = f"{api_url}/api/v1/namespaces/{ns}/pods/{pod_name}"
                assert request_content_type(result.stderr, "DELETE", url) == PROTOBUF
            assert f"node/{node} drained" in lines
            assert client.get(f"/api/v1/namespaces/{ns}/pods/{pod_name}").status_code == 404
            assert client.get(f"/api/v1/nodes/{node}").json()["spec"]["unschedulable"] is True
        finally:
            client.delete(f"/api/v1/namespaces/{ns}/pods/{pod_name}", params={"gracePeriodSeconds": "0"})
            client.delete(f"/api/v1/nodes/{node}")


@pytest.mark.parametrize("command", [
    ["create", "deployment", "web", "--image=nginx:1.25", "--replicas=3", "--port=80"],
    ["create", "configmap", "web", "--from-literal=a=b", "--from-literal=c="],
    ["create", "service", "nodeport", "web", "--tcp=80:http"],
], ids=["deployment", "configmap", "service"])
def test_protobuf_and_json_bodies_store_the_same_object(kubectl: Kubectl, client: httpx.Client, ns: str,
                                                        command: list[str]) -> None:
    """The same command once as protobuf (kubectl's typed client) and once as JSON (its own ``-o json`` piped into
    ``create -f -``, which goes through the unstructured client) must leave the same object in storage."""
    other = f"{ns}-json"
    assert client.post("/api/v1/namespaces", json={"metadata": {"name": other}}).status_code == 201
    kubectl("-n", ns, *command)
    manifest = kubectl("-n", other, *command, "--dry-run=client", "-o", "json").stdout
    kubectl("-n", other, "create", "-f", "-", input=manifest)
    kind = {"deployment": "apps/v1/namespaces/{}/deployments", "configmap": "v1/namespaces/{}/configmaps",
            "service": "v1/namespaces/{}/services"}[command[1]]
    prefix = "/apis/" if kind.startswith("apps") else "/api/"
    from_protobuf = client.get(prefix + kind.format(ns) + "/web").json()
    from_json = client.get(prefix + kind.format(other) + "/web").json()
    assert comparable(from_protobuf) == comparable(from_json)


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop what differs between two creations of the same object: identity, times, allocations."""
    obj = copy.deepcopy(obj)
    for field in ("uid", "resourceVersion", "creationTimestamp", "namespace", "managedFields"):
        obj["metadata"].pop(field, None)
    spec = obj.get("spec", {})
    for field in ("clusterIP", "clusterIPs"):
        spec.pop(field, None)
    for port in spec.get("ports", []) if obj["kind"] == "Service" else []:
        port.pop("nodePort", None)
    return obj


def request_content_type(log: str, method: str, url: str) -> str | None:
    """The Content-Type kubectl -v=8 logged for the request ``method url`` (query string ignored)."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        _, sep, target = line.partition(f"] {method} ")
        if sep and target.split("?")[0] == url:
            for header in lines[i + 1:]:
                if "Response Status" in header:
                    break
                if "Content-Type:" in header:
                    return header.split("Content-Type:", 1)[1].strip()
    return None
