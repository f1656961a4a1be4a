"""A real ``python -m controllers`` process for integration tests, and the small API chores tests do around it
(acting as the scheduler and kubelet: binding pods, marking them ready, renewing a node's Lease)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from apimachinery.meta import micro_time, now_rfc3339
from support.process import ComponentProcess

MERGE = {"Content-Type": "application/merge-patch+json"}


class ControllerManager(ComponentProcess):
    """One controller-manager process; ``stop`` sends SIGTERM (``kill`` SIGKILL) and waits."""

    def __init__(self, api_url: str, log_path: Path, *flags: str) -> None:
        # As kubeadm runs it: each controller writes as its own service account (impersonated on the plain port),
        # so RBAC judges every controller write the tests make happen.
        own = [] if any(f.startswith("--use-service-account-credentials") for f in flags) \
            else ["--use-service-account-credentials"]
        super().__init__("controllers", api_url, log_path, *own, *flags)


def controller_manager_fixture(controllers: str, *flags: str, name: str = "manager") -> Callable[..., Any]:
    """A module-scoped fixture ``name``: one controller-manager running ``controllers`` (kube's ``--controllers``
    list) without leader election, its log in the session's tmp dir ``cm-<module>N/``, stopped after the module."""

    @pytest.fixture(scope="module", name=name)
    def manager(api_url: str, tmp_path_factory: pytest.TempPathFactory,
                request: pytest.FixtureRequest) -> Iterator[ControllerManager]:
        logs = tmp_path_factory.mktemp(f"cm-{request.module.__name__.rpartition('.')[2].removeprefix('test_')}")
        cm = ControllerManager(api_url, logs / "controller-manager.log",
                               "--leader-elect=false", f"--controllers={controllers}", *flags)
        yield cm
        cm.stop()

    return manager


def now() -> str:
    return now_rfc3339()


def now_micro() -> str:
    return micro_time(time.time_ns())


def pods(client: httpx.Client, ns: str, selector: str = "", *, live: bool = True) -> list[dict[str, Any]]:
    """Pods of ``ns`` matching ``selector``; ``live`` drops those being deleted."""
    items = client.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": selector}).json()["items"]
    return [p for p in items if not (live and p["metadata"].get("deletionTimestamp"))]


def bind(client: httpx.Client, pod: dict[str, Any], node: str) -> None:
    """What the scheduler does: POST a Binding."""
    m = pod["metadata"]
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": m["name"], "uid": m["uid"]},
            "target": {"kind": "Node", "name": node}}
    resp = client.post(f"/api/v1/namespaces/{m['namespace']}/pods/{m['name']}/binding", json=body)
    assert resp.status_code == 201, resp.text


def set_ready(client: httpx.Client, pod: dict[str, Any], ready: bool = True, phase: str = "Running") -> int:
    """What the kubelet reports: phase and the Ready condition (via ``pods/{name}/status``)."""
    m = pod["metadata"]
    fresh = client.get(f"/api/v1/namespaces/{m['namespace']}/pods/{m['name']}").json()
    if fresh.get("kind") != "Pod":
        return 404
    fresh["status"] = {**fresh.get("status", {}), "phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now()}]}
    return client.put(f"/api/v1/namespaces/{m['namespace']}/pods/{m['name']}/status", json=fresh).status_code


def make_ready_node(client: httpx.Client, name: str) -> dict[str, Any]:
    """A Node whose 'kubelet' has posted Ready=True, plus its Lease in kube-node-lease."""
    node: dict[str, Any] = client.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node",
                                                              "metadata": {"name": name}}).json()
    post_node_status(client, name, "True")
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": name, "namespace": "kube-node-lease"},
             "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": now_micro()}}
    assert client.post("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", json=lease).status_code == 201
    return node


def post_node_status(client: httpx.Client, name: str, ready: str) -> None:
    node = client.get(f"/api/v1/nodes/{name}").json()
    stamp = now()
    node["status"] = {**node.get("status", {}), "conditions": [
        {"type": "Ready", "status": ready, "reason": "KubeletReady" if ready == "True" else "KubeletNotReady",
         "message": "kubelet is posting ready status", "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}]}
    resp = client.put(f"/api/v1/nodes/{name}/status", json=node)
    assert resp.status_code == 200, resp.text


class Heartbeat:
    """Renews a node's Lease every ``period`` seconds from a thread, as a kubelet does, until ``stop``."""

    def __init__(self, api_url: str, node: str, period: float = 0.5) -> None:
        self.api_url, self.node, self.period = api_url, node, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{self.node}"
        with httpx.Client(base_url=self.api_url, timeout=10) as client:
            while not self._stop.wait(self.period):
                client.patch(path, json={"spec": {"renewTime": now_micro()}}, headers=MERGE)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def events(client: httpx.Client, ns: str, reason: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = client.get(f"/api/v1/namespaces/{ns}/events",
                                             params={"fieldSelector": f"reason={reason}"}).json()["items"]
    return items
