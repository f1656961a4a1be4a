"""``kubelab.Cluster.run_component``: one more component beside a running cluster, with a test's own flags — forked
from the zygote (its imports not paid again), a process of its own session with its log, stopped by its handle
(SIGTERM, or SIGKILL as a crash) with its exit code, and stopped with the cluster if still running."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import pytest

from conftest import api_only
from kubelab import process, zygote
from kubelab.componentrun import package_of
from support.wait import wait_for


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_component_runs_beside_the_cluster_until_its_handle_stops_it(tmp_path: Path) -> None:
    with api_only() as cluster:
        prefix = "run-component-"
        hollow = cluster.run_component("kubelet", "--hollow", "--count", "2", "--node-name-prefix", prefix,
                                       "--root-dir", str(tmp_path / "hollow"))
        assert _ppid(hollow.pid) == zygote.shared().pid  # forked, not a fresh interpreter
        assert os.getsid(hollow.pid) == hollow.pid  # its own session: stopped by process group
        assert hollow.argv[3:5] == ["--master", cluster.api_url]  # the plain port, as no --kubeconfig was given
        assert hollow.log == cluster.data_dir / "logs" / "kubelet-1.log"
        with httpx.Client(base_url=cluster.api_url, timeout=10) as client:
            for node in (f"{prefix}0", f"{prefix}1"):
                wait_for(lambda node=node: client.get(f"/api/v1/nodes/{node}").status_code == 200, what=node)
        assert hollow.poll() is None
        assert hollow.stop() == 0, hollow.log_text()  # SIGTERM: a clean exit
        assert not process.pid_alive(hollow.pid) and hollow.poll() == 0
        assert "hollow mode: 2 SIMULATED nodes" in hollow.log_text()

        crashed = cluster.run_component("scheduler", "--leader-elect=false", log=tmp_path / "scheduler.log")
        wait_for(lambda: "healthz: http://" in crashed.log_text(), what="the scheduler's healthz line")
        assert crashed.kill() == -signal.SIGKILL
        assert crashed.log == tmp_path / "scheduler.log"

        left = cluster.run_component("controller-manager", "--leader-elect=false", "--controllers=namespace")
        wait_for(lambda: "healthz: http://" in left.log_text(), what="the controller-manager's healthz line")
    assert left.poll() is not None and not process.pid_alive(left.pid)  # stopped with the cluster


def test_a_fresh_interpreter_when_asked_and_a_wait_that_times_out(tmp_path: Path) -> None:
    with api_only() as cluster:
        run = cluster.run_component("scheduler", "--leader-elect=false", fork_server=False)
        assert _ppid(run.pid) == os.getpid()
        with pytest.raises(TimeoutError):
            run.wait(0.1)
        wait_for(lambda: "healthz: http://" in run.log_text(), what="the scheduler's healthz line")  # its handlers
        run.send_signal(signal.SIGTERM)
        assert run.wait(30) == 0, run.log_text()


def test_components_are_named_by_the_table_or_by_package() -> None:
    assert package_of("controller-manager") == "controllers" == package_of("controllers")
    assert package_of("dns") == "clusterdns" and package_of("ui") == "kubelab.ui"
    assert package_of("console") == "console"  # any other package, run as `python -m`
    with pytest.raises(ValueError, match="no component"):
        package_of("not a package")
