"""Supervision as a user sees it, on a real detached cluster (etcd, apiserver, controller-manager, scheduler, a
kubelet, all real processes in a temporary data dir on free ports): what exits comes back, `kubelab status` says
how it ended and how often it was restarted, the cluster works again, and `kubelab down` leaves nothing behind.

The issue this answers: after etcd was down for longer than the renew deadline, the controller-manager logged
``leaderelection lost`` and exited, as kube-controller-manager does, and nothing restarted it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubelab import process
from kubelab.etcd import find_etcd, free_port
from kubelab.state import ClusterState, ProcessRecord, load_state
from support.launcher import assert_nothing_left, kubelab
from support.wait import wait_for

ROOT = Path(__file__).resolve().parents[2]


class Cluster:
    def __init__(self, data_dir: Path, port: int) -> None:
        self.data_dir, self.api = data_dir, f"http://127.0.0.1:{port}"

    def state(self) -> ClusterState:
        state = load_state(self.data_dir)
        assert state is not None
        return state

    def record(self, name: str) -> ProcessRecord:
        return next(r for r in self.state().processes if r.name == name)

    def status(self) -> dict[str, list[str]]:
        """`kubelab status` rows by component: PID PORT HEALTH RESTARTS UPTIME LAST EXIT (one string)."""
        out = kubelab("status", "--data-dir", str(self.data_dir)).stdout
        lines = out.splitlines()
        header = lines[1]
        assert header.split() == ["COMPONENT", "PID", "PORT", "HEALTH", "RESTARTS", "UPTIME", "LAST", "EXIT"], out
        last = header.index("LAST EXIT")
        rows = [line for line in lines[2:] if len(line[:last].split()) == 6]  # the lines after the table are notes
        return {line.split()[0]: [*line[:last].split()[1:], line[last:].strip()] for line in rows}

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["kubectl", "--kubeconfig", str(self.data_dir / "kubeconfig"), *args],
                              capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    try:
        find_etcd()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    data_dir, port = tmp_path / "data", free_port()
    up = kubelab("up", "--detach", "--data-dir", str(data_dir), "--port", str(port), "--nodes", "1", cwd=ROOT,
                 timeout=180)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        yield Cluster(data_dir, port)
    finally:
        if load_state(data_dir) is not None:
            kubelab("down", "--data-dir", str(data_dir), "--timeout", "5")


def _rc(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": labels,
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"terminationGracePeriodSeconds": 1,
                                           "containers": [{"name": "main", "image": "busybox",
                                                           "command": ["sleep", "3600"]}]}}}}


def _running_pods(api: str, app: str) -> dict[str, dict[str, Any]]:
    pods = httpx.get(f"{api}/api/v1/namespaces/default/pods", params={"labelSelector": f"app={app}"}).json()
    return {p["metadata"]["name"]: p for p in pods["items"]
            if not p["metadata"].get("deletionTimestamp") and p.get("status", {}).get("phase") == "Running"}


def _restarted(cluster: Cluster, name: str, old_pid: int) -> dict[str, list[str]] | None:
    """The status rows once ``name`` runs again under a new pid and is healthy."""
    rows = cluster.status()
    row = rows[name]
    return rows if row[0] != str(old_pid) and row[2] == "ok" else None


def test_killed_components_come_back_and_down_leaves_nothing(cluster: Cluster) -> None:
    api = cluster.api
    assert httpx.post(f"{api}/api/v1/namespaces/default/replicationcontrollers", json=_rc("web", 2)).status_code == 201
    before = wait_for(lambda: len(p := _running_pods(api, "web")) == 2 and p, timeout=90, what="2 web pods Running")

    # kill -9 the controller-manager: it comes back, status says how it ended and that it was restarted once.
    cm = cluster.record("controller-manager")
    os.kill(cm.pid, signal.SIGKILL)
    rows = wait_for(lambda: _restarted(cluster, "controller-manager", cm.pid), timeout=60,
                    what="the controller-manager to run again")
    pid, port, health, restarts, uptime, last_exit = rows["controller-manager"]
    assert (health, restarts) == ("ok", "1")
    assert last_exit.startswith("signal SIGKILL") and last_exit.endswith("ago"), last_exit
    assert all(row[3] == "0" for name, row in rows.items() if name != "controller-manager"), rows
    log = (cluster.data_dir / "logs" / "supervisor.log").read_text()
    assert "controller-manager exited (signal SIGKILL); restarting in 1s (restart 1)" in log

    # The restarted controller-manager does its job: a deleted pod of the RC is replaced.
    gone = sorted(before)[0]
    assert httpx.delete(f"{api}/api/v1/namespaces/default/pods/{gone}").status_code == 200
    after = wait_for(lambda: len(p := _running_pods(api, "web")) == 2 and gone not in p and p, timeout=120,
                     what="the deleted pod to be replaced")
    assert len(set(after) - set(before)) == 1

    # kill -9 the apiserver: it comes back and kubectl works again.
    apiserver = cluster.record("apiserver")
    os.kill(apiserver.pid, signal.SIGKILL)
    rows = wait_for(lambda: _restarted(cluster, "apiserver", apiserver.pid), timeout=60,
                    what="the apiserver to run again")
    assert rows["apiserver"][3] == "1" and rows["apiserver"][5].startswith("signal SIGKILL")
    nodes = wait_for(lambda: (r := cluster.kubectl("get", "nodes", "-o", "name")).returncode == 0 and r.stdout,
                     timeout=30, what="kubectl get nodes")
    assert nodes.split() == ["node/node01"]

    # down: the supervisor first, then everything, the pods' processes included.
    state = cluster.state()
    assert state.supervisor_pid is not None and state.detached
    tree = process.descendants(state.supervisor_pid)
    containers = [json.loads(p.read_text()) for p in (cluster.data_dir / "kubelet").glob("*/containers/*/pid.json")]
    assert containers and all(c["pid"] in tree for c in containers)  # the pods' processes are in the tree
    down = kubelab("down", "--data-dir", str(cluster.data_dir))
    assert down.returncode == 0, down.stdout + down.stderr
    lines = down.stdout.splitlines()
    assert lines[1].split()[:2] == ["stopped", "supervisor"], down.stdout  # first, so it restarts nothing
    assert_nothing_left(state)
    left = [pid for pid, start in tree.items() if process.pid_alive(pid, start)]
    assert left == [], f"still running after down: {left}"
    assert not process.pid_alive(state.supervisor_pid, state.supervisor_start_time)


def test_a_controller_manager_that_lost_its_lease_is_restarted(cluster: Cluster) -> None:
    """The issue's case: etcd unreachable for longer than the renew deadline (10 s) makes the controller-manager
    exit with ``leaderelection lost``, as kube-controller-manager does; the supervisor starts it again."""
    cm = cluster.record("controller-manager")
    etcd = cluster.record("etcd")
    os.kill(etcd.pid, signal.SIGSTOP)  # not an exit: the supervisor leaves it alone, the apiserver cannot reach it
    try:
        wait_for(lambda: not process.pid_alive(cm.pid, cm.start_time), timeout=60,
                 what="the controller-manager to give up its leadership and exit")
    finally:
        os.kill(etcd.pid, signal.SIGCONT)
    rows = wait_for(lambda: _restarted(cluster, "controller-manager", cm.pid), timeout=60,
                    what="the controller-manager to run again")
    assert rows["controller-manager"][3] == "1"
    assert rows["controller-manager"][5].startswith("Error (exit "), rows
    assert rows["etcd"][3] == "0"
    log = (cluster.data_dir / "logs" / "supervisor.log").read_text()
    exited = next(line for line in log.splitlines() if "controller-manager exited (exit code" in line)
    assert "restarting in 1s (restart 1)" in exited
    assert "leaderelection lost" in log.split(exited, 1)[1]  # the last lines of its log, shown under the exit
