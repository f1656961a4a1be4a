"""A real controller-manager process (replication controllers and ReplicaSets) against the real apiserver:
scale up, scale down, replace a deleted pod, ownerReferences. No scheduler or kubelet: pods stay Pending."""

from __future__ import annotations

from typing import Any

import httpx

from conftest import Kubectl
from support.controllers import bind, controller_manager_fixture, set_ready
from support.wait import wait_for

controller_manager = controller_manager_fixture("replicationcontroller,replicaset", name="controller_manager")


def live_pods(client: httpx.Client, ns: str, selector: str) -> list[dict[str, Any]]:
    items = client.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": selector}).json()["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def test_rc_scales_and_replaces(client: httpx.Client, ns: str, controller_manager: None) -> None:
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
          "spec": {"replicas": 3, "selector": {"app": "web"},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    created = client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=rc).json()
    pods = wait_for(lambda: (p := live_pods(client, ns, "app=web")) and len(p) == 3 and p, what="3 pods")
    for pod in pods:
        owner = pod["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == \
            ("ReplicationController", "web", created["metadata"]["uid"], True)
        assert pod["metadata"]["name"].startswith("web-")
    status = wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/replicationcontrollers/web").json()
                      .get("status", {}).get("replicas") == 3, what="status.replicas")
    assert status
    victim = pods[0]["metadata"]["name"]
    client.delete(f"/api/v1/namespaces/{ns}/pods/{victim}")
    wait_for(lambda: len(live_pods(client, ns, "app=web")) == 3 and
             victim not in [p["metadata"]["name"] for p in live_pods(client, ns, "app=web")],
             what="a replacement pod")
    client.patch(f"/api/v1/namespaces/{ns}/replicationcontrollers/web/scale", json={"spec": {"replicas": 1}},
                 headers={"Content-Type": "application/merge-patch+json"})
    wait_for(lambda: len(live_pods(client, ns, "app=web")) == 1, what="scale down to 1")


def test_replicaset_creates_from_template(client: httpx.Client, ns: str, controller_manager: None) -> None:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "rs"}},
                   "template": {"metadata": {"labels": {"app": "rs"}},
                                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", json=rs).status_code == 201
    wait_for(lambda: len(live_pods(client, ns, "app=rs")) == 2, what="2 pods")
    events = wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/events",
                                         params={"fieldSelector": "reason=SuccessfulCreate"}).json()["items"],
                      what="SuccessfulCreate events")
    assert events[0]["involvedObject"]["name"] == "rs"


def rc_body(name: str, replicas: int, **template_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"app": name},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}], **template_spec}}}}


def scale(client: httpx.Client, ns: str, name: str, replicas: int) -> None:
    resp = client.patch(f"/api/v1/namespaces/{ns}/replicationcontrollers/{name}/scale",
                        json={"spec": {"replicas": replicas}}, headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 200, resp.text


def test_scale_down_order(client: httpx.Client, ns: str, controller_manager: None) -> None:
    """Unscheduled pods go first, then pending ones, then not-ready ones; the running, ready pod stays."""
    node = f"{ns}-n"
    assert client.post("/api/v1/nodes", json={"metadata": {"name": node}}).status_code == 201
    client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=rc_body("ord", 4))
    four = wait_for(lambda: (p := live_pods(client, ns, "app=ord")) and len(p) == 4 and p, what="4 pods")
    ready, running, bound_only = four[0], four[1], four[2]
    for pod in (ready, running, bound_only):
        bind(client, pod, node)
    set_ready(client, ready, True)
    set_ready(client, running, False)
    scale(client, ns, "ord", 3)  # the unscheduled pod goes
    wait_for(lambda: {p["metadata"]["name"] for p in live_pods(client, ns, "app=ord")} ==
             {ready["metadata"]["name"], running["metadata"]["name"], bound_only["metadata"]["name"]},
             what="the unscheduled pod deleted first")
    scale(client, ns, "ord", 2)  # then the Pending one
    wait_for(lambda: {p["metadata"]["name"] for p in live_pods(client, ns, "app=ord")} ==
             {ready["metadata"]["name"], running["metadata"]["name"]}, what="the pending pod deleted next")
    scale(client, ns, "ord", 1)  # then the running but not ready one
    wait_for(lambda: [p["metadata"]["name"] for p in live_pods(client, ns, "app=ord")] == [ready["metadata"]["name"]],
             what="the ready pod kept")


