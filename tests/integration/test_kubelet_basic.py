"""A real kubelet process against the real apiserver: node registration and heartbeat, containers as real
processes, phases, restart policies, logs through the apiserver, graceful deletion."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import Kubectl
from kubelab.etcd import free_port
from support.process import ComponentProcess
from support.wait import wait_for


@contextmanager
def kubelet(api_url: str, name: str, root: Path, backoff: float = 1) -> Iterator[str]:
    """A kubelet process for node ``name`` whose first CrashLoopBackOff delay is ``backoff`` seconds."""
    proc = ComponentProcess("kubelet", api_url, root.parent / f"{name}-kubelet.log", "--node-name", name,
                            "--port", str(free_port()), "--root-dir", str(root), "--crashloop-backoff", str(backoff),
                            "--node-lease-renew-interval", "1", "--runtime", "process")
    try:
        yield name
    finally:
        proc.stop()


@pytest.fixture()
def node(api_url: str, ns: str, tmp_path: Path) -> Iterator[str]:
    """A kubelet for a node named after the test's namespace (node names are cluster-wide)."""
    with kubelet(api_url, f"{ns}-node", tmp_path / "root") as name:
        yield name


def pod(ns: str, name: str, node: str, command: list[str], restart: str = "Always",
        **extra: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "command": command, **extra}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"nodeName": node, "restartPolicy": restart, "terminationGracePeriodSeconds": 5,
                     "containers": [container]}}


def phase(client: httpx.Client, ns: str, name: str) -> str:
    resp = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    return resp.json().get("status", {}).get("phase", "") if resp.status_code == 200 else ""


def test_node_registers_and_heartbeats(client: httpx.Client, node: str) -> None:
    registered = wait_for(lambda: client.get(f"/api/v1/nodes/{node}").status_code == 200, what="node")
    assert registered
    obj = client.get(f"/api/v1/nodes/{node}").json()
    ready = {c["type"]: c["status"] for c in obj["status"]["conditions"]}
    assert ready["Ready"] == "True"
    assert obj["metadata"]["labels"]["kubernetes.io/hostname"] == node
    assert obj["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] > 0
    first = wait_for(lambda: client.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}")
                     .json().get("spec", {}).get("renewTime"), what="lease")
    wait_for(lambda: client.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}")
             .json()["spec"]["renewTime"] != first, what="lease renewal")


