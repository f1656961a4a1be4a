"""The linux runtime's pod network and kube-proxy (``--cluster-network``): a node IPAM controller giving podCIDRs of
10.244.0.0/16, two linux kubelets on one cluster network namespace. Each pod has its own ``eth0`` with its pod IP
(status.podIP); pods on the two nodes reach each other by pod IP (busybox ``wget`` through ``kubectl exec``, which
the apiserver proxies to the kubelet at its InternalIP on the cluster network); the host reaches pods too; a deleted
pod's veth goes; a restarted kubelet adopts its pods' network; removing the cluster network leaves no namespace,
link, route or state behind. kube-proxy (``python -m proxy``, nftables in the cluster network): a Service over three
pods answers from all three through its ClusterIP (from a pod) and its NodePort (from the host, at a node's
InternalIP); sessionAffinity ClientIP sticks; a pod reaches itself through its Service (hairpin); a killed proxy
leaves working rules and a restarted one keeps them. Skipped where the host cannot make namespaces or has no nft."""

from __future__ import annotations

import ipaddress
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pyroute2 import IPRoute

from conftest import Kubectl
from kubelet.network import ClusterNetwork, bridge_name, in_netns, name_exists, usable, veth_name
from kubelet.runtime.linux import unavailable
from support.kubelet import Node
from support.podnet import SERVE, answers, bridge_nodes, get, make_service, run_pod
from support.process import ComponentProcess
from support.proxy import start_proxy
from support.wait import wait_for


@pytest.fixture(scope="module")
def nodes(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ClusterNetwork, list[Node]]]:
    with bridge_nodes(api_url, tmp_path_factory.mktemp("podbridge")) as found:
        yield found
        for proxy in PROXIES:
            proxy.stop()


PROXIES: list[ComponentProcess] = []


@pytest.fixture(scope="module")
def proxy(api_url: str, nodes: tuple[ClusterNetwork, list[Node]], tmp_path_factory: pytest.TempPathFactory
          ) -> ComponentProcess:
    """kube-proxy for the cluster network, stopped with the nodes (a test may replace it: ``PROXIES[-1]``)."""
    PROXIES.append(_start_proxy(api_url, nodes[0], tmp_path_factory.mktemp("proxy")))
    return PROXIES[-1]


def _start_proxy(api_url: str, cluster: ClusterNetwork, logs: Any) -> ComponentProcess:
    return start_proxy(api_url, logs / "proxy.log", "--cluster-network", cluster.name)


def test_pods_on_two_nodes_reach_each_other_by_pod_ip(api_url: str, kubectl: Kubectl, ns: str,
                                                      nodes: tuple[ClusterNetwork, list[Node]]) -> None:
    cluster, (one, two) = nodes
    a = run_pod(api_url, ns, one, "a", SERVE)
    b = run_pod(api_url, ns, two, "b", SERVE)
    ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in (a, b)}
    for pod in (a, b):
        ip = ipaddress.ip_address(pod["status"]["podIP"])
        assert ip in ipaddress.ip_network("10.244.0.0/16")
        assert pod["status"]["podIPs"] == [{"ip": str(ip)}]
        node = httpx.get(f"{api_url}/api/v1/nodes/{pod['spec']['nodeName']}").json()
        assert ip in ipaddress.ip_network(node["spec"]["podCIDR"])
        internal = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        assert not ipaddress.ip_address(internal).is_loopback and pod["status"]["hostIP"] == internal
    assert ipaddress.ip_network(f"{ips['a']}/24", strict=False) != ipaddress.ip_network(f"{ips['b']}/24", strict=False)
    show = kubectl("exec", "-n", ns, "a", "--", "ip", "-o", "-4", "addr", "show", "eth0").stdout
    assert f"inet {ips['a']}/24" in show
    assert kubectl("exec", "-n", ns, "a", "--", "wget", "-qO-", f"http://{ips['b']}:8080/").stdout.strip() == "b"
    assert kubectl("exec", "-n", ns, "b", "--", "wget", "-qO-", f"http://{ips['a']}:8080/").stdout.strip() == "a"
    if cluster.host_reaches(ips["a"]):  # the host, over its link (unless another cluster routes 10.244/16)
        assert httpx.get(f"http://{ips['a']}:8080/", timeout=5).text.strip() == "a"


