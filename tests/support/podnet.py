"""Pods and Services on the linux runtime's pod network for the tests of kube-proxy's modes: a cluster network with
two linux kubelets and the node IPAM and EndpointSlice controllers, busybox pods that serve their own name, and
requests made from inside a pod (``kubectl exec`` + busybox ``wget``) or from the host."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import Kubectl
from kubelet.network import ClusterNetwork, usable
from kubelet.runtime.linux import unavailable
from support.controllers import ControllerManager
from support.kubelet import Node, running_node
from support.wait import wait_for

SERVE = "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"


@contextmanager
def bridge_nodes(api_url: str, root: Path) -> Iterator[tuple[ClusterNetwork, list[Node]]]:
    """A cluster network of its own with two linux kubelets on it (skipped where the host cannot build one); the
    network (its namespace, links and rules) is removed afterwards."""
    why = unavailable(root / "probe") or usable()
    if why is not None:
        pytest.skip(f"this host cannot build a pod network: {why}")
    cluster = ClusterNetwork(f"kubelab-t{uuid.uuid4().hex[:6]}")
    cm = ControllerManager(api_url, root / "controller-manager.log", "--leader-elect=false",
                           "--controllers=nodeipam,endpointslice", "--cluster-cidr", "10.244.0.0/16")
    try:
        with ExitStack() as stack:
            found = []
            for name in [f"br-{uuid.uuid4().hex[:8]}" for _ in range(2)]:
                (root / name).mkdir()
                found.append(stack.enter_context(running_node(api_url, name, root / name, "linux",
                                                              flags=["--cluster-network", cluster.name])))
            yield cluster, found
    finally:
        cm.stop()
        cluster.remove()


def run_pod(api_url: str, ns: str, node: Node, name: str, command: str, labels: dict[str, str] | None = None
            ) -> dict[str, Any]:
    """A busybox pod bound to ``node`` running ``command``, once Running."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "spec": {"nodeName": node.name, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", command]}]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201

    def running() -> dict[str, Any] | None:
        pod = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/{name}").json()
        return dict(pod) if pod.get("status", {}).get("phase") == "Running" else None
    try:
        return wait_for(running, what=f"{name} Running")
    except AssertionError:
        raise AssertionError(httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/{name}").json()["status"]) from None


def make_service(api_url: str, ns: str, name: str, selector: dict[str, str], **spec: Any) -> dict[str, Any]:
    """A Service on port 80 → 8080 of the pods ``selector`` picks."""
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": 8080}], **spec}}
    resp = httpx.post(f"{api_url}/api/v1/namespaces/{ns}/services", json=body)
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


def answers(kubectl: Kubectl, ns: str, pod: str, url: str, times: int) -> list[str]:
    """``times`` requests from inside ``pod`` (busybox wget, each a new connection), the bodies. (busybox's own
    ``wget -T`` crashes with this static build: ``timeout`` bounds each request instead.)"""
    script = f"for i in $(seq {times}); do timeout 3 wget -qO- {url} || echo failed; done"
    return kubectl("exec", "-n", ns, pod, "--", "sh", "-c", script).stdout.split()


def get(url: str) -> str:
    """One request from the host on a new connection: the body, or "" when it failed."""
    try:
        return httpx.get(url, timeout=3, headers={"Connection": "close"}).text.strip()
    except httpx.TransportError:
        return ""


def internal_ip(api_url: str, node: str) -> str:
    status = httpx.get(f"{api_url}/api/v1/nodes/{node}").json()["status"]
    return str(next(a["address"] for a in status["addresses"] if a["type"] == "InternalIP"))
