"""A kubelet started before its apiserver: it keeps trying to register (as kubelet's registerWithAPIServer), its
/healthz says so meanwhile, and once the apiserver is up the node registers and its pods run. The test runs an
API-only ``kubelab.Cluster`` of its own whose apiserver it stops before the kubelet starts and starts again later."""

from __future__ import annotations

from pathlib import Path

import httpx

from conftest import api_only
from kubelab.api import Cluster
from kubelab.etcd import free_port
from support.wait import wait_for


def _health(port: int) -> int:
    """The kubelet's plain-HTTP ``--healthz-port`` (kube's 10248)."""
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code
    except httpx.HTTPError:
        return 0


def port_of(url: str) -> str:
    return url.rsplit(":", 1)[1]


def test_kubelet_waits_for_a_late_apiserver(tmp_path: Path) -> None:
    with api_only() as api:
        api.stop_component("apiserver")  # its port is known; nothing listens there until start_component
        _kubelet_waits(api, tmp_path)


def _kubelet_waits(api: Cluster, tmp_path: Path) -> None:
    ns = "default"
    node, port = f"late-{port_of(api.api_url)}", free_port()
    health_port = free_port()
    log_path = tmp_path / "kubelet.log"
    kubelet = api.run_component("kubelet", "--node-name", node, "--port", str(port), "--healthz-port",
                                str(health_port), "--root-dir", str(tmp_path / "root"), "--runtime", "process",
                                log=log_path)
    try:
        wait_for(lambda: "Unable to register node" in log_path.read_text(), what="a failed registration attempt")
        assert _health(health_port) == 503 and kubelet.poll() is None
        api.start_component("apiserver")
        with httpx.Client(base_url=api.api_url, timeout=10) as client:
            wait_for(lambda: client.get(f"/api/v1/nodes/{node}").status_code == 200, what="node registered")
            assert _health(health_port) == 200
            client.post(f"/api/v1/namespaces/{ns}/pods", json={
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": node},
                "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "30"]}]}})
            wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/{node}").json()
                     .get("status", {}).get("phase") == "Running", what="the pod running")
            client.delete(f"/api/v1/namespaces/{ns}/pods/{node}", params={"gracePeriodSeconds": "0"})
            client.delete(f"/api/v1/nodes/{node}")
        assert "Successfully registered node" in log_path.read_text()
    finally:
        kubelet.stop()
