"""`kubelab trace pod` against the real apiserver: this test plays the controller-manager, the scheduler and the
kubelet (it writes what they write: the pod, events, the binding, status) and checks that the trace reports each
step at the revision the apiserver actually returned for that write — the creation, the binding, the Running
status — and marks what nobody recorded as "not observed".
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

import httpx

from conftest import ROOT, Kubectl
from support.builders import make_node

RC_YAML = """\
apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  replicas: 1
  selector:
    app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: main
        image: busybox
        command: ["sleep", "3600"]
"""


def now(micro: bool = False) -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def ref(obj: dict[str, Any], field_path: str | None = None) -> dict[str, Any]:
    meta = obj["metadata"]
    out = {"kind": obj["kind"], "apiVersion": obj["apiVersion"], "namespace": meta["namespace"],
           "name": meta["name"], "uid": meta["uid"], "resourceVersion": meta["resourceVersion"]}
    return {**out, "fieldPath": field_path} if field_path else out


def record_event(client: httpx.Client, involved: dict[str, Any], reason: str, message: str, component: str,
                 host: str | None = None, field_path: str | None = None, micro: bool = False) -> None:
    """Write an Event as kubeclient's EventRecorder (or, with ``micro``, kube-scheduler's eventTime) does."""
    ns = involved["metadata"]["namespace"]
    event: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{involved['metadata']['name']}.{time.time_ns():x}", "namespace": ns},
        "involvedObject": ref(involved, field_path), "reason": reason, "message": message, "type": "Normal",
        "source": {"component": component, **({"host": host} if host else {})},
        "reportingComponent": component, "reportingInstance": host or component, "count": 1,
    }
    if micro:
        event.update(eventTime=now(micro=True), action="Binding")
    else:
        event.update(firstTimestamp=now(), lastTimestamp=now())
    resp = client.post(f"/api/v1/namespaces/{ns}/events", json=event)
    assert resp.status_code == 201, resp.text


def trace(api_url: str, ns: str, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubelab", "trace", "pod", name, "-n", ns, "--master", api_url,
                           *extra], cwd=ROOT, capture_output=True, text=True, timeout=60)


def steps_of(api_url: str, ns: str, name: str) -> dict[str, dict[str, Any]]:
    done = trace(api_url, ns, name, "-o", "json")
    assert done.returncode == 0, done.stderr
    return {s["number"]: s for s in json.loads(done.stdout)["steps"]}


def test_trace_reports_each_write_at_its_revision(client: httpx.Client, kubectl: Kubectl, ns: str,
                                                  api_url: str, tmp_path: Any) -> None:
    node_name = f"{ns}-node01"
    node = make_node(node_name)
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                     "lastHeartbeatTime": now(), "lastTransitionTime": now()}]
    assert client.post("/api/v1/nodes", json=node).status_code == 201
    manifest = tmp_path / "rc.yaml"
    manifest.write_text(RC_YAML)
    kubectl("apply", "-f", str(manifest), "-n", ns)
    rc = client.get(f"/api/v1/namespaces/{ns}/replicationcontrollers/web").json()

    # The replication controller: create the pod it owns, then record SuccessfulCreate on the RC.
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "web-x7k2p", "labels": {"app": "web"},
                        "ownerReferences": [{"apiVersion": "v1", "kind": "ReplicationController", "name": "web",
                                             "uid": rc["metadata"]["uid"], "controller": True,
                                             "blockOwnerDeletion": True}]},
           "spec": rc["spec"]["template"]["spec"]}
    resp = client.post(f"/api/v1/namespaces/{ns}/pods", json=pod)
    assert resp.status_code == 201, resp.text
    created_rv = int(resp.json()["metadata"]["resourceVersion"])
    record_event(client, rc, "SuccessfulCreate", "Created pod: web-x7k2p", "replication-controller")

    # The scheduler: bind, then record Scheduled (with a MicroTime eventTime, as kube-scheduler does).
    pending = client.get(f"/api/v1/namespaces/{ns}/pods/web-x7k2p").json()
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web-x7k2p"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
    assert client.post(f"/api/v1/namespaces/{ns}/pods/web-x7k2p/binding", json=binding).status_code == 201
    record_event(client, pending, "Scheduled", f"Successfully assigned {ns}/web-x7k2p to {node_name}",
                 "default-scheduler", micro=True)
    bound = client.get(f"/api/v1/namespaces/{ns}/pods/web-x7k2p").json()
    bound_rv = int(bound["metadata"]["resourceVersion"])

    # The kubelet: accept the pod (startTime, Initialized), run the container, report Running.
    container = "spec.containers{main}"
    status = bound["status"]
    status.update(startTime=now(), phase="Pending", hostIP="127.0.0.1")
    status["conditions"].append({"type": "Initialized", "status": "True", "lastTransitionTime": now()})
    resp = client.put(f"/api/v1/namespaces/{ns}/pods/web-x7k2p/status", json=bound)
    assert resp.status_code == 200, resp.text
    for reason, message in (("Pulling", 'Pulling image "busybox"'), ("Pulled", 'Successfully pulled image "busybox"'),
                            ("Created", "Created container main"), ("Started", "Started container main")):
        record_event(client, bound, reason, message, "kubelet", host=node_name, field_path=container)
    accepted = resp.json()
    started = now()
    accepted["status"].update(phase="Running", podIP="127.0.0.1", containerStatuses=[
        {"name": "main", "image": "busybox", "imageID": "", "ready": True, "restartCount": 0, "started": True,
         "state": {"running": {"startedAt": started}}}])
    accepted["status"]["conditions"] += [{"type": "ContainersReady", "status": "True", "lastTransitionTime": now()},
                                         {"type": "Ready", "status": "True", "lastTransitionTime": now()}]
    resp = client.put(f"/api/v1/namespaces/{ns}/pods/web-x7k2p/status", json=accepted)
    assert resp.status_code == 200, resp.text
    running_rv = int(resp.json()["metadata"]["resourceVersion"])

    steps = steps_of(api_url, ns, "web-x7k2p")
    assert steps["3"]["what"] == "store ReplicationController/web in etcd"
    assert steps["3"]["revision"] == int(rc["metadata"]["resourceVersion"])  # never modified since kubectl apply
    assert "kubectl apply" in steps["2"]["evidence"]
    assert steps["5"]["revision"] == int(rc["metadata"]["resourceVersion"])
    assert steps["6"]["actor"] == "replication-controller" and steps["6"]["time"] is not None
    assert steps["7"]["revision"] == created_rv
    assert steps["8"]["revision"] == int(pending["metadata"]["resourceVersion"])
    assert steps["9"]["what"] == f"bind the pod to {node_name}" and steps["9"]["precision"] == "us"
    assert steps["10"]["revision"] == bound_rv
    assert steps["11"]["actor"] == f"kubelet ({node_name})" and steps["11"]["time_source"] == "status.startTime"
    assert steps["11"]["revision"] == bound_rv
    assert [steps[n]["observed"] for n in ("12a", "12b", "12c", "12d")] == [True] * 4
    assert steps["12d"]["time"] == started
    assert steps["13"]["revision"] == running_rv
    assert steps["1"]["observed"] and f"node {node_name} Ready=True" in steps["1"]["evidence"]
    # Latencies run from one timed step to the next; whole-second timestamps make them approximate.
    timed = [s for s in steps.values() if s["time"]]
    assert timed[0]["latency"] is None and all(s["latency"] is not None for s in timed[1:])

    table = trace(api_url, ns, "web-x7k2p")
    assert table.returncode == 0, table.stderr
    assert f"pod {ns}/web-x7k2p" in table.stdout and "controlled by: ReplicationController/web" in table.stdout
    assert f"event Scheduled: Successfully assigned {ns}/web-x7k2p to {node_name}" in table.stdout


def test_trace_of_an_unscheduled_bare_pod_says_what_was_not_observed(client: httpx.Client, kubectl: Kubectl,
                                                                      ns: str, api_url: str) -> None:
    kubectl("run", "lonely", "--image=busybox", "-n", ns, "--", "sleep", "3600")
    pod = client.get(f"/api/v1/namespaces/{ns}/pods/lonely").json()
    record_event(client, pod, "FailedScheduling", "0/3 nodes are available: 3 node(s) didn't match Pod's node "
                 "affinity/selector.", "default-scheduler")
    steps = steps_of(api_url, ns, "lonely")
    assert steps["3"]["revision"] == int(pod["metadata"]["resourceVersion"])
    assert [steps[n]["applicable"] for n in ("5", "6", "7")] == [False] * 3
    assert steps["8"]["observed"] and "1 FailedScheduling attempt(s)" in steps["8"]["evidence"]
    assert not steps["9"]["observed"] and "didn't match Pod's node affinity/selector" in steps["9"]["evidence"]
    assert not steps["10"]["observed"] and not steps["13"]["observed"]
    table = trace(api_url, ns, "lonely").stdout
    assert "not observed" in table and "n/a" in table


def test_trace_of_a_missing_pod_fails_like_kubectl(ns: str, api_url: str) -> None:
    done = trace(api_url, ns, "nope")
    assert done.returncode == 1
    assert f'pods "nope" not found in namespace {ns}' in done.stderr
