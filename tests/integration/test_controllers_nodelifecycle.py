"""Node lifecycle with a real controller-manager (grace period 3 s): heartbeat loss → Ready=Unknown and the
unreachable taints → the pod's Ready goes False → NoExecute eviction after its tolerationSeconds → the
ReplicationController's replacement; heartbeats back → taints gone.  The test plays the kubelet (Lease,
node status) and the scheduler (bindings)."""

from __future__ import annotations

from typing import Any

import httpx

from support.controllers import (
    MERGE,
    ControllerManager,
    Heartbeat,
    bind,
    controller_manager_fixture,
    events,
    make_ready_node,
    pods,
    post_node_status,
    set_ready,
)
from support.wait import wait_for

manager = controller_manager_fixture("nodelifecycle,taint-eviction-controller,replicationcontroller",
                                     "--node-monitor-grace-period=3s", "--node-monitor-period=1s")


def node(client: httpx.Client, name: str) -> dict[str, Any]:
    return client.get(f"/api/v1/nodes/{name}").json()


def taints(client: httpx.Client, name: str) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in node(client, name).get("spec", {}).get("taints") or []}


def ready_status(obj: dict[str, Any]) -> str | None:
    return next((c["status"] for c in obj.get("status", {}).get("conditions") or [] if c["type"] == "Ready"), None)


UNREACHABLE = {("node.kubernetes.io/unreachable", "NoExecute"), ("node.kubernetes.io/unreachable", "NoSchedule")}


def test_lost_heartbeat_taints_evicts_and_replaces(client: httpx.Client, api_url: str, ns: str,
                                                   manager: ControllerManager) -> None:
    n1, n2 = f"{ns}-n1", f"{ns}-n2"
    make_ready_node(client, n1)
    make_ready_node(client, n2)
    beat1, beat2 = Heartbeat(api_url, n1), Heartbeat(api_url, n2)
    try:
        toleration = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                      "tolerationSeconds": 2}
        rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
              "spec": {"replicas": 1, "selector": {"app": "web"},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"tolerations": [toleration],
                                             "containers": [{"name": "c", "image": "busybox"}]}}}}
        assert client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=rc).status_code == 201
        first = wait_for(lambda: pods(client, ns, "app=web"), what="the RC's pod")[0]
        bind(client, first, n1)
        assert set_ready(client, first) == 200
        # Alive nodes stay untouched well past the grace period.
        wait_for(lambda: "RegisteredNode" in {e["reason"] for e in events(client, "default", "RegisteredNode")
                                              if e["involvedObject"]["name"] == n1}, what="RegisteredNode")
        beat1.stop()  # node 1's kubelet dies
        down = wait_for(lambda: (n := node(client, n1)) and ready_status(n) == "Unknown" and n, what="Ready=Unknown")
        condition = next(c for c in down["status"]["conditions"] if c["type"] == "Ready")
        assert condition["reason"] == "NodeStatusUnknown"
        assert condition["message"] == "Kubelet stopped posting node status."
        wait_for(lambda: taints(client, n1) >= UNREACHABLE, what="unreachable taints")
        assert not taints(client, n2) & UNREACHABLE
        name = first["metadata"]["name"]
        wait_for(lambda: ready_status(client.get(f"/api/v1/namespaces/{ns}/pods/{name}").json()) == "False",
                 what="the pod's Ready=False")
        # tolerationSeconds=2: evicted (graceful: no kubelet finishes it) and replaced by the RC.
        wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/{name}").json()["metadata"]
                 .get("deletionTimestamp"), what="eviction")
        evicted = events(client, ns, "TaintManagerEviction")
        assert any(e["involvedObject"]["name"] == name and "Marking for deletion" in e["message"] for e in evicted)
        replacement = wait_for(lambda: [p for p in pods(client, ns, "app=web") if p["metadata"]["name"] != name],
                               what="a replacement pod")[0]
        bind(client, replacement, n2)  # the scheduler would avoid n1: it carries unreachable:NoSchedule
        not_ready = [e for e in events(client, "default", "NodeNotReady") if e["involvedObject"]["name"] == n1]
        assert not_ready and not_ready[0]["message"] == f"Node {n1} status is now: NodeNotReady"
        # The kubelet comes back: heartbeat and Ready=True → the controller's taints go.
        beat1 = Heartbeat(api_url, n1)
        post_node_status(client, n1, "True")
        wait_for(lambda: not taints(client, n1) & UNREACHABLE, what="taints removed")
        assert ready_status(node(client, n2)) == "True"
    finally:
        beat1.stop()
        beat2.stop()


def test_not_ready_and_cordon_taints(client: httpx.Client, api_url: str, ns: str, manager: ControllerManager) -> None:
    name = f"{ns}-n"
    make_ready_node(client, name)
    beat = Heartbeat(api_url, name)
    try:
        post_node_status(client, name, "False")  # the kubelet says NotReady (e.g. its runtime is down)
        wait_for(lambda: {("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/not-ready", "NoSchedule")}
                 <= taints(client, name), what="not-ready taints")
        assert ready_status(node(client, name)) == "False"  # a live kubelet's word is kept, not overwritten
        client.patch(f"/api/v1/nodes/{name}", json={"spec": {"unschedulable": True}}, headers=MERGE)  # kubectl cordon
        wait_for(lambda: ("node.kubernetes.io/unschedulable", "NoSchedule") in taints(client, name), what="cordon")
        post_node_status(client, name, "True")
        client.patch(f"/api/v1/nodes/{name}", json={"spec": {"unschedulable": False}}, headers=MERGE)
        wait_for(lambda: not taints(client, name), what="all controller taints removed")
    finally:
        beat.stop()
