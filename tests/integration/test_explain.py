"""`kubelab explain pod` end to end: a real scheduler process decides, the CLI (its own process) reads the record
from the scheduler's debug endpoint and the cluster from the apiserver. The scheduler has its own Lease and
schedulerName, its nodes a taint of their own, so the shared apiserver's other pods and schedulers stay out."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import httpx

from conftest import ROOT
from support.scheduler import SchedulerProcess, debug_endpoint, node_of
from support.wait import wait_for


def make_node(client: httpx.Client, ns: str, suffix: str, cpu: str, *taints: dict[str, str]) -> None:
    body = {"metadata": {"name": f"{ns}-{suffix}", "labels": {"pool": ns}},
            "spec": {"taints": [{"key": "pool", "value": ns, "effect": "NoSchedule"}, *taints]},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}
    assert client.post("/api/v1/nodes", json=body).status_code == 201


def create_pod(client: httpx.Client, ns: str, name: str, scheduler_name: str, cpu: str) -> None:
    body = {"metadata": {"name": name},
            "spec": {"schedulerName": scheduler_name, "nodeSelector": {"pool": ns},
                     "tolerations": [{"key": "pool", "operator": "Equal", "value": ns, "effect": "NoSchedule"}],
                     "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=body).status_code == 201


def explain(api_url: str, ns: str, name: str, endpoint: str) -> str:
    done = subprocess.run([sys.executable, "-m", "kubelab", "explain", "pod", name, "-n", ns, "--master", api_url,
                           "--scheduler", endpoint], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def row(output: str, node: str) -> str:
    """The table row of ``node`` (its first or second cell: the chosen node's row starts with ``*``)."""
    return next(line for line in output.splitlines() if node in line.split()[:2] and not line.startswith("Pod "))


def test_explain_scheduled_and_unschedulable_pods(client: httpx.Client, api_url: str, ns: str,
                                                  tmp_path: Path) -> None:
    lease_name, scheduler_name = f"ks-{uuid.uuid4().hex[:8]}", f"sched-{ns}"
    scheduler = SchedulerProcess(api_url, tmp_path / "scheduler.log", f"--leader-elect-resource-name={lease_name}",
                                 f"--scheduler-name={scheduler_name}")
    try:
        check = {"key": "check", "value": ns, "effect": "NoSchedule"}
        make_node(client, ns, "tainted1", "8", check)
        make_node(client, ns, "tainted2", "8", check)
        make_node(client, ns, "small", "99")
        endpoint = debug_endpoint(client, lease_name)

        create_pod(client, ns, "web", scheduler_name, "1")
        assert wait_for(lambda: node_of(client, ns, "web"), what="binding") == f"{ns}-small"
        output = explain(api_url, ns, "web", endpoint)
        assert output.splitlines()[0].startswith(f"Pod {ns}/web: Scheduled on {ns}-small")
        assert row(output, f"{ns}-small").split()[:3] == ["*", f"{ns}-small", "feasible"]
        for tainted in ("tainted1", "tainted2"):
            assert f"TaintToleration: node(s) had untolerated taint {{check: {ns}}}" in row(output, f"{ns}-{tainted}")

        # 100 cpu: the tainted nodes lack cpu as well (two changes away), the untainted one only cpu (one).
        create_pod(client, ns, "huge", scheduler_name, "100")
        wait_for(lambda: httpx.get(f"{endpoint}/debug/explain/{ns}/huge").status_code == 200,
                 what="the scheduler's record of huge")
        output = explain(api_url, ns, "huge", endpoint)
        assert output.splitlines()[0].startswith(f"Pod {ns}/huge: Unschedulable")
        assert "0/" in output and f"2 node(s) had untolerated taint {{check: {ns}}}" in output
        assert "NodeResourcesFit: Insufficient cpu" in row(output, f"{ns}-small")
        nearest = output[output.index("Nearest node:"):]
        assert nearest.splitlines()[0] == f"Nearest node: {ns}-small (1 change away)"
        # 1 cpu is taken by web: 98 free of 99, so 2 short.
        assert f"lacks 2 cpu: the pod requests 100, {ns}-small has 98 free of 99" in nearest
    finally:
        scheduler.stop()
