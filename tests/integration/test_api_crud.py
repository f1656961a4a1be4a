"""CRUD against a real apiserver over a real etcd: what a user sees with curl or httpx."""

from __future__ import annotations

import concurrent.futures

import httpx
import pytest

from support.builders import make_node, make_pod, make_rc


def pods_path(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/pods" + (f"/{name}" if name else "")


def test_create_get_list_delete_pod(client: httpx.Client, ns: str) -> None:
    resp = client.post(pods_path(ns), json=make_pod("web").build())
    assert resp.status_code == 201, resp.text
    created = resp.json()
    meta = created["metadata"]
    assert meta["name"] == "web" and meta["namespace"] == ns
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    assert created["kind"] == "Pod" and created["apiVersion"] == "v1"
    assert created["status"]["phase"] == "Pending"

    got = client.get(pods_path(ns, "web")).json()
    assert got["metadata"]["uid"] == meta["uid"]
    assert got["metadata"]["resourceVersion"] == meta["resourceVersion"]

    listed = client.get(pods_path(ns)).json()
    assert listed["kind"] == "PodList"
    assert [p["metadata"]["name"] for p in listed["items"]] == ["web"]
    assert int(listed["metadata"]["resourceVersion"]) >= int(meta["resourceVersion"])

    # Not bound to a node: deleted at once, as Kubernetes does for unscheduled pods.
    resp = client.delete(pods_path(ns, "web"))
    assert resp.status_code == 200
    assert client.get(pods_path(ns, "web")).status_code == 404


def test_all_namespaces_list_includes_every_namespace(client: httpx.Client, ns: str) -> None:
    other = client.post("/api/v1/namespaces", json={"metadata": {"generateName": "other-"}}).json()
    other_ns = other["metadata"]["name"]
    client.post(pods_path(ns), json=make_pod("a").build())
    client.post(pods_path(other_ns), json=make_pod("b").build())
    names = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in client.get("/api/v1/pods").json()["items"]}
    assert {(ns, "a"), (other_ns, "b")} <= names


def test_generate_name(client: httpx.Client, ns: str) -> None:
    pod = make_pod("").build()
    pod["metadata"] = {"generateName": "web-"}
    resp = client.post(pods_path(ns), json=pod)
    assert resp.status_code == 201, resp.text
    name = resp.json()["metadata"]["name"]
    assert name.startswith("web-") and len(name) == len("web-") + 5


