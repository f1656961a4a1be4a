"""`kubelab what-if` against what really happens: a real scheduler process (its own schedulerName and Lease), a
real controller-manager (replicationcontroller, disruption), five hollow nodes (their pods go Running, deletions
are confirmed at once) with zones, a taint and labels, and a PodDisruptionBudget. The what-if of a drain is asked
first (it must change nothing), then the real `kubectl drain` runs, and the replacements must land where the
what-if said (the same node or one it reported as equally scored), the budget's pod must stay, and the pinned
pod must stay Pending with the same FailedScheduling message."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import ROOT, Kubectl
from support.controllers import MERGE, controller_manager_fixture, pods
from support.process import ComponentProcess
from support.scheduler import SchedulerProcess, debug_endpoint
from support.wait import wait_for

pytestmark = pytest.mark.kubectl

manager = controller_manager_fixture("replicationcontroller,disruption")


@pytest.fixture(scope="module")
def cluster(api_url: str, module_ns: str, tmp_path_factory: pytest.TempPathFactory,
            manager: Any) -> Iterator[dict[str, str]]:
    """Five hollow nodes ``<ns>-node00..04`` of this module's pool and a scheduler of its own."""
    ns, logs = module_ns, tmp_path_factory.mktemp("whatif")
    client = httpx.Client(base_url=api_url, timeout=30)
    lease, name = f"ks-{uuid.uuid4().hex[:8]}", f"sched-{ns}"
    prefix = f"{ns}-node0"
    hollow = ComponentProcess("kubelet", api_url, logs / "hollow.log", "--hollow", "--count", "5",
                              "--node-name-prefix", prefix, "--root-dir", str(logs / "hollow"))
    scheduler = SchedulerProcess(api_url, logs / "scheduler.log", f"--leader-elect-resource-name={lease}",
                                 f"--scheduler-name={name}")
    try:
        nodes = [f"{prefix}{i}" for i in range(5)]
        for node in nodes:
            wait_for(lambda node=node: client.get(f"/api/v1/nodes/{node}").status_code == 200, what=node)
        zone = {0: "a", 1: "a", 2: "a", 3: "b", 4: "b"}
        for i, node in enumerate(nodes):
            labels = {"pool": ns, "zone": zone[i], **({"gpu": "true"} if i in (2, 3) else {})}
            spec: dict[str, Any] = {"unschedulable": i != 2}  # everything starts on node02
            if i == 3:
                spec["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
            resp = client.patch(f"/api/v1/nodes/{node}", json={"metadata": {"labels": labels}, "spec": spec},
                                headers=MERGE)
            assert resp.status_code == 200, resp.text
        yield {"ns": ns, "scheduler": name, "endpoint": debug_endpoint(client, lease), "prefix": prefix}
    finally:
        scheduler.stop()
        hollow.stop()
        for i in range(5):
            client.delete(f"/api/v1/nodes/{prefix}{i}")
        client.close()


def rc(client: httpx.Client, ns: str, app: str, replicas: int, scheduler: str, **spec: Any) -> None:
    body = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": app},
            "spec": {"replicas": replicas, "selector": {"app": app},
                     "template": {"metadata": {"labels": {"app": app}},
                                  "spec": {"schedulerName": scheduler, "nodeSelector": {"pool": ns},
                                           "containers": [{"name": "c", "image": "busybox"}], **spec}}}}
    resp = client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=body)
    assert resp.status_code == 201, resp.text


def required(key: str, value: str) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}]}}}


def whatif(api_url: str, endpoint: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubelab", "what-if", *args, "--master", api_url,
                           "--scheduler", endpoint], cwd=ROOT, capture_output=True, text=True, timeout=60)


def running_on(client: httpx.Client, ns: str, app: str) -> list[str]:
    return sorted(p["spec"].get("nodeName", "") for p in pods(client, ns, f"app={app}")
                  if p.get("status", {}).get("phase") == "Running")


def test_whatif_drain_agrees_with_kubectl_drain(api_url: str, client: httpx.Client, cluster: dict[str, str],
                                                 kubectl: Kubectl) -> None:
    assert not cluster.get("drained"), "the module's cluster was drained before this test"
    drain_and_compare(api_url, client, cluster, kubectl)


