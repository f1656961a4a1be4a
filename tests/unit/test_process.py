"""``process.Spawned.reap`` and the launcher's stop: once a cluster is stopped, every process it started has been
waited for — none left running, no ``Popen`` dropped unwaited (Python 3.11 then says ``ResourceWarning: subprocess N
is still running`` in whatever test the worker runs when it is collected, an error under ``filterwarnings = error``).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kubelab import process
from kubelab.cluster import Cluster
from kubelab.components import HEALTH_URL_IN_LOG
from kubelab.etcd import find_etcd, free_port
from kubelab.health import PrintedHealth
from kubelab.state import ProcessRecord
from kubelab.supervisor import Unit

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_reap_waits_for_a_child_that_exits_in_time(tmp_path: Path) -> None:
    spawned = process.spawn("quick", [sys.executable, "-c", "raise SystemExit(3)"], tmp_path / "quick.log")
    assert spawned.reap(timeout=30) == process.ExitStatus(code=3)
    assert spawned.popen is not None and spawned.popen.returncode == 3


def test_reap_kills_and_waits_for_a_child_still_running_after_the_timeout(tmp_path: Path) -> None:
    spawned = process.spawn("sleeper", SLEEPER, tmp_path / "sleeper.log")
    assert spawned.reap(timeout=0.1) == process.ExitStatus(signal=signal.SIGKILL)
    assert spawned.popen is not None and spawned.popen.returncode == -signal.SIGKILL
    assert not process.pid_alive(spawned.pid)


def test_reap_never_signals_a_process_it_does_not_own(tmp_path: Path) -> None:
    """An adopted child (etcd, whose ``Popen`` is ``EtcdServer``'s) is its owner's to stop: reap only reports it."""
    owned = subprocess.Popen(SLEEPER)
    try:
        adopted = process.Spawned("etcd", owned.pid, tmp_path / "etcd.log")
        assert adopted.reap(timeout=0.1) is None
        assert owned.poll() is None
    finally:
        owned.kill()
        owned.wait()


def test_stop_reaps_a_child_its_tier_left_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Say the group stop gave up (its deadline passed on a loaded machine): stop still kills and waits for it."""
    cluster = Cluster(tmp_path, port=free_port(), nodes=0, etcd_binary=find_etcd(), etcd_tls=False,
                      pod_network="host")
    unit = Unit("apiserver", tuple(SLEEPER), tmp_path / "apiserver.log", PrintedHealth(HEALTH_URL_IN_LOG))
    record = ProcessRecord(name="apiserver", component="apiserver", pid=0, start_time=None, started_at=0.0,
                           log=str(unit.log))
    entry = cluster.supervisor.start(unit, record)
    cluster.state.processes.append(record)
    monkeypatch.setattr(process, "stop_groups", lambda targets, timeout: [])
    cluster.stop(timeout=0.1)
    assert isinstance(entry.child, process.Spawned) and entry.child.popen is not None
    assert entry.child.popen.returncode == -signal.SIGKILL
    assert not process.pid_alive(record.pid)
