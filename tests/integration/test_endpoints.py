"""Endpoints and EndpointSlices with the real apiserver, etcd and a real controller-manager running the endpoint,
endpointslice, endpointslice mirroring and garbage collector controllers: ``default/kubernetes`` points at the
apiserver from start-up; a Service's Endpoints and slices follow its pods (ready, not ready) as kubectl 1.32 shows
them (``get ep``, ``get endpointslices``, ``describe svc``); a Service without selector keeps the Endpoints a user
wrote, mirrored as a slice; a deleted Service's objects go; validation errors are kube-apiserver's; the official
Python client reads both kinds."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import yaml
from kubernetes import client as k8s

from conftest import Kubectl, second_apiserver
from kubelab.api import Cluster
from support.builders import make_pod
from support.controllers import controller_manager_fixture
from support.wait import wait_for

SLICES = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"


manager = controller_manager_fixture("endpoint,endpointslice,endpointslicemirroring,garbagecollector")


def rows(out: str) -> list[list[str]]:
    """kubectl's table; columns are at least three spaces apart, a cell like ``a + 1 more...`` has single spaces."""
    return [re.split(r"\s{2,}", line.strip()) for line in out.splitlines() if line.strip()]


def running_pod(client: httpx.Client, ns: str, name: str, ip: str, ready: bool = True) -> None:
    """A pod as a kubelet would report it: bound, Running, with an IP and its Ready condition."""
    pod = make_pod(name).label(app="web").node("node01").build()
    pod["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": 8080}]
    created = client.post(f"/api/v1/namespaces/{ns}/pods", json=pod).json()
    created["status"] = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                         "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    resp = client.put(f"/api/v1/namespaces/{ns}/pods/{name}/status", json=created)
    assert resp.status_code == 200, resp.text


def endpoints(client: httpx.Client, ns: str, name: str) -> dict[str, Any] | None:
    resp = client.get(f"/api/v1/namespaces/{ns}/endpoints/{name}")
    return resp.json() if resp.status_code == 200 else None


