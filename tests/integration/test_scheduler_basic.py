"""A real scheduler process against the real apiserver, with Node objects made by the test (no kubelet)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.scheduler import SchedulerProcess, node_of
from support.wait import wait_for


@pytest.fixture(scope="module")
def scheduler(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    process = SchedulerProcess(api_url, tmp_path_factory.mktemp("scheduler") / "scheduler.log")
    try:
        yield
    finally:
        process.stop()


def make_nodes(client: httpx.Client, prefix: str, specs: dict[str, dict[str, Any]]) -> None:
    """Nodes of this test only: a ``pool=<prefix>:NoSchedule`` taint keeps other tests' pending pods off them."""
    for suffix, spec in specs.items():
        taints = [{"key": "pool", "value": prefix, "effect": "NoSchedule"}, *spec.get("taints", [])]
        body = {"metadata": {"name": f"{prefix}-{suffix}", "labels": {"pool": prefix, **spec.get("labels", {})}},
                "spec": {"taints": taints},
                "status": {"allocatable": {"cpu": spec.get("cpu", "4"), "memory": "8Gi", "pods": "110"},
                           "capacity": {"cpu": spec.get("cpu", "4"), "memory": "8Gi", "pods": "110"},
                           "conditions": [{"type": "Ready", "status": "True"}]}}
        assert client.post("/api/v1/nodes", json=body).status_code == 201


def create_pod(client: httpx.Client, ns: str, name: str, prefix: str, **spec: Any) -> None:
    pool = {"key": "pool", "operator": "Equal", "value": prefix, "effect": "NoSchedule"}
    spec["tolerations"] = [pool, *spec.get("tolerations", [])]
    body = {"metadata": {"name": name},
            "spec": {"nodeSelector": {"pool": prefix, **spec.pop("selector", {})},
                     "containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": spec.pop("cpu", "100m")}}}], **spec}}
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=body).status_code == 201, body


def test_binds_with_event_and_condition(client: httpx.Client, ns: str, scheduler: None) -> None:
    make_nodes(client, ns, {"a": {}})
    create_pod(client, ns, "web", ns)
    assert wait_for(lambda: node_of(client, ns, "web"), what="binding") == f"{ns}-a"
    pod = client.get(f"/api/v1/namespaces/{ns}/pods/web").json()
    assert {"type": "PodScheduled", "status": "True"}.items() <= pod["status"]["conditions"][0].items()
    events = wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/events",
                                         params={"fieldSelector": "involvedObject.name=web,reason=Scheduled"})
                      .json()["items"], what="Scheduled event")
    assert events[0]["message"] == f"Successfully assigned {ns}/web to {ns}-a"
    assert events[0]["reportingComponent"] == "default-scheduler" and events[0]["action"] == "Binding"
    assert events[0]["eventTime"] and not events[0].get("source")  # events.k8s.io/v1, as kube-scheduler writes


def test_taints_selectors_and_unschedulable(client: httpx.Client, ns: str, scheduler: None) -> None:
    # The taint's value is unique to this test: the session's apiserver holds other tests' nodes too.
    make_nodes(client, ns, {"tainted": {"taints": [{"key": "check", "value": ns, "effect": "NoExecute"}]},
                            "small": {"cpu": "1"}, "labelled": {"labels": {"feng": "a"}, "cpu": "1"}})
    create_pod(client, ns, "selected", ns, selector={"feng": "a"})
    assert wait_for(lambda: node_of(client, ns, "selected"), what="binding") == f"{ns}-labelled"
    create_pod(client, ns, "tolerant", ns, cpu="2",
               tolerations=[{"key": "check", "operator": "Equal", "value": ns, "effect": "NoExecute"}])
    assert wait_for(lambda: node_of(client, ns, "tolerant"), what="binding") == f"{ns}-tainted"
    create_pod(client, ns, "huge", ns, cpu="3")

    def failed() -> dict[str, Any] | None:
        conditions = client.get(f"/api/v1/namespaces/{ns}/pods/huge").json().get("status", {}).get("conditions")
        return next((c for c in conditions or [] if c["type"] == "PodScheduled"), None)

    condition = wait_for(failed, what="PodScheduled=False")
    assert condition["status"] == "False" and condition["reason"] == "Unschedulable"
    assert condition["message"].startswith("0/")
    assert f"1 node(s) had untolerated taint {{check: {ns}}}" in condition["message"]
    assert "Insufficient cpu" in condition["message"]
    # Room appears: the pending pod is retried on the cluster change, not by polling.
    make_nodes(client, ns, {"big": {"cpu": "8"}})
    assert wait_for(lambda: node_of(client, ns, "huge"), what="retry on node add") == f"{ns}-big"


