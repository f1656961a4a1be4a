"""The zygote that forks ``kubelab.Cluster``'s components (``kubelab/zygote.py``): what it forks is a real process
of its own (its session, its title in ps, its exit status reported), the supervisor restarts it after a kill, and
``stop()`` leaves nothing behind."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import kubelab
from kubelab import process, zygote
from support.wait import wait_for


@pytest.fixture(autouse=True)
def no_fsync(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")
    yield


def _ppid(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1])


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_a_forked_child_is_a_process_of_its_own_and_its_exit_is_reported(tmp_path: Path) -> None:
    forks = zygote.Zygote()
    started: list[zygote.ZygoteChild] = []
    try:
        log = tmp_path / "server.log"
        argv = [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"]
        child = forks.spawn("server", argv, log, cwd=tmp_path)
        started.append(child)
        assert child.pid != forks.pid and _ppid(child.pid) == forks.pid
        assert os.getsid(child.pid) == child.pid and os.getpgid(child.pid) == child.pid  # its own session
        assert wait_for(lambda: "Serving HTTP" in log.read_text(), what="the server's banner")
        assert "-m http.server 0 --bind 127.0.0.1" in _cmdline(child.pid)  # ps shows what runs
        assert os.readlink(f"/proc/{child.pid}/cwd") == str(tmp_path)
        assert child.poll() is None
        os.killpg(child.pid, signal.SIGTERM)
        status = wait_for(child.poll, what="the server's exit")
        assert status.signal_name == "SIGTERM"

        failing = forks.spawn("failing", [sys.executable, "-m", "json.tool", str(tmp_path / "absent.json")],
                              tmp_path / "failing.log")
        status = wait_for(failing.poll, what="json.tool's exit")
        assert status.code == 2  # as `python -m json.tool absent.json` exits (argparse's usage error)
        assert "absent.json" in (tmp_path / "failing.log").read_text()

        # its own environment (``site`` reads PYTHONUSERBASE when asked for the user base)
        printing = forks.spawn("site", [sys.executable, "-m", "site", "--user-base"], tmp_path / "site.log",
                               env={"PYTHONUSERBASE": str(tmp_path / "userbase")})
        assert wait_for(printing.poll, what="site's exit").code == 1  # as in a venv: user site-packages are off
        assert str(tmp_path / "userbase") in (tmp_path / "site.log").read_text()
    finally:
        for running in started:  # a failed assertion must not leave the server behind
            process.stop_group(running.pid, running.start_time, timeout=2.0)
        forks.close()
    assert forks.popen.returncode == 0  # the zygote exits when the launcher closes its socket


def test_a_library_cluster_forks_its_components_restarts_them_and_leaves_nothing() -> None:
    # The zygote is this process's: in a whole run it also serves the session's clusters (conftest's apiserver, the
    # plugin's idle one), which outlive this test; what this cluster forked must be gone after its stop.
    others = set(process.descendants(zygote.shared().pid).items())
    cluster = kubelab.Cluster(nodes=0, components=["apiserver", "scheduler"])
    cluster.start()
    try:
        forks = zygote.shared()
        records = {r.name: r for r in cluster.running.state.processes}
        scheduler = records["scheduler"]
        assert _ppid(scheduler.pid) == forks.pid and os.getsid(scheduler.pid) == scheduler.pid
        assert "-m scheduler --kubeconfig" in _cmdline(scheduler.pid)
        assert _ppid(records["apiserver"].pid) == forks.pid
        assert _ppid(records["etcd"].pid) == os.getpid()  # a binary: spawned as before

        killed = scheduler.pid
        os.kill(killed, signal.SIGKILL)

        def restarted() -> bool:
            cluster.running.supervise_once()
            return scheduler.restarts == 1 and scheduler.pid != killed and bool(scheduler.health_url) and \
                process.pid_alive(scheduler.pid)

        wait_for(restarted, what="the scheduler's restart")
        assert scheduler.last_exit_signal == "SIGKILL"
        assert _ppid(scheduler.pid) == forks.pid
        assert wait_for(lambda: _healthy(scheduler.health_url), what="the restarted scheduler's health")
        running = [(r.pid, r.start_time) for r in cluster.running.state.processes]
    finally:
        cluster.stop()
    assert not [pid for pid, start in running if process.pid_alive(pid, start)]
    assert set(process.descendants(zygote.shared().pid).items()) <= others  # it reaped everything it forked here


def _healthy(url: str | None) -> bool:
    try:
        return url is not None and httpx.get(url, timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False