def slices(client: httpx.Client, ns: str, service: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = client.get(SLICES.format(ns=ns), params={
        "labelSelector": f"kubernetes.io/service-name={service}"}).json()["items"]
    return items


def ready_ips(client: httpx.Client, ns: str, name: str) -> list[str]:
    ep = endpoints(client, ns, name) or {}
    return sorted(a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or [])


def test_kubernetes_service_points_at_the_apiserver(kubectl: Kubectl, apiserver: Cluster, tmp_path: Path) -> None:
    """An apiserver puts ``default/kubernetes`` on its own address as it starts; the others leave it there while
    its master lease lives, and take it back once it has stopped (kube-apiserver's lease reconciler lists every
    live one; kubelab's share a host at different ports, see apiserver/registry/masterleases.py). The second
    apiserver is one more on the session's etcd (``second_apiserver``: ``Cluster.run_component``) with a plain
    port only, which it advertises: a ``kubelab.Cluster``'s own apiservers share one secure port, so they advertise
    one address and cannot show the hand-over."""

    def endpoints() -> tuple[list[str], list[str]]:
        ep = rows(kubectl("get", "ep", "kubernetes", "-n", "default").stdout)
        slices = rows(kubectl("get", "endpointslices", "kubernetes", "-n", "default").stdout)
        assert ep[0] == ["NAME", "ENDPOINTS", "AGE"]
        assert slices[0] == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
        return ep[1][:2], slices[1][:4]

    server, url = second_apiserver(apiserver, log=tmp_path / "apiserver.log")
    try:
        port = str(urlsplit(url).port)
        assert endpoints() == (["kubernetes", f"127.0.0.1:{port}"], ["kubernetes", "IPv4", port, "127.0.0.1"])
    finally:
        server.stop()
    back = str(urlsplit(apiserver.secure_url).port)  # the port it advertises: its secure one
    wait_for(lambda: endpoints() == (["kubernetes", f"127.0.0.1:{back}"], ["kubernetes", "IPv4", back, "127.0.0.1"]),
             timeout=30, what="the session's apiserver back in default/kubernetes")


def test_endpoints_and_slices_follow_the_pods(kubectl: Kubectl, client: httpx.Client, ns: str,
                                              manager: None) -> None:
    kubectl("-n", ns, "create", "service", "clusterip", "web", "--tcp=80:http")
    for i in range(1, 5):
        running_pod(client, ns, f"web-{i}", f"10.244.0.{i}")
    running_pod(client, ns, "web-slow", "10.244.0.9", ready=False)
    wait_for(lambda: ready_ips(client, ns, "web") == [f"10.244.0.{i}" for i in range(1, 5)], what="4 endpoints")
    table = rows(kubectl("get", "ep", "-n", ns).stdout)
    assert table[1][:2] == ["web", "10.244.0.1:8080,10.244.0.2:8080,10.244.0.3:8080 + 1 more..."]
    ep = yaml.safe_load(kubectl("-n", ns, "get", "endpoints", "web", "-o", "yaml").stdout)
    [subset] = ep["subsets"]
    assert subset["ports"] == [{"name": "80-http", "port": 8080, "protocol": "TCP"}]
    assert subset["notReadyAddresses"] == [{"ip": "10.244.0.9", "nodeName": "node01", "targetRef": {
        "kind": "Pod", "name": "web-slow", "namespace": ns, "uid": subset["notReadyAddresses"][0]["targetRef"]["uid"]}}]
    wait_for(lambda: sum(len(s["endpoints"]) for s in slices(client, ns, "web")) == 5, what="5 slice endpoints")
    [eps] = slices(client, ns, "web")
    assert eps["metadata"]["name"].startswith("web-") and eps["addressType"] == "IPv4"
    assert eps["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io"
    assert eps["metadata"]["ownerReferences"][0]["kind"] == "Service"
    slow = next(e for e in eps["endpoints"] if e["targetRef"]["name"] == "web-slow")
    assert slow["conditions"] == {"ready": False, "serving": False, "terminating": False}
    table = rows(kubectl("get", "endpointslices", "-n", ns).stdout)
    assert table[1][1:3] == ["IPv4", "8080"] and table[1][3].endswith("+ 2 more...")
    describe = kubectl("-n", ns, "describe", "svc", "web").stdout
    assert "10.244.0.1:8080,10.244.0.2:8080,10.244.0.3:8080 + 1 more..." in describe

    assert client.delete(f"/api/v1/namespaces/{ns}/pods/web-4", params={"gracePeriodSeconds": "0"}).is_success
    wait_for(lambda: ready_ips(client, ns, "web") == [f"10.244.0.{i}" for i in range(1, 4)], what="3 endpoints")
    wait_for(lambda: sum(len(s["endpoints"]) for s in slices(client, ns, "web")) == 4, what="4 slice endpoints")

    kubectl("-n", ns, "delete", "svc", "web")
    wait_for(lambda: endpoints(client, ns, "web") is None and not slices(client, ns, "web"),
             what="the Endpoints and slices of the deleted Service gone")


def test_selectorless_service_keeps_user_endpoints(kubectl: Kubectl, client: httpx.Client, ns: str,
                                                   manager: None) -> None:
    manifest = """
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {ports: [{port: 5432}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: db}
subsets:
- addresses: [{ip: 192.168.1.10}]
  ports: [{port: 5432}]
"""
    kubectl("-n", ns, "apply", "-f", "-", input=manifest)
    running_pod(client, ns, "web-1", "10.244.0.1")
    assert rows(kubectl("-n", ns, "get", "ep", "db").stdout)[1][:2] == ["db", "192.168.1.10:5432"]
    assert endpoints(client, ns, "db")["subsets"][0]["ports"] == [{"port": 5432, "protocol": "TCP"}]
    [mirrored] = wait_for(lambda: slices(client, ns, "db"), what="the mirrored slice")
    assert mirrored["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == \
        "endpointslicemirroring-controller.k8s.io"
    assert mirrored["endpoints"] == [{"addresses": ["192.168.1.10"], "conditions": {"ready": True}}]
    assert "Endpoints:                192.168.1.10:5432" in kubectl("-n", ns, "describe", "svc", "db").stdout
    kubectl("-n", ns, "delete", "endpoints", "db")
    wait_for(lambda: not slices(client, ns, "db"), what="the mirrored slice gone with its Endpoints")


def test_validation_errors(kubectl: Kubectl, ns: str) -> None:
    bad = """
apiVersion: v1
kind: Endpoints
metadata: {name: bad}
subsets:
- addresses: [{ip: 10.0.0.300}]
  ports: [{port: 70000, protocol: HTTP}, {name: b, port: 80}]
- ports: [{port: 80}]
"""
    out = kubectl("-n", ns, "apply", "-f", "-", input=bad, check=False)
    assert out.returncode != 0
    assert 'The Endpoints "bad" is invalid' in out.stderr
    for message in ('subsets[0].addresses[0].ip: Invalid value: "10.0.0.300": must be a valid IP address',
                    "subsets[0].ports[0].name: Required value",
                    "subsets[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
                    'subsets[0].ports[0].protocol: Unsupported value: "HTTP"',
                    "subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`"):
        assert message in out.stderr
    bad_slice = """
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: bad}
addressType: IPv4
endpoints: [{addresses: ["fd00::1"]}, {addresses: []}]
ports: [{name: a, port: 80}, {name: a, port: 81}]
"""
    out = kubectl("-n", ns, "apply", "-f", "-", input=bad_slice, check=False)
    assert 'The EndpointSlice "bad" is invalid' in out.stderr
    for message in ('endpoints[0].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address',
                    "endpoints[1].addresses: Required value: must contain at least 1 address",
                    'ports[1].name: Duplicate value: "a"'):
        assert message in out.stderr


def test_python_client_reads_endpoints_and_slices(api_url: str, client: httpx.Client, ns: str,
                                                  manager: None) -> None:
    client.post(f"/api/v1/namespaces/{ns}/services", json={
        "metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "name": "http"}]}})
    running_pod(client, ns, "web-1", "10.244.0.1")
    wait_for(lambda: ready_ips(client, ns, "web") == ["10.244.0.1"], what="the endpoint")
    wait_for(lambda: any(s["endpoints"] for s in slices(client, ns, "web")), what="the slice endpoint")
    cfg = k8s.Configuration()
    cfg.host = api_url
    with k8s.ApiClient(cfg) as api:
        ep = k8s.CoreV1Api(api).read_namespaced_endpoints("web", ns)
        assert isinstance(ep, k8s.V1Endpoints) and ep.subsets[0].addresses[0].target_ref.name == "web-1"
        assert ep.subsets[0].ports[0].port == 80 and ep.subsets[0].ports[0].name == "http"
        listed = k8s.DiscoveryV1Api(api).list_namespaced_endpoint_slice(ns)
        [eps] = listed.items
        assert eps.address_type == "IPv4" and eps.endpoints[0].conditions.ready is True
        assert eps.endpoints[0].node_name == "node01" and eps.ports[0].name == "http"
        created = k8s.DiscoveryV1Api(api).create_namespaced_endpoint_slice(ns, k8s.V1EndpointSlice(
            metadata=k8s.V1ObjectMeta(name="manual"), address_type="IPv4",
            endpoints=[k8s.V1Endpoint(addresses=["192.168.1.10"], conditions=k8s.V1EndpointConditions(ready=False))],
            ports=[k8s.DiscoveryV1EndpointPort(port=5432)]))
        assert created.ports[0].protocol == "TCP" and created.ports[0].name == ""
        assert created.endpoints[0].conditions.ready is False and created.metadata.generation == 1
