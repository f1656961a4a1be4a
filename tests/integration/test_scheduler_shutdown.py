"""A real scheduler whose apiserver is gone still stops promptly on SIGTERM, with status 0: whether it had synced
and led before the apiserver went away, or has never reached it (its informers still retrying their first list).
Each test runs its own apiserver (on the shared etcd), so stopping it leaves the other tests alone."""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest

from conftest import ApiServer
from kubelab.etcd import EtcdServer
from support.scheduler import SchedulerProcess, lease
from support.wait import wait_for


def terminate(scheduler: SchedulerProcess) -> int:
    """SIGTERM and wait (at most 15 s, longer than any lease deadline): the exit status."""
    scheduler.proc.send_signal(signal.SIGTERM)
    try:
        return scheduler.proc.wait(15)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the scheduler ignored SIGTERM for 15 s:\n{scheduler.log()[-3000:]}")


@pytest.mark.parametrize("leader_elect", ["true", "false"])
def test_sigterm_stops_a_scheduler_whose_apiserver_went_away(etcd: EtcdServer, tmp_path: Path,
                                                            leader_elect: str) -> None:
    api = ApiServer(etcd.url, tmp_path)
    api.start()
    lease_name = f"ks-{uuid.uuid4().hex[:8]}"
    scheduler = SchedulerProcess(api.url, tmp_path / "scheduler.log", f"--leader-elect={leader_elect}",
                                 f"--leader-elect-resource-name={lease_name}")
    try:
        if leader_elect == "true":
            with httpx.Client(base_url=api.url) as client:
                wait_for(lambda: lease(client, lease_name).get("spec", {}).get("holderIdentity"), what="the lease")
        else:
            time.sleep(1.0)  # let its informers list and start watching
        api.stop()
        wait_for(lambda: "failed" in scheduler.log(), what="the scheduler to notice the apiserver is gone")
        status = terminate(scheduler)
        assert status == 0, scheduler.log()[-3000:]
        assert "scheduler stopped" in scheduler.log()
    finally:
        scheduler.stop()
        api.stop()


@pytest.mark.parametrize("leader_elect", ["true", "false"])
def test_sigterm_stops_a_scheduler_that_never_reached_its_apiserver(etcd: EtcdServer, tmp_path: Path,
                                                                   leader_elect: str) -> None:
    api = ApiServer(etcd.url, tmp_path)  # its port is chosen; nothing listens there
    scheduler = SchedulerProcess(api.url, tmp_path / "scheduler.log", f"--leader-elect={leader_elect}")
    try:
        wait_for(lambda: "list failed" in scheduler.log(), what="the informers to retry their first list")
        status = terminate(scheduler)
        assert status == 0, scheduler.log()[-3000:]
        assert "scheduler stopped" in scheduler.log()
    finally:
        scheduler.stop()
