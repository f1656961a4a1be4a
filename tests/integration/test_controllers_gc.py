"""Garbage collection with a real controller-manager: each propagationPolicy (Background, Foreground, Orphan)
through the real kubectl and the API, the pod GC of pods whose node is gone, and a deleted namespace emptied
and finalized."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from conftest import Kubectl
from support.controllers import MERGE, bind, controller_manager_fixture, pods
from support.wait import wait_for

manager = controller_manager_fixture("replicaset,deployment,garbagecollector,podgc,namespace")


def replica_set(name: str, replicas: int = 2) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def get(client: httpx.Client, path: str) -> dict[str, Any] | None:
    resp = client.get(path)
    return resp.json() if resp.status_code == 200 else None


def test_background_deletes_dependents(client: httpx.Client, ns: str, kubectl: Kubectl, manager: None) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/deployments", json=deployment).status_code == 201
    wait_for(lambda: len(pods(client, ns, "app=web")) == 2, what="the deployment's pods")
    kubectl("delete", "deployment", "web", "-n", ns)  # kubectl's default: propagationPolicy=Background
    wait_for(lambda: not client.get(f"/apis/apps/v1/namespaces/{ns}/replicasets").json()["items"],
             what="the ReplicaSet collected")
    wait_for(lambda: not pods(client, ns, "app=web", live=False), what="the pods collected")


def test_foreground_waits_for_dependents(client: httpx.Client, ns: str, manager: None) -> None:
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", json=replica_set("fg")).status_code == 201
    held = wait_for(lambda: (p := pods(client, ns, "app=fg")) and len(p) == 2 and p, what="2 pods")[0]
    name = held["metadata"]["name"]
    # A finalizer of our own keeps one dependent (and so the owner) around until we let go.
    client.patch(f"/api/v1/namespaces/{ns}/pods/{name}", json={"metadata": {"finalizers": ["example.com/hold"]}},
                 headers=MERGE)
    resp = client.request("DELETE", f"/apis/apps/v1/namespaces/{ns}/replicasets/fg",
                          json={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"})
    assert resp.status_code in (200, 202), resp.text
    wait_for(lambda: [p["metadata"]["name"] for p in pods(client, ns, "app=fg", live=False)] == [name],
             what="the other dependent deleted")
    owner = get(client, f"/apis/apps/v1/namespaces/{ns}/replicasets/fg")
    assert owner is not None and "foregroundDeletion" in owner["metadata"]["finalizers"]
    assert owner["metadata"].get("deletionTimestamp")
    client.patch(f"/api/v1/namespaces/{ns}/pods/{name}", json={"metadata": {"finalizers": None}}, headers=MERGE)
    wait_for(lambda: get(client, f"/apis/apps/v1/namespaces/{ns}/replicasets/fg") is None, what="the owner gone")
    assert not pods(client, ns, "app=fg", live=False)


def test_orphan_keeps_dependents(client: httpx.Client, ns: str, kubectl: Kubectl, manager: None) -> None:
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", json=replica_set("orph")).status_code == 201
    wait_for(lambda: len(pods(client, ns, "app=orph")) == 2, what="2 pods")
    kubectl("delete", "replicaset", "orph", "-n", ns, "--cascade=orphan")
    wait_for(lambda: get(client, f"/apis/apps/v1/namespaces/{ns}/replicasets/orph") is None, what="the owner gone")
    kept = pods(client, ns, "app=orph")
    assert len(kept) == 2
    assert all(not p["metadata"].get("ownerReferences") for p in kept)


def test_pods_of_deleted_node_are_collected(client: httpx.Client, ns: str, manager: None) -> None:
    node = f"{ns}-gone"
    assert client.post("/api/v1/nodes", json={"metadata": {"name": node}}).status_code == 201
    pod = client.post(f"/api/v1/namespaces/{ns}/pods", json={
        "metadata": {"name": "stranded"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}).json()
    bind(client, pod, node)
    assert client.delete(f"/api/v1/nodes/{node}").status_code == 200
    wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/stranded").status_code == 404,
             what="the stranded pod force-deleted")


def test_namespace_deletion_empties_and_finalizes(client: httpx.Client, manager: None) -> None:
    name = f"gc-{uuid.uuid4().hex[:10]}"
    assert client.post("/api/v1/namespaces", json={"metadata": {"name": name}}).status_code == 201
    assert client.post(f"/apis/apps/v1/namespaces/{name}/replicasets", json=replica_set("x")).status_code == 201
    assert client.post(f"/api/v1/namespaces/{name}/configmaps",
                       json={"metadata": {"name": "cfg"}, "data": {"a": "b"}}).status_code == 201
    wait_for(lambda: len(pods(client, name, "app=x")) == 2, what="2 pods")
    assert client.delete(f"/api/v1/namespaces/{name}").status_code == 200
    wait_for(lambda: client.get(f"/api/v1/namespaces/{name}").status_code == 404, what="the namespace gone")
    assert not client.get(f"/api/v1/namespaces/{name}/configmaps").json()["items"]
    assert not client.get(f"/api/v1/namespaces/{name}/pods").json()["items"]
