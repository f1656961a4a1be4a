"""Exact per-hop timing on a real cluster: an apiserver writing the audit log, the controller-manager (replication
controller), the scheduler and a kubelet, each its own process over its own etcd.

An RC's pod is watched by a client from the RC's create to Running (once per module, ``flow``: every test that reads
it gets it, wherever xdist runs it); ``kubelab trace pod`` then gives every hop of the flow its own millisecond
latency — the requests from the audit log, their storing in etcd (3, 7, 10, 13) and the watch deliveries (1, 4, 5,
8, 11) from the apiserver's record of them, the kubelet's work from the events' eventTime — and their sum is the
span from the apiserver's receiving the RC (2) to the Running pod's store (13), which lies within what the client
measured (from before its POST to its watch's event; the rest is the client's own two legs, as long as the machine's
load makes them). The audit log itself: audit.k8s.io/v1 Events at the policy's levels (a None
rule omits, RequestResponse carries both bodies), watches logged at ResponseStarted and ResponseComplete,
impersonation and the authorization decision, rotation with ``--audit-log-maxsize``/``--audit-log-maxbackup``, and a
full disk (``/dev/full``) that fails no request. The scheduler's events are events.k8s.io/v1 with eventTime and
reportingController, as kubectl reads them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from apimachinery.meta import parse_time
from conftest import KUBECTL, ROOT, Kubectl, api_only
from support.controllers import ControllerManager
from support.kubelet import running_node
from support.scheduler import SchedulerProcess
from support.wait import wait_for

NODE = "audit-node01"
POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  resources: [{group: "", resources: ["configmaps"]}]
- level: RequestResponse
  resources: [{group: "", resources: ["secrets"]}]
- level: Request
  resources: [{group: "", resources: ["services"]}]
- level: None
  resources: [{group: coordination.k8s.io, resources: ["leases"]}, {group: "", resources: ["events", "nodes/status"]},
              {group: events.k8s.io, resources: ["events"]}]
- level: None
  verbs: ["get", "list"]
- level: None
  nonResourceURLs: ["*"]
- level: Metadata
  omitManagedFields: true
"""
RC = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
      "spec": {"replicas": 1, "selector": {"app": "web"}, "template": {
          "metadata": {"labels": {"app": "web"}},
          "spec": {"terminationGracePeriodSeconds": 1,
                   "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]}}}}


class Cluster:
    def __init__(self, api_url: str, log: Path) -> None:
        self.api_url, self.log = api_url, log

    def events(self) -> list[dict[str, Any]]:
        """Every audit event written so far, the rotated files first (the backend writes off the request path:
        wait until the log stops growing)."""
        def files() -> list[Path]:
            return [*sorted(self.log.parent.glob("audit-*.log")), self.log]

        def size() -> int:
            return sum(p.stat().st_size for p in files() if p.exists())

        before = -1
        while (now := size()) != before:
            before = now
            time.sleep(0.2)
        return [json.loads(line) for p in files() if p.exists() for line in p.read_text().splitlines()]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """An API-only ``kubelab.Cluster`` of the module's own with this policy and a small, rotated audit log, and
    the components of the flow beside it: the replication controller, the scheduler and one node."""
    root = tmp_path_factory.mktemp("audit")
    (root / "policy.yaml").write_text(POLICY)
    log = root / "logs" / "audit.log"
    started: list[Any] = []
    with api_only("--audit-policy-file", str(root / "policy.yaml"), "--audit-log-path", str(log),
                  "--audit-log-maxsize", "1", "--audit-log-maxbackup", "2") as api:
        url = api.api_url
        try:
            started.append(ControllerManager(url, root / "cm.log", "--leader-elect=false",
                                             "--controllers=replicationcontroller-controller"))
            started.append(SchedulerProcess(url, root / "scheduler.log", "--leader-elect=false"))
            with running_node(url, NODE, root), httpx.Client(base_url=url) as client:
                wait_for(lambda: client.get(f"/api/v1/nodes/{NODE}").status_code == 200, what="the node")
                yield Cluster(url, log)
        finally:
            for component in started:
                component.stop()


@dataclass(frozen=True)
class Flow:
    pod: dict[str, Any]  # the version the client's watch saw Running
    start: float  # the client's clock (time.time(), the host's as the apiserver's) just before its POST of the RC
    end: float  # ... and when its watch showed the pod Running


@pytest.fixture(scope="module")
def flow(cluster: Cluster) -> Flow:
    """An RC created in namespace ``flow`` and its pod watched to Running by a client."""
    with httpx.Client(base_url=cluster.api_url, timeout=30) as client:
        assert client.post("/api/v1/namespaces", json={"metadata": {"name": "flow"}}).status_code == 201
        rv = client.get("/api/v1/namespaces/flow/pods").json()["metadata"]["resourceVersion"]
        with client.stream("GET", "/api/v1/namespaces/flow/pods", params={
                "watch": "true", "resourceVersion": rv, "timeoutSeconds": "60"}) as watch:
            start = time.time()
            assert client.post("/api/v1/namespaces/flow/replicationcontrollers", json=RC).status_code == 201
            for line in watch.iter_lines():
                pod = json.loads(line)["object"]
                if (pod.get("status") or {}).get("phase") == "Running":
                    return Flow(pod, start, time.time())
    raise AssertionError("the watch ended before the pod was Running")


def trace(api_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubelab", "trace", "pod", *args, "--master", api_url], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_trace_gives_every_hop_a_millisecond_latency_that_adds_up(cluster: Cluster, flow: Flow) -> None:
    pod = flow.pod
    name = pod["metadata"]["name"]
    done = trace(cluster.api_url, name, "-n", "flow", "-o", "json", "--audit-log", str(cluster.log))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    steps = {s["number"]: s for s in doc["steps"]}
    assert doc["audit_log"] == str(cluster.log) and doc["deliveries"]
    hops = [s for s in doc["steps"] if s["number"] not in ("1", "12") and s["applicable"]]  # 12: the sub-steps' head
    for step in [steps["1"], *hops]:  # every step has its own time to the µs and a latency from exact times
        assert step["precision"] == "us" and step["latency_precise"] and not step["included_in"], step
    for number in ("4", "5", "8", "11"):  # the watch deliveries, at the revisions the writes stored
        assert steps[number]["time_source"] == "watch delivery", steps[number]
    assert steps["4"]["revision"] == steps["5"]["revision"] == steps["3"]["revision"]
    assert steps["8"]["revision"] == steps["7"]["revision"] and steps["11"]["revision"] == steps["10"]["revision"]
    assert "to the watch cache" in steps["4"]["evidence"] and "(kube-scheduler)" in steps["8"]["evidence"]
    assert "(kube-controller-manager" in steps["5"]["evidence"] and "(kubelet" in steps["11"]["evidence"]
    assert steps["1"]["time_source"] == "watch stream started" and 0 <= steps["1"]["latency"] < 5
    assert steps["2"]["time_source"] == "audit RequestReceived" and steps["2"]["latency"] == 0
    for number in ("3", "7", "10", "13"):  # stored: when etcd's transaction returned that revision ...
        stored = steps[number]
        assert "audit: " in stored["evidence"] and "etcd's transaction returned" in stored["evidence"], stored
        assert stored["time_source"] in ("etcd txn", "first delivery (bound)"), stored
        if stored["time_source"] != "etcd txn":  # ... or, when the writer resumed after it, the first delivery
            assert "store time bounded by the first delivery" in stored["evidence"], stored
    assert all(s["latency"] >= 0 for s in hops), [(s["number"], s["latency"]) for s in hops]
    assert steps["9"]["audit_id"] and steps["9"]["time_source"] == "audit RequestReceived"
    assert steps["13"]["revision"] == int(pod["metadata"]["resourceVersion"])  # the version the watch saw Running
    total = sum(s["latency"] for s in hops)
    path = doc["critical_path"]
    assert path["from"] == "2" and path["to"] == "13" and path["exact"]
    assert abs(total * 1000 - path["total_ms"]) < 0.01
    received, stored = (parse_time(steps[n]["time"]).timestamp() for n in ("2", "13"))
    assert abs(total - (stored - received)) < 1e-5, (total, received, stored)  # the hops add up, end to end
    assert flow.start <= received <= stored <= flow.end, (flow, received, stored)  # within the client's span

    table = trace(cluster.api_url, name, "-n", "flow", "--audit-log", str(cluster.log))
    assert table.returncode == 0, table.stderr
    assert f"audit log: {cluster.log}" in table.stdout and "critical path: step 2 -> step 13: " in table.stdout
    assert "event SuccessfulCreate" in table.stdout and not re.search(r"\(in \d", table.stdout)
    assert "watch deliveries: the apiserver's record" in table.stdout
    latencies = re.findall(r"^(\d+[a-z]?)\s.*\s([+-]\d+\.\d+m?s)$", table.stdout, re.MULTILINE)
    assert {n for n, _ in latencies} >= {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "13"}, table.stdout
    assert not [n for n, latency in latencies if latency.startswith("-")], table.stdout


def test_audit_events_follow_the_policy_levels(cluster: Cluster) -> None:
    headers = {"User-Agent": "audit-test/1.0"}
    with httpx.Client(base_url=cluster.api_url, timeout=30, headers=headers) as client:
        ns = "levels"
        assert client.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
        secret = client.post(f"/api/v1/namespaces/{ns}/secrets", json={"metadata": {"name": "s"},
                                                                       "stringData": {"k": "v"}})
        assert secret.status_code == 201
        assert client.post(f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": "c"}}).status_code == 201
        service = {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}
        assert client.post(f"/api/v1/namespaces/{ns}/services", json=service).status_code == 201
        created = client.post(f"/api/v1/namespaces/{ns}/serviceaccounts", json={"metadata": {"name": "sa"}})
        watch = client.get(f"/api/v1/namespaces/{ns}/pods", params={"watch": "1", "timeoutSeconds": "1"})
        assert watch.status_code == 200
        denied = client.get(f"/api/v1/namespaces/{ns}/pods?watch=1",
                            headers={"Impersonate-User": "alice", "Audit-Id": "my-own-audit-id"})
        assert denied.status_code == 403 and denied.headers["Audit-Id"] == "my-own-audit-id"
    events = [e for e in cluster.events() if (e.get("objectRef") or {}).get("namespace") == ns]
    assert all(e["apiVersion"] == "audit.k8s.io/v1" and e["kind"] == "Event" for e in events)
    by_resource: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        by_resource.setdefault(e["objectRef"]["resource"], []).append(e)
    assert "configmaps" not in by_resource  # level None
    secrets = by_resource["secrets"]
    assert [e["stage"] for e in secrets] == ["RequestReceived", "ResponseComplete"]
    assert len({e["auditID"] for e in secrets}) == 1 and secret.headers["Audit-Id"] == secrets[0]["auditID"]
    done = secrets[1]
    assert done["level"] == "RequestResponse" and done["requestObject"]["stringData"] == {"k": "v"}
    assert done["responseObject"]["metadata"]["uid"] == secret.json()["metadata"]["uid"]
    assert done["responseStatus"] == {"metadata": {}, "code": 201}
    assert done["verb"] == "create" and done["user"]["username"] == "system:unsecured"
    assert done["userAgent"] == "audit-test/1.0" and done["sourceIPs"] == ["127.0.0.1"]
    assert done["requestURI"] == f"/api/v1/namespaces/{ns}/secrets"
    assert done["annotations"]["authorization.k8s.io/decision"] == "allow"
    assert len(done["stageTimestamp"]) == len("2026-12-06T03:04:05.123456Z")
    assert done["requestReceivedTimestamp"] <= done["stageTimestamp"]
    service_done = by_resource["services"][-1]
    assert service_done["level"] == "Request"
    assert "requestObject" in service_done and "responseObject" not in service_done
    account = by_resource["serviceaccounts"][-1]
    assert account["level"] == "Metadata" and "requestObject" not in account
    assert account["objectRef"] == {"resource": "serviceaccounts", "namespace": ns, "name": "sa", "apiVersion": "v1",
                                    "uid": created.json()["metadata"]["uid"],
                                    "resourceVersion": created.json()["metadata"]["resourceVersion"]}
    watches = [e for e in by_resource["pods"] if e["verb"] == "watch"]
    mine = [e for e in watches if "impersonatedUser" not in e]
    assert [e["stage"] for e in mine] == ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    refused = [e for e in watches if e["auditID"] == "my-own-audit-id"]
    assert refused[-1]["impersonatedUser"] == {"username": "alice", "groups": ["system:authenticated"]}
    assert refused[-1]["user"]["username"] == "system:unsecured"
    assert refused[-1]["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert refused[-1]["responseStatus"]["code"] == 403 and refused[-1]["responseStatus"]["reason"] == "Forbidden"


def test_the_audit_log_rotates_at_maxsize_and_keeps_maxbackup(cluster: Cluster) -> None:
    big = "x" * 200_000
    with httpx.Client(base_url=cluster.api_url, timeout=30) as client:
        assert client.post("/api/v1/namespaces", json={"metadata": {"name": "rotate"}}).status_code == 201
        for i in range(14):  # RequestResponse: each create logs its body twice, ~0.4 MB per request
            resp = client.post("/api/v1/namespaces/rotate/secrets",
                               json={"metadata": {"name": f"big{i}"}, "stringData": {"k": big}})
            assert resp.status_code == 201
    cluster.events()  # written out
    backups = sorted(cluster.log.parent.glob("audit-*.log"))
    assert len(backups) == 2  # --audit-log-maxbackup 2; 14 * 0.4 MB made more than that
    for path in [*backups, cluster.log]:
        assert path.stat().st_size <= 1024 * 1024
        for line in path.read_text().splitlines():
            assert json.loads(line)["apiVersion"] == "audit.k8s.io/v1"  # no line was cut by the rotation


def test_scheduler_events_are_events_k8s_io_with_event_time(cluster: Cluster, flow: Flow, tmp_path: Path) -> None:
    kubectl = Kubectl(KUBECTL, cluster.api_url, tmp_path)
    out = kubectl("get", "events.v1.events.k8s.io", "-n", "flow", "--field-selector", "reason=Scheduled",
                  "-o", "yaml").stdout
    event = yaml.safe_load(out)["items"][0]
    assert event["apiVersion"] == "events.k8s.io/v1"
    assert event["reportingController"] == "default-scheduler" and event["action"] == "Binding"
    assert event["reportingInstance"].startswith("default-scheduler-")
    assert len(event["eventTime"]) == len("2026-12-06T03:04:05.123456Z")
    assert event["note"].startswith("Successfully assigned flow/web-")
    described = kubectl("describe", "pod", "-n", "flow", "-l", "app=web").stdout
    assert "Scheduled" in described and "default-scheduler" in described


def test_a_full_disk_fails_no_request(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(POLICY)
    with api_only("--audit-policy-file", str(tmp_path / "policy.yaml"), "--audit-log-path", "/dev/full") as api:
        with httpx.Client(base_url=api.api_url, timeout=30) as client:
            for _i in range(5):
                resp = client.post("/api/v1/namespaces", json={"metadata": {"name": f"full-{uuid.uuid4().hex[:8]}"}})
                assert resp.status_code == 201, resp.text
                client.delete(f"/api/v1/namespaces/{resp.json()['metadata']['name']}")
        wait_for(lambda: "not written" in api.logs("apiserver"), what="the lost audit lines to be logged")
