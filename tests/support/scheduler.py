"""A real ``python -m scheduler`` process for integration tests, and what tests read around it: its Lease and the
debug endpoint the leader publishes there (for ``/debug/explain`` and ``kubelab explain``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from support.process import ComponentProcess
from support.wait import wait_for

DEBUG_ENDPOINT_ANNOTATION = "kubelab.io/debug-endpoint"


class SchedulerProcess(ComponentProcess):
    """One scheduler; ``stop`` sends SIGTERM (``kill`` SIGKILL, which leaves its Lease held) and waits."""

    def __init__(self, api_url: str, log_path: Path, *flags: str) -> None:
        super().__init__("scheduler", api_url, log_path, *flags)


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
