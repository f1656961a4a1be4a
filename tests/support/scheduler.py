"""A real ``python -m scheduler`` process for integration tests, and what tests read around it: its Lease and the
debug endpoint the leader publishes there (for ``/debug/explain`` and ``kubelab explain``)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import httpx

from support.process import ComponentProcess
from support.wait import wait_for

DEBUG_ENDPOINT_ANNOTATION = "kubelab.io/debug-endpoint"


class SchedulerProcess(ComponentProcess):
    """One scheduler; ``stop`` sends SIGTERM (``kill`` SIGKILL, which leaves its Lease held) and waits."""

    def __init__(self, api_url: str, log_path: Path, *flags: str) -> None:
        # As kube-scheduler's own identity: RBAC judges what it reads and writes (bindings, events, claims).
        grant_test_leases(api_url)
        super().__init__("scheduler", api_url, log_path, *flags, act_as=("system:kube-scheduler",))


TEST_LEASES = "kubelab-tests:scheduler-leases"


def grant_test_leases(api_url: str) -> None:
    """kube's system:kube-scheduler role may get and update only the lease named ``kube-scheduler``; the tests give
    each scheduler a lease of its own (they share one apiserver), so they grant the rest (once per apiserver)."""
    with contextlib.suppress(httpx.TransportError):  # no apiserver there (a scheduler that never reaches one)
        _grant(f"{api_url}/apis/rbac.authorization.k8s.io/v1")


def _grant(rbac: str) -> None:
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": TEST_LEASES}
    httpx.post(f"{rbac}/clusterroles", json={
        "metadata": {"name": TEST_LEASES},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "update"]}]})
    httpx.post(f"{rbac}/clusterrolebindings", json={
        "metadata": {"name": TEST_LEASES}, "roleRef": ref,
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-scheduler"}]})


def lease(client: httpx.Client, name: str, namespace: str = "kube-system") -> dict[str, Any]:
    """The Lease ``namespace/name`` ({} if there is none yet)."""
    resp = client.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}")
    return resp.json() if resp.status_code == 200 else {}


def node_of(client: httpx.Client, ns: str, name: str) -> str:
    """The node pod ``ns/name`` is bound to ("" while pending)."""
    node: str = client.get(f"/api/v1/namespaces/{ns}/pods/{name}").json()["spec"].get("nodeName", "")
    return node


def debug_endpoint(client: httpx.Client, lease_name: str) -> str:
    """Wait for the leader of ``lease_name`` to publish its debug endpoint, and return it."""
    endpoint: str = wait_for(lambda: lease(client, lease_name).get("metadata", {}).get("annotations", {})
                             .get(DEBUG_ENDPOINT_ANNOTATION), what="the scheduler's debug endpoint")
    return endpoint
