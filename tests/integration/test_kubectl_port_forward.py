"""``kubectl port-forward``: kubectl 1.32 tunnels SPDY through a websocket (``SPDY/3.1+portforward.k8s.io``),
1.29 upgrades to SPDY/3.1, and the Python client speaks the kubelet's websocket protocol; all three reach a real
pod's port through the apiserver's ``pods/{name}/portforward`` and a real kubelet."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import Kubectl, kubectl_release
from kubelab.etcd import free_port
from support.process import ComponentProcess, kill_containers
from support.wait import wait_for


@pytest.fixture(params=["1.32", "1.29"])  # websocket tunnel; SPDY/3.1
def kube(request: pytest.FixtureRequest, api_url: str, tmp_path: Path) -> Kubectl:
    return Kubectl(kubectl_release(request.param), api_url, tmp_path)


@pytest.fixture(scope="module")
def web(api_url: str, module_ns: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A kubelet and pod ``web`` serving HTTP on a free port (yielded), a Service and a Deployment selecting it."""
    root = tmp_path_factory.mktemp("pf-kubelet")
    node, port = f"{module_ns}-node", free_port()
    kubelet = ComponentProcess("kubelet", api_url, root / "kubelet.log", "--port", str(free_port()), "--root-dir",
                               str(root / "root"), "--node-name", node, "--runtime", "process")
    labels = {"app": "web"}
    container = {"name": "web", "image": "python:3", "command": ["python3", "-m", "http.server", str(port)],
                 "ports": [{"containerPort": port}]}
    try:
        objects: list[tuple[str, dict[str, Any]]] = [
            ("api/v1", {"kind": "Pod", "metadata": {"name": "web", "labels": labels},
                        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": [container]}}),
            ("api/v1", {"kind": "Service", "metadata": {"name": "web"},
                        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": port}]}}),
            ("apis/apps/v1", {"kind": "Deployment", "metadata": {"name": "web"},
                              "spec": {"selector": {"matchLabels": labels}, "replicas": 0,
                                       "template": {"metadata": {"labels": labels},
                                                    "spec": {"containers": [container]}}}}),
        ]
        for prefix, body in objects:
            plural = body["kind"].lower() + "s"
            resp = httpx.post(f"{api_url}/{prefix}/namespaces/{module_ns}/{plural}", json=body)
            assert resp.status_code == 201, resp.text

        def serving() -> bool:
            pod = httpx.get(f"{api_url}/api/v1/namespaces/{module_ns}/pods/web").json()
            if pod.get("status", {}).get("phase") != "Running":
                return False
            try:
                return httpx.get(f"http://{pod['status']['podIP']}:{port}/").is_success
            except httpx.TransportError:
                return False
        wait_for(serving, what="web serving")
        yield port
    finally:
        kubelet.stop()
        kill_containers(root / "root")


class PortForward:
    """``kubectl port-forward`` running in the background; ``local`` is the port its first line announces."""

    def __init__(self, kube: Kubectl, *args: str) -> None:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(kube.home), "KUBECONFIG": str(kube.home / "none")}
        self.process = subprocess.Popen([kube.binary, "-s", kube.server, "port-forward", *args], env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith("Forwarding from 127.0.0.1:"), line + self.stop()
        self.local = int(line.split("127.0.0.1:")[1].split()[0])

    def get(self) -> httpx.Response:
        return httpx.get(f"http://127.0.0.1:{self.local}/", timeout=30)

    def stop(self) -> str:
        """End kubectl; its stderr."""
        self.process.send_signal(signal.SIGINT)
        try:
            _, stderr = self.process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, stderr = self.process.communicate()
        return stderr


@pytest.fixture()
def forwards() -> Iterator[list[PortForward]]:
    started: list[PortForward] = []
    yield started
    for forward in started:
        forward.stop()


def test_pod_port_answers_many_connections(kube: Kubectl, module_ns: str, web: int,
                                           forwards: list[PortForward]) -> None:
    local = free_port()
    forwards.append(forward := PortForward(kube, "-n", module_ns, "pod/web", f"{local}:{web}"))
    assert forward.local == local
    assert "Directory listing" in forward.get().text
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda _: forward.get().status_code, range(16)))
    assert statuses == [200] * 16


@pytest.mark.parametrize("target", ["deploy/web", "svc/web"])
def test_kubectl_resolves_the_pod_and_port(kube: Kubectl, module_ns: str, web: int, forwards: list[PortForward],
                                           target: str) -> None:
    remote = "80" if target == "svc/web" else str(web)  # the Service's port → its targetPort
    forwards.append(forward := PortForward(kube, "-n", module_ns, target, f":{remote}"))
    assert forward.get().status_code == 200


def test_refused_port_reports_the_dial_error(kube: Kubectl, module_ns: str, web: int) -> None:
    closed = free_port()
    forward = PortForward(kube, "-n", module_ns, "pod/web", f":{closed}")
    with pytest.raises(httpx.TransportError):
        forward.get()
    stderr = forward.stop()
    assert f"error forwarding port {closed} to pod {module_ns}/web" in stderr
    assert "connection refused" in stderr


def test_pod_not_running(kube: Kubectl, api_url: str, module_ns: str) -> None:
    name = f"pending-{uuid.uuid4().hex[:6]}"  # never scheduled: no scheduler runs here
    body = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{module_ns}/pods", json=body).status_code == 201
    result = kube("port-forward", "-n", module_ns, f"pod/{name}", "18000:80", check=False, timeout=30)
    assert result.returncode == 1
    assert "unable to forward port because pod is not running. Current status=Pending" in result.stderr


def _close(forward: Any) -> None:
    """Close a Python client port-forward, and its websocket: the client's proxy thread leaves it open when the
    server ended the session."""
    forward.close()
    wait_for(lambda: not forward.websocket.connected, what="the client's proxy thread to finish")
    forward.websocket.shutdown()


def test_python_client_portforward(api: Any, module_ns: str, web: int) -> None:
    from kubernetes import client as k8s
    from kubernetes.stream import portforward

    core = k8s.CoreV1Api(api)
    forward = portforward(core.connect_get_namespaced_pod_portforward, "web", module_ns, ports=str(web))
    try:
        sock = forward.socket(web)
        sock.setblocking(True)
        sock.sendall(b"GET / HTTP/1.0\r\nHost: web\r\n\r\n")
        response = b""
        while chunk := sock.recv(65536):
            response += chunk
        assert response.startswith(b"HTTP/1.0 200 OK") and b"Directory listing" in response
        assert forward.error(web) is None
        sock.close()
    finally:
        _close(forward)
    closed = free_port()
    forward = portforward(core.connect_get_namespaced_pod_portforward, "web", module_ns, ports=str(closed))
    try:
        sock = forward.socket(closed)
        assert sock.recv(10) == b""
        sock.close()
        assert f"error forwarding port {closed} to pod {module_ns}/web" in (forward.error(closed) or "")
    finally:
        _close(forward)