def test_nginx_listens_on_all_of_its_pods_addresses(api_url: str, kubectl: Kubectl, ns: str,
                                                    nodes: tuple[ClusterNetwork, list[Node]]) -> None:
    """As nginx's ``listen 80``: in its pod's own network namespace the stand-in serves on every address, so the
    pod's containers reach it at ``localhost`` (a sidecar's usual way) and other pods at its pod IP."""
    _, (one, two) = nodes
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": ns},
            "spec": {"nodeName": one.name, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "nginx", "image": "nginx"}]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    def running() -> dict[str, Any] | None:
        pod = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/web").json()
        return dict(pod) if pod.get("status", {}).get("phase") == "Running" else None
    web = wait_for(running, what="web Running")
    wait_for(lambda: "Serving HTTP on 0.0.0.0 port 80" in kubectl("logs", "-n", ns, "web").stdout,
             what="the stand-in listening")
    assert "Directory listing" in kubectl("exec", "-n", ns, "web", "--", "wget", "-qO-", "http://localhost/").stdout
    other = run_pod(api_url, ns, two, "client", "sleep 3600")
    assert other["status"]["podIP"] != web["status"]["podIP"]
    listing = kubectl("exec", "-n", ns, "client", "--", "wget", "-qO-", f"http://{web['status']['podIP']}/").stdout
    assert "Directory listing" in listing


def test_a_restarted_kubelet_adopts_its_pods_network(api_url: str, kubectl: Kubectl, ns: str,
                                                     nodes: tuple[ClusterNetwork, list[Node]]) -> None:
    """Killed and restarted, the kubelet keeps its pod's namespace, veth and IP; the pod still answers."""
    _, (one, two) = nodes
    served = run_pod(api_url, ns, one, "kept", SERVE)
    run_pod(api_url, ns, two, "asker", "exec sleep 3600")
    one.restart(ns, "kept", "main")
    pod = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/kept").json()
    assert pod["status"]["podIP"] == served["status"]["podIP"]
    url = f"http://{served['status']['podIP']}:8080/"
    assert kubectl("exec", "-n", ns, "asker", "--", "wget", "-qO-", url).stdout.strip() == "kept"


def test_a_deleted_pods_veth_goes(api_url: str, kubectl: Kubectl, ns: str,
                                  nodes: tuple[ClusterNetwork, list[Node]]) -> None:
    cluster, (one, _) = nodes
    pod = run_pod(api_url, ns, one, "gone", "exec sleep 3600")
    veth = veth_name(pod["metadata"]["uid"])
    assert links(cluster, veth, bridge_name(one.name)) == [True, True]
    kubectl("delete", "pod", "-n", ns, "gone", "--wait=true")

    wait_for(lambda: links(cluster, veth) == [False], what=f"{veth} deleted")


def links(cluster: ClusterNetwork, *names: str) -> list[bool]:
    """Whether each interface exists in the cluster network's namespace."""
    def look() -> list[bool]:
        with IPRoute() as inside:
            return [bool(inside.link_lookup(ifname=name)) for name in names]
    return in_netns(cluster.path, look)


def test_removing_the_cluster_network_leaves_nothing_behind(tmp_path: Any) -> None:
    """A second cluster network of its own, built and removed: no namespace, host link or route is left."""
    if usable() is not None or unavailable(tmp_path) is not None:
        pytest.skip(f"this host cannot build a pod network: {usable() or unavailable(tmp_path)}")
    cluster = ClusterNetwork(f"kubelab-t{uuid.uuid4().hex[:6]}")
    subnet = cluster.ensure()
    assert name_exists(cluster.name)
    node_ip = cluster.node_ip("n1")
    assert ipaddress.ip_address(node_ip) in subnet
    cluster.remove()
    assert not name_exists(cluster.name)
    with IPRoute() as ipr:
        assert not ipr.link_lookup(ifname=cluster.host_link)
        for route in ipr.get_routes(family=socket.AF_INET):
            assert route.get_attr("RTA_DST") != str(subnet.network_address)
    assert not cluster.state.exists()