def test_adopts_orphans_and_releases_unmatched(client: httpx.Client, ns: str, controller_manager: None) -> None:
    orphan = {"metadata": {"name": "stray", "labels": {"app": "adopt"}},
              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=orphan).status_code == 201
    rc = client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=rc_body("adopt", 2)).json()
    wait_for(lambda: len(live_pods(client, ns, "app=adopt")) == 2, what="2 pods")
    stray = client.get(f"/api/v1/namespaces/{ns}/pods/stray").json()
    # adopted (not duplicated by a new pod)
    assert [r["uid"] for r in stray["metadata"]["ownerReferences"]] == [rc["metadata"]["uid"]]
    client.patch(f"/api/v1/namespaces/{ns}/pods/stray", json={"metadata": {"labels": {"app": "other"}}},
                 headers={"Content-Type": "application/merge-patch+json"})
    wait_for(lambda: not client.get(f"/api/v1/namespaces/{ns}/pods/stray").json()["metadata"].get("ownerReferences"),
             what="the relabelled pod released")
    wait_for(lambda: len(live_pods(client, ns, "app=adopt")) == 2, what="a replacement for the released pod")


def test_no_double_creation_under_event_bursts(client: httpx.Client, ns: str, controller_manager: None) -> None:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "burst"},
          "spec": {"replicas": 12, "selector": {"matchLabels": {"app": "burst"}},
                   "template": {"metadata": {"labels": {"app": "burst"}},
                                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", json=rs).status_code == 201
    for i in range(15):  # each annotation change is one more watch event and sync of the ReplicaSet
        client.patch(f"/apis/apps/v1/namespaces/{ns}/replicasets/burst",
                     json={"metadata": {"annotations": {"n": str(i)}}},
                     headers={"Content-Type": "application/merge-patch+json"})
    wait_for(lambda: client.get(f"/apis/apps/v1/namespaces/{ns}/replicasets/burst").json()["status"].get(
        "replicas") == 12, what="status.replicas=12")
    created = client.get(f"/api/v1/namespaces/{ns}/events", params={"fieldSelector": "reason=SuccessfulCreate"})
    assert sum(e.get("count", 1) for e in created.json()["items"]) == 12
    assert len(client.get(f"/api/v1/namespaces/{ns}/pods").json()["items"]) == 12


def test_rc_events_are_correlated_as_kubectl_shows_them(client: httpx.Client, ns: str, kubectl: Kubectl,
                                                        controller_manager: None) -> None:
    """client-go's EventCorrelator in the controller-manager: 40 pods created, 9 events name their pod, the 10th
    onwards are one "(combined from similar events)" event, and the spam filter (burst 25 per RC) drops the
    writes after the 25th, so ``kubectl describe rc`` shows 10 SuccessfulCreate events counting 25 pods."""
    client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=rc_body("many", 40))
    wait_for(lambda: len(live_pods(client, ns, "app=many")) == 40, what="40 pods")

    def created_events() -> list[dict[str, Any]]:
        items = client.get(f"/api/v1/namespaces/{ns}/events",
                           params={"fieldSelector": "reason=SuccessfulCreate,involvedObject.name=many"}).json()
        return list(items["items"])

    combined = wait_for(lambda: [e for e in created_events() if e["message"].startswith("(combined")
                                 and e["count"] == 16], what="the combined event at count 16")
    assert combined[0]["message"].startswith("(combined from similar events): Created pod: many-")
    events = created_events()
    assert len(events) == 10 and sum(e["count"] for e in events) == 25
    described = kubectl("describe", "rc", "many", "-n", ns).stdout
    rows = [line for line in described.splitlines() if "SuccessfulCreate" in line]
    assert len(rows) == 10 and "(x16 over" in described
    assert "(combined from similar events): Created pod: many-" in described
    listed = kubectl("get", "events", "-n", ns, "--field-selector", "involvedObject.name=many").stdout
    assert listed.count("SuccessfulCreate") == 10 and "(combined from similar events)" in listed
    assert len(live_pods(client, ns, "app=many")) == 40


def test_status_counts_and_failed_pod_replaced(client: httpx.Client, ns: str, controller_manager: None) -> None:
    body = rc_body("st", 2)
    body["spec"]["minReadySeconds"] = 2
    client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=body)
    two = wait_for(lambda: (p := live_pods(client, ns, "app=st")) and len(p) == 2 and p, what="2 pods")
    for pod in two:
        set_ready(client, pod)

    def status() -> dict[str, Any]:
        return dict(client.get(f"/api/v1/namespaces/{ns}/replicationcontrollers/st").json().get("status", {}))

    wait_for(lambda: status().get("readyReplicas") == 2, what="readyReplicas=2")
    assert status().get("availableReplicas", 0) == 0  # ready for less than minReadySeconds
    wait_for(lambda: status().get("availableReplicas") == 2, what="availableReplicas=2 after minReadySeconds")
    assert status()["fullyLabeledReplicas"] == 2 and status()["observedGeneration"] == 1
    set_ready(client, two[0], False, phase="Failed")
    wait_for(lambda: len(live_pods(client, ns, "app=st")) == 3 and
             sum(p.get("status", {}).get("phase") != "Failed" for p in live_pods(client, ns, "app=st")) == 2,
             what="the failed pod replaced")
