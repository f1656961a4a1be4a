"""NoExecute taint eviction with a real controller-manager: untolerated pods go at once, tolerationSeconds is
honoured, a toleration without a bound keeps the pod (no kubelet: deletion shows as deletionTimestamp)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from conftest import ROOT
from support.wait import wait_for


@pytest.fixture(scope="module")
def taint_manager(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    log_path = tmp_path_factory.mktemp("cm-taints") / "controller-manager.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "controllers", "--master", api_url, "--leader-elect=false",
                                 "--controllers=taint-eviction-controller"],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(15)


def bound_pod(client: httpx.Client, ns: str, name: str, node: str,
              tolerations: list[dict[str, Any]] | None = None) -> None:
    body = {"metadata": {"name": name}, "spec": {"nodeName": node, "tolerations": tolerations or [],
                                                 "containers": [{"name": "c", "image": "busybox"}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=body).status_code == 201


def terminating(client: httpx.Client, ns: str, name: str) -> bool:
    resp = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    return resp.status_code == 404 or bool(resp.json()["metadata"].get("deletionTimestamp"))


def test_noexecute_taint_evicts(client: httpx.Client, ns: str, taint_manager: None) -> None:
    node = f"{ns}-n"
    assert client.post("/api/v1/nodes", json={"metadata": {"name": node}}).status_code == 201
    toleration = {"key": "check", "operator": "Equal", "value": "mycheck", "effect": "NoExecute"}
    bound_pod(client, ns, "plain", node)
    bound_pod(client, ns, "forever", node, [toleration])
    bound_pod(client, ns, "brief", node, [{**toleration, "tolerationSeconds": 2}])
    bound_pod(client, ns, "everything", node, [{"operator": "Exists"}])
    time.sleep(1)
    assert not terminating(client, ns, "plain")  # no taint yet: nothing happens
    client.patch(f"/api/v1/nodes/{node}", json={"spec": {"taints": [{"key": "check", "value": "mycheck",
                                                                     "effect": "NoExecute"}]}},
                 headers={"Content-Type": "application/merge-patch+json"})
    wait_for(lambda: terminating(client, ns, "plain"), what="the untolerated pod's eviction")
    assert not terminating(client, ns, "brief")
    wait_for(lambda: terminating(client, ns, "brief"), timeout=15, what="eviction after tolerationSeconds")
    assert not terminating(client, ns, "forever") and not terminating(client, ns, "everything")
    events = client.get(f"/api/v1/namespaces/{ns}/events", params={"fieldSelector": "reason=TaintManagerEviction"})
    assert {e["involvedObject"]["name"] for e in events.json()["items"]} >= {"plain"}