@pytest.fixture(scope="module")
def web(api_url: str, nodes: tuple[ClusterNetwork, list[Node]], proxy: ComponentProcess, module_ns: str
        ) -> dict[str, Any]:
    """Three pods behind a NodePort Service, on both nodes, and a client pod."""
    _, (one, two) = nodes
    for name, node in (("web-0", one), ("web-1", two), ("web-2", one)):
        run_pod(api_url, module_ns, node, name, SERVE, {"app": "web"})
    run_pod(api_url, module_ns, two, "client", "exec sleep 3600")
    svc = make_service(api_url, module_ns, "web", {"app": "web"}, type="NodePort")
    return svc


def test_a_service_answers_from_all_three_pods_through_its_cluster_ip(kubectl: Kubectl, module_ns: str,
                                                                      web: dict[str, Any]) -> None:
    ip = web["spec"]["clusterIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.96.0.0/12")
    wait_for(lambda: "web-0" in answers(kubectl, module_ns, "client", f"http://{ip}/", 3), what="the ClusterIP")
    assert set(answers(kubectl, module_ns, "client", f"http://{ip}/", 40)) == {"web-0", "web-1", "web-2"}


def test_a_service_answers_from_all_three_pods_through_its_node_port(api_url: str, module_ns: str,
                                                                     nodes: tuple[ClusterNetwork, list[Node]],
                                                                     web: dict[str, Any]) -> None:
    node_port = web["spec"]["ports"][0]["nodePort"]
    for node in nodes[1]:
        status = httpx.get(f"{api_url}/api/v1/nodes/{node.name}").json()["status"]
        internal = next(a["address"] for a in status["addresses"] if a["type"] == "InternalIP")
        url = f"http://{internal}:{node_port}/"
        wait_for(lambda url=url: get(url), what=f"NodePort {url}")
        assert {get(url) for _ in range(40)} == {"web-0", "web-1", "web-2"}


def test_session_affinity_client_ip_sticks(api_url: str, kubectl: Kubectl, module_ns: str,
                                           web: dict[str, Any]) -> None:
    svc = make_service(api_url, module_ns, "sticky", {"app": "web"}, sessionAffinity="ClientIP")
    url = f"http://{svc['spec']['clusterIP']}/"
    wait_for(lambda: "web" in " ".join(answers(kubectl, module_ns, "client", url, 1)), what="the sticky Service")
    assert len(set(answers(kubectl, module_ns, "client", url, 20))) == 1


def test_a_pod_reaches_itself_through_itsmake_service(api_url: str, kubectl: Kubectl, module_ns: str,
                                                  web: dict[str, Any]) -> None:
    resp = httpx.patch(f"{api_url}/api/v1/namespaces/{module_ns}/pods/web-1",
                       json={"metadata": {"labels": {"self": "y"}}},
                       headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 200, resp.text
    svc = make_service(api_url, module_ns, "self", {"self": "y"})
    url = f"http://{svc['spec']['clusterIP']}/"
    wait_for(lambda: answers(kubectl, module_ns, "web-1", url, 1) == ["web-1"], what="web-1 through its Service")


def test_a_restarted_proxy_keeps_the_rules_working(api_url: str, kubectl: Kubectl, module_ns: str,
                                                   nodes: tuple[ClusterNetwork, list[Node]], web: dict[str, Any],
                                                   tmp_path: Any) -> None:
    """Killed, the proxy leaves its rules in place; restarted, it replaces the table in one transaction and
    picks up what changed meanwhile (a new Service)."""
    url = f"http://{web['spec']['clusterIP']}/"
    PROXIES[-1].kill()
    assert set(answers(kubectl, module_ns, "client", url, 20)) == {"web-0", "web-1", "web-2"}
    late = make_service(api_url, module_ns, "late", {"app": "web"})
    PROXIES.append(_start_proxy(api_url, nodes[0], tmp_path))
    late_url = f"http://{late['spec']['clusterIP']}/"
    wait_for(lambda: "web" in " ".join(answers(kubectl, module_ns, "client", late_url, 1)), what="the late Service")
    assert set(answers(kubectl, module_ns, "client", url, 20)) == {"web-0", "web-1", "web-2"}
