"""The linux runtime's pod network (``--cluster-network``): a node IPAM controller giving podCIDRs of 10.244.0.0/16,
two linux kubelets on one cluster network namespace. Each pod has its own ``eth0`` with its pod IP (status.podIP),
pods on the two nodes reach each other by pod IP (busybox ``wget`` through ``kubectl exec``, which the apiserver
proxies to the kubelet at its InternalIP on the cluster network); the host reaches pods too; a deleted pod's veth
goes; removing the cluster network leaves no namespace, bridge, veth or host route behind. Skipped where the host
cannot make namespaces or has no nft."""

from __future__ import annotations

import ipaddress
import socket
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from pyroute2 import IPRoute

from conftest import Kubectl
from kubelet.network import ClusterNetwork, bridge_name, in_netns, name_exists, usable, veth_name
from kubelet.runtime.linux import unavailable
from support.controllers import ControllerManager
from support.kubelet import Node, running_node
from support.wait import wait_for


@pytest.fixture(scope="module")
def nodes(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ClusterNetwork, list[Node]]]:
    root = tmp_path_factory.mktemp("podbridge")
    why = unavailable(root / "probe") or usable()
    if why is not None:
        pytest.skip(f"this host cannot build a pod network: {why}")
    cluster = ClusterNetwork(f"kubelab-t{uuid.uuid4().hex[:6]}")
    cm = ControllerManager(api_url, root / "controller-manager.log", "--leader-elect=false",
                           "--controllers=nodeipam", "--cluster-cidr", "10.244.0.0/16")
    try:
        with ExitStack() as stack:
            names = [f"br-{uuid.uuid4().hex[:8]}" for _ in range(2)]
            found = []
            for name in names:
                (root / name).mkdir()
                found.append(stack.enter_context(running_node(api_url, name, root / name, "linux",
                                                              "--cluster-network", cluster.name)))
            yield cluster, found
    finally:
        cm.stop()
        cluster.remove()


def _pod(api_url: str, ns: str, node: Node, name: str, command: str) -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"nodeName": node.name, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", command]}]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201

    def running() -> dict[str, Any] | None:
        pod = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/{name}").json()
        return pod if pod.get("status", {}).get("phase") == "Running" else None
    try:
        return wait_for(running, what=f"{name} Running")
    except AssertionError:
        raise AssertionError(httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/{name}").json()["status"]) from None


SERVE = "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"


def test_pods_on_two_nodes_reach_each_other_by_pod_ip(api_url: str, kubectl: Kubectl, ns: str,
                                                      nodes: tuple[ClusterNetwork, list[Node]]) -> None:
    cluster, (one, two) = nodes
    a = _pod(api_url, ns, one, "a", SERVE)
    b = _pod(api_url, ns, two, "b", SERVE)
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
    assert httpx.get(f"http://{ips['a']}:8080/", timeout=5).text.strip() == "a"  # the host, over its link


def test_a_deleted_pods_veth_goes(api_url: str, kubectl: Kubectl, ns: str,
                                  nodes: tuple[ClusterNetwork, list[Node]]) -> None:
    cluster, (one, _) = nodes
    pod = _pod(api_url, ns, one, "gone", "exec sleep 3600")
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