def test_update_keeps_status_and_bumps_resource_version(client: httpx.Client, ns: str) -> None:
    rc = client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=make_rc("web", 2)).json()
    assert rc["metadata"]["generation"] == 1
    rc["spec"]["replicas"] = 3
    rc["status"] = {"replicas": 99}
    resp = client.put(f"/api/v1/namespaces/{ns}/replicationcontrollers/web", json=rc)
    assert resp.status_code == 200, resp.text
    updated = resp.json()
    assert updated["spec"]["replicas"] == 3
    assert updated["metadata"]["generation"] == 2
    assert updated.get("status", {}).get("replicas") != 99  # status changes only through /status
    assert int(updated["metadata"]["resourceVersion"]) > int(rc["metadata"]["resourceVersion"])

    # An update that changes nothing is not written: same resourceVersion.
    again = client.put(f"/api/v1/namespaces/{ns}/replicationcontrollers/web", json=updated).json()
    assert again["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]

    # /status changes status only.
    updated["status"] = {"replicas": 3}
    updated["spec"]["replicas"] = 7
    resp = client.put(f"/api/v1/namespaces/{ns}/replicationcontrollers/web/status", json=updated)
    assert resp.status_code == 200, resp.text
    assert resp.json()["status"]["replicas"] == 3
    assert resp.json()["spec"]["replicas"] == 3


def test_status_update_takes_annotations_but_not_spec_or_apps_labels(client: httpx.Client, ns: str) -> None:
    """As kube-apiserver's status strategies: a ``/status`` PUT keeps the stored spec, and for apps/v1
    workloads the stored labels, but annotations come from the body."""
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs", "labels": {"tier": "web"}},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "rs"}},
                   "template": {"metadata": {"labels": {"app": "rs"}},
                                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    rs = client.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", json=rs).json()
    rs["metadata"]["annotations"] = {"note": "from status"}
    rs["metadata"]["labels"] = {"tier": "changed"}
    rs["spec"]["replicas"] = 5
    rs["status"] = {"replicas": 1}
    resp = client.put(f"/apis/apps/v1/namespaces/{ns}/replicasets/rs/status", json=rs)
    assert resp.status_code == 200, resp.text
    stored = client.get(f"/apis/apps/v1/namespaces/{ns}/replicasets/rs").json()
    assert stored["metadata"]["annotations"] == {"note": "from status"}
    assert stored["metadata"]["labels"] == {"tier": "web"}
    assert stored["spec"]["replicas"] == 1 and stored["status"]["replicas"] == 1


def test_uid_in_body_is_a_precondition_and_immutable(client: httpx.Client, ns: str) -> None:
    pod = client.post(pods_path(ns), json=make_pod("u").build()).json()
    other = "00000000-0000-0000-0000-000000000000"
    resp = client.put(pods_path(ns, "u"), json=dict(pod, metadata=dict(pod["metadata"], uid=other)))
    assert resp.status_code == 409 and resp.json()["reason"] == "Conflict"
    assert f"Precondition failed: UID in precondition: {other}" in resp.json()["message"]
    resp = client.patch(pods_path(ns, "u"), json={"metadata": {"uid": other}},
                        headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 422, resp.text
    assert resp.json()["details"]["causes"][0]["field"] == "metadata.uid"
    assert client.get(pods_path(ns, "u")).json()["metadata"]["uid"] == pod["metadata"]["uid"]


def test_stale_resource_version_conflicts(client: httpx.Client, ns: str) -> None:
    pod = client.post(pods_path(ns), json=make_pod("a").build()).json()
    first = dict(pod, metadata=dict(pod["metadata"], labels={"v": "1"}))
    assert client.put(pods_path(ns, "a"), json=first).status_code == 200
    stale = dict(pod, metadata=dict(pod["metadata"], labels={"v": "2"}))
    resp = client.put(pods_path(ns, "a"), json=stale)
    assert resp.status_code == 409
    body = resp.json()
    assert body["reason"] == "Conflict"
    assert "the object has been modified" in body["message"]
    assert client.get(pods_path(ns, "a")).json()["metadata"]["labels"] == {"v": "1"}


def test_concurrent_read_modify_write_loses_no_update(api_url: str, client: httpx.Client, ns: str) -> None:
    """20 writers each add 5 annotations with GET + PUT-on-resourceVersion retry loops: all 100 survive."""
    client.post(pods_path(ns), json=make_pod("counter").build())

    def writer(i: int) -> int:
        conflicts = 0
        with httpx.Client(base_url=api_url, timeout=30) as c:
            for j in range(5):
                while True:
                    pod = c.get(pods_path(ns, "counter")).json()
                    pod["metadata"].setdefault("annotations", {})[f"w{i}-{j}"] = "x"
                    resp = c.put(pods_path(ns, "counter"), json=pod)
                    if resp.status_code == 200:
                        break
                    assert resp.status_code == 409, resp.text
                    conflicts += 1
        return conflicts

    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        conflicts = sum(pool.map(writer, range(20)))
    annotations = client.get(pods_path(ns, "counter")).json()["metadata"]["annotations"]
    assert len(annotations) == 100
    assert conflicts > 0  # the writers did race; optimistic concurrency resolved it


def test_cluster_scoped_node(client: httpx.Client) -> None:
    resp = client.post("/api/v1/nodes", json=make_node("crud-node-1", {"zone": "a"}))
    assert resp.status_code == 201, resp.text
    node = resp.json()
    assert "namespace" not in node["metadata"]
    assert client.get("/api/v1/nodes/crud-node-1").json()["metadata"]["labels"]["zone"] == "a"
    assert client.delete("/api/v1/nodes/crud-node-1").status_code == 200
    assert client.get("/api/v1/nodes/crud-node-1").status_code == 404


def test_graceful_deletion_of_a_bound_pod(client: httpx.Client, ns: str) -> None:
    client.post(pods_path(ns), json=make_pod("bound").node("node-x").build())
    resp = client.delete(pods_path(ns, "bound"))
    assert resp.status_code == 200
    pod = client.get(pods_path(ns, "bound")).json()
    assert pod["metadata"]["deletionTimestamp"]
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30
    # The kubelet confirms with a zero grace period: then it is gone.
    assert client.delete(pods_path(ns, "bound"), params={"gracePeriodSeconds": 0}).status_code == 200
    assert client.get(pods_path(ns, "bound")).status_code == 404


def test_finalizers_block_removal_until_cleared(client: httpx.Client, ns: str) -> None:
    pod = make_pod("fin").build()
    pod["metadata"]["finalizers"] = ["example.com/hold"]
    client.post(pods_path(ns), json=pod)
    assert client.delete(pods_path(ns, "fin")).status_code == 200
    held = client.get(pods_path(ns, "fin")).json()
    assert held["metadata"]["deletionTimestamp"]
    resp = client.patch(pods_path(ns, "fin"), json={"metadata": {"finalizers": None}},
                        headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 200, resp.text
    assert client.get(pods_path(ns, "fin")).status_code == 404


@pytest.mark.parametrize("policy,finalizer", [("Orphan", "orphan"), ("Foreground", "foregroundDeletion")])
def test_propagation_policy_finalizers(client: httpx.Client, ns: str, policy: str, finalizer: str) -> None:
    client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=make_rc("owner"))
    resp = client.request("DELETE", f"/api/v1/namespaces/{ns}/replicationcontrollers/owner",
                          json={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy})
    assert resp.status_code == 200
    rc = client.get(f"/api/v1/namespaces/{ns}/replicationcontrollers/owner").json()
    assert finalizer in rc["metadata"]["finalizers"]
    assert rc["metadata"]["deletionTimestamp"]


def test_delete_preconditions(client: httpx.Client, ns: str) -> None:
    client.post(pods_path(ns), json=make_pod("p").build())
    resp = client.request("DELETE", pods_path(ns, "p"), json={"preconditions": {"uid": "not-the-uid"}})
    assert resp.status_code == 409
    assert "Precondition failed" in resp.json()["message"]
    assert client.get(pods_path(ns, "p")).status_code == 200


def test_delete_collection_with_selector(client: httpx.Client, ns: str) -> None:
    for name, tier in [("a", "web"), ("b", "web"), ("c", "db")]:
        client.post(pods_path(ns), json=make_pod(name).label(tier=tier).build())
    resp = client.delete(pods_path(ns), params={"labelSelector": "tier=web"})
    assert resp.status_code == 200
    assert sorted(p["metadata"]["name"] for p in resp.json()["items"]) == ["a", "b"]
    left = [p["metadata"]["name"] for p in client.get(pods_path(ns)).json()["items"]]
    assert left == ["c"]


def test_binding_assigns_node_and_condition(client: httpx.Client, ns: str) -> None:
    client.post(pods_path(ns), json=make_pod("b").build())
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "b"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node02"}}
    resp = client.post(pods_path(ns, "b") + "/binding", json=binding)
    assert resp.status_code == 201, resp.text
    pod = client.get(pods_path(ns, "b")).json()
    assert pod["spec"]["nodeName"] == "node02"
    assert {"type": "PodScheduled", "status": "True"}.items() <= pod["status"]["conditions"][0].items()
    again = client.post(pods_path(ns, "b") + "/binding", json=binding)
    assert again.status_code == 409
    assert "already assigned" in again.json()["message"]


def test_scale_subresource(client: httpx.Client, ns: str) -> None:
    client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=make_rc("web", 1))
    scale = client.get(f"/api/v1/namespaces/{ns}/replicationcontrollers/web/scale").json()
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
    resp = client.patch(f"/api/v1/namespaces/{ns}/replicationcontrollers/web/scale",
                        json={"spec": {"replicas": 5}}, headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["spec"]["replicas"] == 5
    assert client.get(f"/api/v1/namespaces/{ns}/replicationcontrollers/web").json()["spec"]["replicas"] == 5
    resp = client.patch(f"/api/v1/namespaces/{ns}/replicationcontrollers/web/scale",
                        json={"spec": {"replicas": -1}}, headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 422 and resp.json()["details"]["causes"][0]["field"] == "spec.replicas"
    assert client.get(f"/api/v1/namespaces/{ns}/replicationcontrollers/web").json()["spec"]["replicas"] == 5


def test_apps_group_replicaset(client: httpx.Client, ns: str) -> None:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs1"},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}},
                   "template": {"metadata": {"labels": {"app": "x"}},
                                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    resp = client.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", json=rs)
    assert resp.status_code == 201, resp.text
    assert resp.json()["apiVersion"] == "apps/v1"
    assert client.get(f"/apis/apps/v1/namespaces/{ns}/replicasets/rs1").json()["spec"]["replicas"] == 2


def test_default_namespaces_exist(client: httpx.Client) -> None:
    names = {n["metadata"]["name"] for n in client.get("/api/v1/namespaces").json()["items"]}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names


def test_default_tolerations_added_to_pods(client: httpx.Client, ns: str) -> None:
    pod = client.post(pods_path(ns), json=make_pod("tol").build()).json()
    keys = {(t["key"], t.get("tolerationSeconds")) for t in pod["spec"]["tolerations"]}
    assert ("node.kubernetes.io/not-ready", 300) in keys
    assert ("node.kubernetes.io/unreachable", 300) in keys


def test_namespace_deletion_waits_for_finalize(client: httpx.Client) -> None:
    """DELETE puts a namespace in Terminating (no new content allowed); it goes once spec.finalizers is emptied
    through /finalize — the namespace controller's last step."""
    name = client.post("/api/v1/namespaces", json={"metadata": {"generateName": "del-"}}).json()["metadata"]["name"]
    assert client.delete(f"/api/v1/namespaces/{name}").status_code == 200
    ns = client.get(f"/api/v1/namespaces/{name}").json()
    assert ns["status"]["phase"] == "Terminating" and ns["metadata"]["deletionTimestamp"]
    assert ns["spec"]["finalizers"] == ["kubernetes"]
    resp = client.post(f"/api/v1/namespaces/{name}/pods", json=make_pod("late").build())
    assert resp.status_code == 403 and resp.json()["reason"] == "Forbidden"
    assert "because it is being terminated" in resp.json()["message"]
    assert resp.json()["details"]["causes"] == [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                                 "message": f"namespace {name} is being terminated"}]
    ns["spec"]["finalizers"] = []
    resp = client.put(f"/api/v1/namespaces/{name}/finalize", json=ns)
    assert resp.status_code == 200, resp.text
    assert client.get(f"/api/v1/namespaces/{name}").status_code == 404
