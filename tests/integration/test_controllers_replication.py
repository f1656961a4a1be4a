"""A real controller-manager process (replication controllers and ReplicaSets) against the real apiserver:
scale up, scale down, replace a deleted pod, ownerReferences. No scheduler or kubelet: pods stay Pending."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from conftest import ROOT
from support.wait import wait_for



@pytest.fixture(scope="module")
def controller_manager(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    log_path = tmp_path_factory.mktemp("cm") / "controller-manager.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "controllers", "--master", api_url, "--leader-elect=false",
                                 "--controllers=replicationcontroller,replicaset"],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(15)


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
