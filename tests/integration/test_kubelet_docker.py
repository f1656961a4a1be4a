"""``--runtime docker`` against a real Docker engine and the real apiserver: a pod prints and exits 0, so it is
Succeeded with its output in its logs, and the node and the container say ``docker://``. Skipped where no engine
answers ``GET /_ping`` (the fake engine of tests/unit/test_kubelet_docker.py never stands in for this test)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubelab.etcd import free_port
from support.process import ComponentProcess
from support.wait import wait_for

HOST = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def engine() -> httpx.Client:
    if HOST.startswith("unix://"):
        return httpx.Client(transport=httpx.HTTPTransport(uds=HOST[len("unix://"):]), base_url="http://docker/v1.41",
                            timeout=5)
    return httpx.Client(base_url="http://" + HOST.split("://", 1)[1] + "/v1.41", timeout=5)


def engine_reachable() -> bool:
    """``GET /_ping`` answers 200 (a plain socket: the check must not leak one when nothing listens)."""
    try:
        if HOST.startswith("unix://"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            address: Any = HOST[len("unix://"):]
        else:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            host, _, port = HOST.split("://", 1)[1].partition(":")
            address = (host, int(port or 2375))
        with sock:
            sock.settimeout(5)
            sock.connect(address)
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            return sock.recv(64).split(b" ")[1:2] == [b"200"]
    except (OSError, ValueError):
        return False


pytestmark = pytest.mark.skipif(not engine_reachable(), reason="no Docker engine reachable")


@pytest.fixture()
def docker_kubelet(api_url: str, ns: str, tmp_path: Path) -> Iterator[ComponentProcess]:
    proc = ComponentProcess("kubelet", api_url, tmp_path / "kubelet.log", "--port", str(free_port()), "--root-dir",
                            str(tmp_path / "root"), "--crashloop-backoff", "1", "--node-lease-renew-interval", "1",
                            "--node-name", f"{ns}-node", "--runtime", "docker")
    try:
        yield proc
    finally:
        proc.stop()
        with engine() as e:  # whatever this node's kubelet left behind
            filters = f'{{"label":["io.kubelab.node={ns}-node"]}}'
            for c in e.get("/containers/json", params={"all": "1", "filters": filters}).json():
                e.delete(f"/containers/{c['Id']}", params={"force": "1"})


def get_pod(client: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    resp = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    return resp.json() if resp.status_code == 200 else {}


def test_pod_prints_and_succeeds(client: httpx.Client, ns: str, docker_kubelet: ComponentProcess) -> None:
    node = f"{ns}-node"
    wait_for(lambda: client.get(f"/api/v1/nodes/{node}").status_code == 200, what="node")
    info = client.get(f"/api/v1/nodes/{node}").json()["status"]["nodeInfo"]
    assert info["containerRuntimeVersion"].startswith("docker://")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hello", "namespace": ns},
           "spec": {"nodeName": node, "restartPolicy": "Never", "terminationGracePeriodSeconds": 2,
                    "containers": [{"name": "main", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
                                    "command": ["sh", "-c"], "args": ["echo hello from $(WHO); echo oops >&2"],
                                    "env": [{"name": "WHO", "value": "docker"}]}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=pod).status_code == 201
    wait_for(lambda: get_pod(client, ns, "hello").get("status", {}).get("phase") == "Succeeded", timeout=180,
             what="pod Succeeded (the image may be pulled first)")
    status = get_pod(client, ns, "hello")["status"]["containerStatuses"][0]
    assert status["containerID"].startswith("docker://")
    assert status["state"]["terminated"]["exitCode"] == 0
    logs = client.get(f"/api/v1/namespaces/{ns}/pods/hello/log").text
    assert logs.splitlines() == ["hello from docker", "oops"]
    with engine() as e:
        inspected = e.get(f"/containers/{status['containerID'].removeprefix('docker://')}/json").json()
    assert inspected["Config"]["Labels"]["io.kubernetes.pod.namespace"] == ns
    assert inspected["HostConfig"]["NetworkMode"] == "host"
