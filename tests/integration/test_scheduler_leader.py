"""Two real schedulers: only the Lease holder binds; it publishes its debug endpoint on the Lease and explains its
decisions there; SIGKILL it and the other takes over within the lease duration. Each test has its own Lease and
schedulerName, so no other scheduler on the shared apiserver interferes."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx

from kubelab.componentrun import run_component
from support.scheduler import SchedulerProcess, debug_endpoint, lease, node_of
from support.wait import wait_for

FAST = ("--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=0.5s")


def make_nodes(client: httpx.Client, prefix: str, cpus: dict[str, str]) -> None:
    """Nodes of this test only, tainted ``pool=<prefix>:NoSchedule`` so other tests' pods stay off them."""
    for suffix, cpu in cpus.items():
        body = {"metadata": {"name": f"{prefix}-{suffix}", "labels": {"pool": prefix}},
                "spec": {"taints": [{"key": "pool", "value": prefix, "effect": "NoSchedule"}]},
                "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                           "conditions": [{"type": "Ready", "status": "True"}]}}
        assert client.post("/api/v1/nodes", json=body).status_code == 201


def create_pod(client: httpx.Client, ns: str, name: str, scheduler_name: str, cpu: str = "100m") -> None:
    body = {"metadata": {"name": name},
            "spec": {"schedulerName": scheduler_name, "nodeSelector": {"pool": ns},
                     "tolerations": [{"key": "pool", "operator": "Equal", "value": ns, "effect": "NoSchedule"}],
                     "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=body).status_code == 201


def test_only_the_leader_binds_and_the_other_takes_over(client: httpx.Client, api_url: str, ns: str,
                                                        tmp_path: Path) -> None:
    lease_name, scheduler_name = f"ks-{uuid.uuid4().hex[:8]}", f"sched-{ns}"
    flags = (f"--leader-elect-resource-name={lease_name}", f"--scheduler-name={scheduler_name}", *FAST)
    schedulers = [SchedulerProcess(api_url, tmp_path / f"s{i}.log", *flags) for i in range(2)]
    try:
        make_nodes(client, ns, {"a": "4", "b": "1"})
        holder = wait_for(lambda: lease(client, lease_name).get("spec", {}).get("holderIdentity"), what="a leader")
        create_pod(client, ns, "first", scheduler_name)
        assert wait_for(lambda: node_of(client, ns, "first"), what="binding") == f"{ns}-a"  # more room on a
        logs = [s.log() for s in schedulers]
        assert sum("started leading" in text for text in logs) == 1
        leader = next(s for s, text in zip(schedulers, logs, strict=False) if "started leading" in text)
        follower = next(s for s in schedulers if s is not leader)

        # The leader names its debug endpoint on the Lease and explains its decisions there.
        endpoint = debug_endpoint(client, lease_name)
        explained = httpx.get(f"{endpoint}/debug/explain/{ns}/first").json()
        assert explained["result"] == "Scheduled" and explained["node"] == f"{ns}-a"
        chosen = explained["nodes"][f"{ns}-a"]
        assert [f["code"] for f in chosen["filters"]] == ["Success"] * len(chosen["filters"])
        assert chosen["total"] > explained["nodes"][f"{ns}-b"]["total"]
        fit = {s["plugin"]: s for s in chosen["scores"]}["NodeResourcesFit"]
        assert fit["weight"] == 1 and fit["raw"] == fit["normalized"] > 0
        assert httpx.get(f"{endpoint}/debug/explain/{ns}/nope").status_code == 404

        create_pod(client, ns, "huge", scheduler_name, cpu="6")
        explained = wait_for(lambda: (r := httpx.get(f"{endpoint}/debug/explain/{ns}/huge")).status_code == 200
                             and r.json(), what="the unschedulable pod's diagnosis")
        assert explained["result"] == "Unschedulable" and explained["node"] is None
        assert explained["nodes"][f"{ns}-b"]["filters"][-1] == {
            "plugin": "NodeResourcesFit", "code": "Unschedulable", "reasons": ["Insufficient cpu"]}

        assert leader.kill() != 0  # dies without releasing the lease
        wait_for(lambda: (h := lease(client, lease_name).get("spec", {}).get("holderIdentity")) and h != holder,
                 timeout=30, what="the follower taking over")
        create_pod(client, ns, "second", scheduler_name)
        assert wait_for(lambda: node_of(client, ns, "second"), what="binding by the new leader")
        assert "started leading" in follower.log()
    finally:
        for s in schedulers:
            s.stop()


def test_invalid_config_exits_1(api_url: str, tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                      "profiles:\n- plugins:\n    score:\n      enabled: [{name: NoSuchPlugin}]\n")
    scheduler = run_component("scheduler", "--master", api_url, "--config", str(config), log=tmp_path / "s.log")
    try:
        assert scheduler.wait(60) == 1
    finally:
        scheduler.stop()
    assert "unknown plugin 'NoSuchPlugin'" in scheduler.log_text()