def drain_and_compare(api_url: str, client: httpx.Client, cluster: dict[str, str], kubectl: Kubectl) -> None:
    """The drain test's body, run once per module cluster: the next test starts from the cluster it leaves (node02
    cordoned, the gpu pod on the tainted node03), wherever xdist runs it."""
    cluster["drained"] = "yes"
    ns, sched, prefix = cluster["ns"], cluster["scheduler"], cluster["prefix"]
    node02 = f"{prefix}2"
    rc(client, ns, "web", 2, sched, affinity=required("zone", "a"))
    rc(client, ns, "gpu", 1, sched, affinity=required("gpu", "true"),
       tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}])
    rc(client, ns, "db", 1, sched)
    rc(client, ns, "pinned", 1, sched, nodeSelector={"pool": ns, "kubernetes.io/hostname": node02})
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}}
    assert client.post(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", json=pdb).status_code == 201
    for app, n in (("web", 2), ("gpu", 1), ("db", 1), ("pinned", 1)):
        wait_for(lambda app=app, n=n: running_on(client, ns, app) == [node02] * n, what=f"{app} Running on node02")
    wait_for(lambda: (client.get(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/db").json()
                      .get("status", {}).get("currentHealthy") == 1), what="the budget's status")
    for i in (0, 1, 3, 4):
        client.patch(f"/api/v1/nodes/{prefix}{i}", json={"spec": {"unschedulable": None}}, headers=MERGE)
    wait_for(lambda: not any(client.get(f"/api/v1/nodes/{prefix}{i}").json()["spec"].get("unschedulable")
                             for i in (0, 1, 3, 4)), what="uncordoned nodes")
    before = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods(client, ns)}

    done = whatif(api_url, cluster["endpoint"], "drain", node02, "-o", "json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods(client, ns)} == before  # nothing changed
    assert not client.get(f"/api/v1/nodes/{node02}").json()["spec"].get("unschedulable")
    by_app: dict[str, list[dict[str, Any]]] = {}
    for entry in answer["pods"]:
        by_app.setdefault(entry["pod"].split("/")[1].rsplit("-", 1)[0], []).append(entry)
    assert [e["eviction"] for e in by_app["db"]] == ["blocked"]
    assert "disruption budget (db)" in by_app["db"][0]["reason"]
    assert [(e["eviction"], e["result"]) for e in by_app["pinned"]] == [("evicted", "Pending")]
    assert [(e["eviction"], e["node"], e["equalNodes"]) for e in by_app["gpu"]] == [("evicted", f"{prefix}3", [])]
    assert sorted(e["node"] for e in by_app["web"]) == [f"{prefix}0", f"{prefix}1"]
    table = whatif(api_url, cluster["endpoint"], "drain", node02)
    assert table.returncode == 0, table.stderr
    assert "stays (blocked)" in table.stdout and "Pending: 0/" in table.stdout, table.stdout

    drained = kubectl("drain", node02, "--ignore-daemonsets", "--grace-period=0", "--timeout=8s", check=False,
                      timeout=60)
    assert drained.returncode != 0 and "disruption budget" in drained.stderr, drained.stderr
    assert running_on(client, ns, "db") == [node02]  # the budget kept it
    for app, entries in by_app.items():
        if app in ("db", "pinned"):
            continue
        allowed = {n for e in entries for n in (e["node"], *e["equalNodes"])}
        placed = wait_for(lambda app=app, entries=entries: (nodes := running_on(client, ns, app))
                          and len(nodes) == len(entries) and node02 not in nodes and nodes,
                          what=f"{app}'s replacements Running")
        assert set(placed) <= allowed, (app, placed, entries)
        assert sorted(placed) == sorted(e["node"] for e in entries) or len(allowed) > len(entries)

    def pending_message() -> str:
        for p in pods(client, ns, "app=pinned"):
            for c in p.get("status", {}).get("conditions") or []:
                if c["type"] == "PodScheduled" and c["status"] == "False":
                    return str(c["message"])
        return ""

    message = wait_for(pending_message, what="the pinned pod's FailedScheduling")
    assert message == by_app["pinned"][0]["message"]


def test_whatif_taint_cordon_apply_and_bad_input(api_url: str, client: httpx.Client, cluster: dict[str, str],
                                                 kubectl: Kubectl, tmp_path: Path) -> None:
    if not cluster.get("drained"):  # alone in its xdist worker: make the state the drain test leaves
        drain_and_compare(api_url, client, cluster, kubectl)
    endpoint, ns, prefix = cluster["endpoint"], cluster["ns"], cluster["prefix"]
    done = whatif(api_url, endpoint, "cordon", f"{prefix}4")
    assert done.returncode == 0 and "No pod would move." in done.stdout, done.stdout + done.stderr
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "new", "namespace": ns},
           "spec": {"schedulerName": cluster["scheduler"], "nodeSelector": {"pool": ns, "gpu": "true"},
                    "containers": [{"name": "c", "image": "busybox"}]}}
    (tmp_path / "pod.yaml").write_text(json.dumps(pod))
    done = whatif(api_url, endpoint, "apply", "-f", str(tmp_path / "pod.yaml"), "-o", "json")
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(done.stdout)["pods"]
    assert entry["result"] == "Pending" and "untolerated taint {dedicated: gpu}" in entry["message"]
    done = whatif(api_url, endpoint, "taint", f"{prefix}3", "dedicated=gpu:NoExecute", "-o", "json")
    assert done.returncode == 0, done.stderr
    gpu = [p for p in json.loads(done.stdout)["pods"] if "/gpu-" in p["pod"]]
    assert gpu and all(p["eviction"] == "evicted" for p in gpu)  # it tolerates NoSchedule only
    bad = whatif(api_url, endpoint, "taint", f"{prefix}3", "nope")
    assert bad.returncode == 2 and "invalid taint spec" in bad.stderr
    resp = httpx.post(f"{endpoint}/debug/whatif", json={"action": "explode"})
    assert resp.status_code == 400 and resp.json()["reason"] == "BadRequest"
