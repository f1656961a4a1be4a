"""NoExecute taint eviction with a real controller-manager: untolerated pods go at once, tolerationSeconds is
honoured, a toleration without a bound keeps the pod (no kubelet: deletion shows as deletionTimestamp)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from conftest import Kubectl
from support.controllers import controller_manager_fixture
from support.wait import wait_for

taint_manager = controller_manager_fixture("taint-eviction-controller", name="taint_manager")


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


def test_removing_the_taint_in_time_cancels(client: httpx.Client, ns: str, kubectl: Kubectl,
                                            taint_manager: None) -> None:
    """The seed's maintenance recipe through the real kubectl: taint, then untaint before tolerationSeconds."""
    node = f"{ns}-m"
    assert client.post("/api/v1/nodes", json={"metadata": {"name": node}}).status_code == 201
    toleration = {"key": "check", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2}
    bound_pod(client, ns, "patient", node, [toleration])
    kubectl("taint", "nodes", node, "check=mycheck:NoExecute")
    time.sleep(0.5)
    kubectl("taint", "nodes", node, "check=mycheck:NoExecute-")
    wait_for(lambda: any("Cancelling deletion" in e["message"] for e in client.get(
        f"/api/v1/namespaces/{ns}/events", params={"fieldSelector": "reason=TaintManagerEviction"}).json()["items"]),
        what="the cancellation event")
    time.sleep(2.5)  # past the toleration: the cancelled eviction must not happen
    assert not terminating(client, ns, "patient")
