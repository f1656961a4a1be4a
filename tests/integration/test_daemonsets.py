"""DaemonSets with a real controller-manager, a real scheduler and the real kubectl: one pod per eligible node
(bound by the scheduler through the pod's matchFields node affinity), nodes relabelled and tainted, ``kubectl
rollout status/history/undo``, the garbage collector taking pods and revisions with the DaemonSet, ``kubectl
drain --ignore-daemonsets``, and the Python client.  The test plays the kubelet: it marks pods Running and Ready.

The nodes are this module's own: labelled and tainted ``pool=<prefix>`` (other tests' pods stay off them), and the
DaemonSets select them with a nodeSelector and tolerate the pool taint, so nodes other tests make get no pods.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from conftest import Kubectl
from support.controllers import ControllerManager, pods, set_ready
from support.scheduler import SchedulerProcess
from support.wait import wait_for

PREFIX = f"ds-{uuid.uuid4().hex[:6]}"
SCHEDULER = f"sched-{PREFIX}"
NODES = [f"{PREFIX}-n{i}" for i in (1, 2, 3)]
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def cluster(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    logs = tmp_path_factory.mktemp("ds")
    with httpx.Client(base_url=api_url, timeout=30) as client:
        for name in NODES:
            body = {"metadata": {"name": name, "labels": {"pool": PREFIX}},
                    "spec": {"taints": [{"key": "pool", "value": PREFIX, "effect": "NoSchedule"}]},
                    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                               "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                               "conditions": [{"type": "Ready", "status": "True"}]}}
            assert client.post("/api/v1/nodes", json=body).status_code == 201
        cm = ControllerManager(api_url, logs / "controller-manager.log", "--leader-elect=false",
                               "--controllers=daemonset,garbagecollector")
        scheduler = SchedulerProcess(api_url, logs / "scheduler.log", f"--scheduler-name={SCHEDULER}",
                                     f"--leader-elect-resource-name={SCHEDULER}")
        try:
            yield
        finally:
            scheduler.stop()
            cm.stop()
            for name in NODES:
                client.delete(f"/api/v1/nodes/{name}")


def daemonset(name: str, image: str = "busybox:1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, **spec,
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "schedulerName": SCHEDULER, "nodeSelector": {"pool": PREFIX},
                         "tolerations": [{"key": "pool", "operator": "Exists", "effect": "NoSchedule"}],
                         "containers": [{"name": "c", "image": image}]}}}}


def placement(client: httpx.Client, ns: str, selector: str) -> dict[str, str]:
    """node → the image of its daemon pod, for the bound, live pods."""
    return {p["spec"]["nodeName"]: p["spec"]["containers"][0]["image"] for p in pods(client, ns, selector)
            if p["spec"].get("nodeName")}


def ds_status(client: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    return dict(client.get(f"/apis/apps/v1/namespaces/{ns}/daemonsets/{name}").json().get("status") or {})


def confirm_deletions(client: httpx.Client, ns: str, selector: str) -> bool:
    """What a kubelet does once a deleted pod's containers stopped: remove it (grace period 0); whether any was."""
    terminating = [p for p in pods(client, ns, selector, live=False) if p["metadata"].get("deletionTimestamp")]
    for pod in terminating:
        client.delete(f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}", params={"gracePeriodSeconds": "0"})
    return bool(terminating)


def play_kubelet(client: httpx.Client, ns: str, selector: str, until: subprocess.Popen[str],
                 max_unavailable: int | None = None) -> str:
    """Mark bound pods Ready and confirm deleted ones gone, as kubelets do, until ``until`` exits (checking that at
    most ``max_unavailable`` nodes lack a ready daemon); return its output."""
    deadline = time.monotonic() + 60
    try:
        while until.poll() is None:
            assert time.monotonic() < deadline, "rollout did not finish"
            confirm_deletions(client, ns, selector)
            current = pods(client, ns, selector)
            if max_unavailable is not None:
                ready = {p["spec"].get("nodeName") for p in current if p.get("status", {}).get("phase") == "Running"}
                assert len(NODES) - len(ready) <= max_unavailable, f"only {sorted(ready)} have a ready daemon"
            for pod in current:
                if pod["spec"].get("nodeName") and pod.get("status", {}).get("phase") != "Running":
                    set_ready(client, pod)
                    break
            time.sleep(0.1)
    except BaseException:
        until.kill()
        until.communicate()
        raise
    out, _ = until.communicate(timeout=30)
    assert until.returncode == 0, out
    return out