def test_pod_waiting_for_pod_affinity_is_woken_by_the_pod_it_needs(client: httpx.Client, ns: str,
                                                                   scheduler: None) -> None:
    """kube-scheduler's AssignedPodAdd event: the matching pod being bound is the only cluster change."""
    make_nodes(client, ns, {x: {"labels": {"kubernetes.io/hostname": f"{ns}-{x}"}} for x in "ab"})
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    create_pod(client, ns, "follower", ns, affinity=affinity)

    def reason() -> str:
        conditions = client.get(f"/api/v1/namespaces/{ns}/pods/follower").json()["status"].get("conditions")
        return next((c.get("reason", "") for c in conditions or [] if c["type"] == "PodScheduled"), "")

    assert wait_for(reason, what="follower unschedulable") == "Unschedulable"
    body = {"metadata": {"name": "leader", "labels": {"app": "x"}},
            "spec": {"nodeName": f"{ns}-b", "containers": [{"name": "c", "image": "busybox"}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    assert wait_for(lambda: node_of(client, ns, "follower"), timeout=10, what="retry on AssignedPodAdd") == f"{ns}-b"


def test_high_priority_pod_preempts_a_low_priority_one(client: httpx.Client, ns: str, scheduler: None) -> None:
    """Priority comes from the built-in classes (the apiserver's Priority admission rejects a bare spec.priority)."""
    make_nodes(client, ns, {"a": {"cpu": "1"}})
    create_pod(client, ns, "low", ns, cpu="1", nodeName=f"{ns}-a", terminationGracePeriodSeconds=0)
    low_uid = client.get(f"/api/v1/namespaces/{ns}/pods/low").json()["metadata"]["uid"]
    create_pod(client, ns, "high", ns, cpu="1", priorityClassName="system-cluster-critical")
    wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/high").json()["status"].get("nominatedNodeName"),
             what="the nomination")
    # While high backs off, a less important pod arrives: the room the preemption makes is kept for high.
    create_pod(client, ns, "late", ns, cpu="1")
    assert wait_for(lambda: node_of(client, ns, "high"), what="binding after preemption") == f"{ns}-a"
    assert not node_of(client, ns, "late")
    late = wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/events", params={
        "fieldSelector": "involvedObject.name=late,reason=FailedScheduling"}).json()["items"], what="late's failure")
    assert "1 Insufficient cpu" in late[0]["message"]
    assert client.get(f"/api/v1/namespaces/{ns}/pods/high").json()["status"].get("nominatedNodeName") == f"{ns}-a"
    assert client.get(f"/api/v1/namespaces/{ns}/pods/low").status_code == 404
    high = client.get(f"/api/v1/namespaces/{ns}/pods/high").json()
    preempted = wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/events", params={
        "fieldSelector": "involvedObject.name=low,reason=Preempted"}).json()["items"], what="Preempted event")
    assert preempted[0]["message"] == f"Preempted by pod {high['metadata']['uid']} on node {ns}-a"
    assert preempted[0]["involvedObject"]["uid"] == low_uid
    failed = client.get(f"/api/v1/namespaces/{ns}/events", params={
        "fieldSelector": "involvedObject.name=high,reason=FailedScheduling"}).json()["items"]
    assert failed and "1 Insufficient cpu" in failed[0]["message"] and "preemption" not in failed[0]["message"]

    # Nothing lower to preempt: the note says so, in Kubernetes' words.
    create_pod(client, ns, "peer", ns, cpu="1", priorityClassName="system-cluster-critical")
    events = wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/events", params={
        "fieldSelector": "involvedObject.name=peer,reason=FailedScheduling"}).json()["items"], what="FailedScheduling")
    assert "1 Insufficient cpu" in events[0]["message"] and ". preemption: 0/" in events[0]["message"]
    assert "1 No preemption victims found for incoming pod" in events[0]["message"]
    assert events[0]["message"].endswith("..")  # FitError appends the PostFilter message and a period