def test_pod_runs_to_completion_with_logs(client: httpx.Client, kubectl: Kubectl, ns: str, node: str) -> None:
    env = [{"name": "GREETING", "value": "hi"},
           {"name": "MY_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    client.post(f"/api/v1/namespaces/{ns}/pods",
                json=pod(ns, "done", node, ["sh", "-c", "echo $GREETING from $HOSTNAME on $MY_NODE"], "Never",
                         env=env))
    wait_for(lambda: phase(client, ns, "done") == "Succeeded", what="Succeeded")
    status = client.get(f"/api/v1/namespaces/{ns}/pods/done").json()["status"]
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 0 and terminated["reason"] == "Completed"
    assert status["containerStatuses"][0]["containerID"].startswith("process://")
    assert terminated["containerID"] == status["containerStatuses"][0]["containerID"]
    assert kubectl("logs", "done", "-n", ns).stdout == f"hi from done on {node}\n"
    table = kubectl("get", "pod", "done", "-n", ns).stdout.splitlines()[1].split()
    assert table[:3] == ["done", "0/1", "Completed"]
    reasons = [e["reason"] for e in client.get(f"/api/v1/namespaces/{ns}/events",
                                               params={"fieldSelector": "involvedObject.name=done"}).json()["items"]]
    assert {"Pulled", "Created", "Started"} <= set(reasons)


def test_failed_pod_with_restart_never(client: httpx.Client, ns: str, node: str) -> None:
    client.post(f"/api/v1/namespaces/{ns}/pods", json=pod(ns, "bad", node, ["sh", "-c", "exit 3"], "Never"))
    wait_for(lambda: phase(client, ns, "bad") == "Failed", what="Failed")
    state = client.get(f"/api/v1/namespaces/{ns}/pods/bad").json()["status"]["containerStatuses"][0]["state"]
    assert state["terminated"]["exitCode"] == 3 and state["terminated"]["reason"] == "Error"


def test_restart_always_reaches_crashloopbackoff(client: httpx.Client, kubectl: Kubectl, ns: str,
                                                 node: str) -> None:
    client.post(f"/api/v1/namespaces/{ns}/pods", json=pod(ns, "crash", node, ["sh", "-c", "echo boom; exit 1"]))

    def restarted_twice() -> bool:
        statuses = client.get(f"/api/v1/namespaces/{ns}/pods/crash").json().get("status", {})
        cs = (statuses.get("containerStatuses") or [{}])[0]
        return cs.get("restartCount", 0) >= 2 and cs["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff"

    wait_for(restarted_twice, what="CrashLoopBackOff after restarts")
    obj = client.get(f"/api/v1/namespaces/{ns}/pods/crash").json()
    assert obj["status"]["phase"] == "Running"
    assert obj["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1
    assert "CrashLoopBackOff" in kubectl("get", "pod", "crash", "-n", ns).stdout
    assert kubectl("logs", "crash", "-n", ns, "--previous").stdout == "boom\n"


def test_first_crash_restarts_at_once_and_backoff_counts_real_restarts(api_url: str, client: httpx.Client,
                                                                         kubectl: Kubectl, ns: str,
                                                                         tmp_path: Path) -> None:
    """As the kubelet: the first exit is restarted at once (restartCount 1, so --previous has the first run's log);
    the second waits in CrashLoopBackOff and restartCount stays 1 until that restart really happens."""
    with kubelet(api_url, f"{ns}-slow", tmp_path / "slow", backoff=120) as name:
        script = "echo run $(date +%s%N); sleep 1; exit 1"
        client.post(f"/api/v1/namespaces/{ns}/pods", json=pod(ns, "crash", name, ["sh", "-c", script]))

        def status() -> dict[str, Any]:
            found = client.get(f"/api/v1/namespaces/{ns}/pods/crash").json().get("status", {})
            return (found.get("containerStatuses") or [{}])[0]

        def backing_off() -> dict[str, Any] | None:
            cs = status()
            return cs if cs.get("state", {}).get("waiting", {}).get("reason") == "CrashLoopBackOff" else None

        cs = wait_for(backing_off, timeout=30, what="CrashLoopBackOff after the second exit")
        assert cs["restartCount"] == 1  # one restart happened (at once); the next one waits
        assert cs["lastState"]["terminated"]["exitCode"] == 1
        assert "back-off 2m0s restarting failed container=main pod=crash_" in cs["state"]["waiting"]["message"]
        previous = kubectl("logs", "crash", "-n", ns, "--previous").stdout
        current = kubectl("logs", "crash", "-n", ns).stdout  # the instance that exited last
        assert previous.startswith("run ") and current.startswith("run ") and previous != current
        counts: dict[str, int] = {}
        for event in client.get(f"/api/v1/namespaces/{ns}/events").json()["items"]:
            if event["involvedObject"]["name"] == "crash":
                counts[event["reason"]] = counts.get(event["reason"], 0) + event.get("count", 1)
        assert counts["Started"] == 2 and counts["BackOff"] >= 1


def test_logs_since_time_and_since_seconds(client: httpx.Client, kubectl: Kubectl, ns: str, node: str) -> None:
    client.post(f"/api/v1/namespaces/{ns}/pods",
                json=pod(ns, "talk", node, ["sh", "-c", "echo early; sleep 3; echo late; sleep 1000"]))
    wait_for(lambda: "late" in kubectl("logs", "talk", "-n", ns, check=False).stdout, what="both lines")
    stamped = kubectl("logs", "talk", "-n", ns, "--timestamps").stdout.splitlines()
    assert [line.split(" ", 1)[1] for line in stamped] == ["early", "late"]
    late = stamped[1].split(" ", 1)[0].split(".")[0] + "Z"  # whole seconds, as metav1.Time travels
    assert kubectl("logs", "talk", "-n", ns, f"--since-time={late}").stdout == "late\n"
    assert kubectl("logs", "talk", "-n", ns, f"--since-time={late}", "--timestamps").stdout == stamped[1] + "\n"
    assert kubectl("logs", "talk", "-n", ns, "--since=1h").stdout == "early\nlate\n"


def test_graceful_deletion_sends_sigterm(client: httpx.Client, tmp_path: Path, ns: str, node: str) -> None:
    marker = tmp_path / "got-term"  # reached through a hostPath volume, as a container of either runtime sees it
    script = "trap 'echo term > /out/got-term; exit 0' TERM; echo ready; while true; do sleep 0.1; done"
    body = pod(ns, "graceful", node, ["sh", "-c", script], volumeMounts=[{"name": "out", "mountPath": "/out"}])
    body["spec"]["volumes"] = [{"name": "out", "hostPath": {"path": str(tmp_path)}}]
    client.post(f"/api/v1/namespaces/{ns}/pods", json=body)
    wait_for(lambda: phase(client, ns, "graceful") == "Running", what="Running")
    assert client.delete(f"/api/v1/namespaces/{ns}/pods/graceful").status_code == 200
    wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/graceful").status_code == 404,
             what="the kubelet to confirm the deletion")
    assert marker.read_text().strip() == "term"


def test_unknown_image_is_reported(client: httpx.Client, ns: str, node: str) -> None:
    body = pod(ns, "noimg", node, ["true"])
    body["spec"]["containers"][0]["image"] = "no-such-image:1.0"
    client.post(f"/api/v1/namespaces/{ns}/pods", json=body)

    def waiting_reason() -> str:
        cs = client.get(f"/api/v1/namespaces/{ns}/pods/noimg").json().get("status", {}).get("containerStatuses")
        return (cs or [{}])[0].get("state", {}).get("waiting", {}).get("reason", "")

    assert wait_for(waiting_reason, what="waiting reason") == "ErrImagePull"
    assert phase(client, ns, "noimg") == "Pending"