def rollout_status(kubectl: Kubectl, name: str, ns: str) -> subprocess.Popen[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(kubectl.home), "KUBECONFIG": str(kubectl.home / "none")}
    return subprocess.Popen([kubectl.binary, "-s", kubectl.server, "rollout", "status", f"ds/{name}", "-n", ns,
                             "--timeout=60s"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def test_one_pod_per_node_rollout_and_history(client: httpx.Client, ns: str, kubectl: Kubectl,
                                              cluster: None) -> None:
    kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(daemonset("agent", updateStrategy={
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}})))
    wait_for(lambda: sorted(placement(client, ns, "app=agent")) == NODES, what="one bound pod per node")
    for pod in pods(client, ns, "app=agent"):
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms == {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [pod["spec"]["nodeName"]]}]}]}
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
        assert pod["metadata"]["labels"]["pod-template-generation"] == "1"
    out = play_kubelet(client, ns, "app=agent", rollout_status(kubectl, "agent", ns))
    assert 'daemon set "agent" successfully rolled out' in out
    table = kubectl("get", "ds", "agent", "-n", ns, "-o", "wide").stdout.splitlines()
    assert table[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE",
                                "SELECTOR", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert table[1].split()[:7] == ["agent", "3", "3", "3", "3", "3", f"pool={PREFIX}"]
    assert table[1].split()[-3:] == ["c", "busybox:1", "app=agent"]

    kubectl("set", "image", "ds/agent", "c=busybox:2", "-n", ns)
    play_kubelet(client, ns, "app=agent", rollout_status(kubectl, "agent", ns), max_unavailable=1)
    assert placement(client, ns, "app=agent") == {node: "busybox:2" for node in NODES}
    history = kubectl("rollout", "history", "ds/agent", "-n", ns).stdout
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    assert "rolled back" in kubectl("rollout", "undo", "ds/agent", "-n", ns).stdout
    play_kubelet(client, ns, "app=agent", rollout_status(kubectl, "agent", ns), max_unavailable=1)
    assert placement(client, ns, "app=agent") == {node: "busybox:1" for node in NODES}
    revisions = kubectl("get", "controllerrevisions", "-n", ns).stdout.splitlines()
    assert sorted(r.split()[1:3] for r in revisions[1:]) == [["daemonset.apps/agent", "2"],
                                                              ["daemonset.apps/agent", "3"]]

    kubectl("delete", "ds", "agent", "-n", ns)
    wait_for(lambda: not pods(client, ns, "app=agent"), what="pods deleted by the garbage collector")
    confirm_deletions(client, ns, "app=agent")
    wait_for(lambda: not client.get(f"/apis/apps/v1/namespaces/{ns}/controllerrevisions").json()["items"],
             what="revisions garbage-collected")


def test_nodes_relabelled_tainted_and_drained(client: httpx.Client, ns: str, kubectl: Kubectl,
                                             cluster: None) -> None:
    spec = daemonset("probe", updateStrategy={"type": "OnDelete"})
    spec["spec"]["template"]["spec"]["nodeSelector"]["probe"] = "yes"
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/daemonsets", json=spec).status_code == 201
    kubectl("label", "node", NODES[0], NODES[1], "probe=yes")
    try:
        wait_for(lambda: sorted(placement(client, ns, "app=probe")) == NODES[:2], what="pods on the labelled nodes")
        kubectl("label", "node", NODES[1], "probe-")
        wait_for(lambda: sorted(placement(client, ns, "app=probe")) == NODES[:1], what="unlabelled node emptied")
        wait_for(lambda: ds_status(client, ns, "probe").get("desiredNumberScheduled") == 1, what="desired 1")

        pod = pods(client, ns, "app=probe")[0]["metadata"]["name"]
        refused = kubectl("drain", NODES[0], "--timeout=20s", check=False)
        assert refused.returncode != 0
        assert f"cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): {ns}/{pod}" \
               in refused.stderr
        drained = kubectl("drain", NODES[0], "--ignore-daemonsets", "--timeout=20s")
        assert f"Warning: ignoring DaemonSet-managed Pods: {ns}/{pod}" in drained.stderr
        assert f"node/{NODES[0]} drained" in drained.stdout
        time.sleep(0.5)  # a cordoned node keeps its daemon: nothing is replaced
        assert [p["metadata"]["name"] for p in pods(client, ns, "app=probe")] == [pod]

        kubectl("taint", "node", NODES[0], "evict=now:NoExecute")
        wait_for(lambda: not pods(client, ns, "app=probe"), what="NoExecute taint emptied the node")
        confirm_deletions(client, ns, "app=probe")
    finally:
        kubectl("uncordon", NODES[0], check=False)
        kubectl("taint", "node", NODES[0], "evict-", check=False)
        kubectl("label", "node", *NODES, "probe-", check=False)


def test_python_client(api: Any, ns: str, cluster: None) -> None:
    from kubernetes import client as k8s
    from kubernetes.client.rest import ApiException

    apps = k8s.AppsV1Api(api)
    created = apps.create_namespaced_daemon_set(ns, daemonset("py"))
    assert created.spec.update_strategy.rolling_update.max_unavailable == 1
    assert created.spec.revision_history_limit == 10
    status = wait_for(lambda: (s := apps.read_namespaced_daemon_set_status("py", ns).status)
                      .desired_number_scheduled == 3 and s, what="status written")
    assert status.current_number_scheduled == 3 and status.number_misscheduled == 0
    assert status.observed_generation == 1
    bad = daemonset("bad")
    bad["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}}
    with pytest.raises(ApiException) as err:
        apps.create_namespaced_daemon_set(ns, bad)
    assert err.value.status == 422
    causes = json.loads(err.value.body)["details"]["causes"]
    assert causes == [{"reason": "FieldValueRequired", "message": "Required value: cannot be 0 when maxSurge is 0",
                       "field": "spec.updateStrategy.rollingUpdate.maxUnavailable"}]
    apps.delete_namespaced_daemon_set("py", ns)