def test_preemption_by_priority_class(client: httpx.Client, ns: str, scheduler: None) -> None:
    """Issue #16's done-when: PriorityClasses made by the user; the victim (its grace period keeps it, terminating,
    on a node without a kubelet) carries DisruptionTarget/PreemptionByScheduler and a Preempted event, the
    preemptor ``status.nominatedNodeName``."""
    classes = "/apis/scheduling.k8s.io/v1/priorityclasses"
    for name, value in ((f"low-{ns}", 10), (f"high-{ns}", 1000)):
        assert client.post(classes, json={"metadata": {"name": name}, "value": value}).status_code == 201
    try:
        make_nodes(client, ns, {"a": {"cpu": "1"}})
        create_pod(client, ns, "low", ns, cpu="1", nodeName=f"{ns}-a", priorityClassName=f"low-{ns}",
                   terminationGracePeriodSeconds=30)
        create_pod(client, ns, "high", ns, cpu="1", priorityClassName=f"high-{ns}")
        high = client.get(f"/api/v1/namespaces/{ns}/pods/high").json()
        assert (high["spec"]["priority"], high["spec"]["preemptionPolicy"]) == (1000, "PreemptLowerPriority")
        nominated = wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/high").json()["status"]
                             .get("nominatedNodeName"), what="the nomination")
        assert nominated == f"{ns}-a"
        low = wait_for(lambda: (p := client.get(f"/api/v1/namespaces/{ns}/pods/low").json())["metadata"]
                       .get("deletionTimestamp") and p, what="the victim's deletion")
        target = next(c for c in low["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert (target["status"], target["reason"]) == ("True", "PreemptionByScheduler")
        preempted = wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/events", params={
            "fieldSelector": "involvedObject.name=low,reason=Preempted"}).json()["items"], what="Preempted event")
        assert preempted[0]["message"] == f"Preempted by pod {high['metadata']['uid']} on node {ns}-a"
    finally:
        for name in (f"low-{ns}", f"high-{ns}"):
            client.delete(f"{classes}/{name}")


def test_preemption_disabled_in_the_profile(client: httpx.Client, api_url: str, ns: str, tmp_path: Path) -> None:
    """``plugins.postFilter.disabled: [DefaultPreemption]``: no victims, no nomination, FailedScheduling without a
    preemption note; kube-scheduler only logs (at -v=3) that no preemption will be performed."""
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                      "leaderElection: {leaderElect: false}\n"
                      f"profiles:\n- schedulerName: nopreempt-{ns}\n"
                      "  plugins:\n    postFilter:\n      disabled: [{name: DefaultPreemption}]\n")
    process = SchedulerProcess(api_url, tmp_path / "scheduler.log", "--config", str(config), "--v=3")
    try:
        make_nodes(client, ns, {"a": {"cpu": "1"}})
        create_pod(client, ns, "low", ns, cpu="1", nodeName=f"{ns}-a")
        create_pod(client, ns, "high", ns, cpu="1", priorityClassName="system-cluster-critical",
                   schedulerName=f"nopreempt-{ns}")
        events = wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/events", params={
            "fieldSelector": "involvedObject.name=high,reason=FailedScheduling"}).json()["items"],
            what="FailedScheduling")
        message = events[0]["message"]
        assert "1 Insufficient cpu" in message and "preemption" not in message and not message.endswith("..")
        wait_for(lambda: "No PostFilter plugins are registered, so no preemption will be performed" in process.log(),
                 what="the scheduler's note")
        high = client.get(f"/api/v1/namespaces/{ns}/pods/high").json()
        assert not high["spec"].get("nodeName") and not high["status"].get("nominatedNodeName")
        low = client.get(f"/api/v1/namespaces/{ns}/pods/low").json()
        assert low["kind"] == "Pod" and not low["metadata"].get("deletionTimestamp")
    finally:
        process.stop()
