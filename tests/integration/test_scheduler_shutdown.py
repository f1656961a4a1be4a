"""A real scheduler whose apiserver is gone still stops promptly on SIGTERM, with status 0: whether it had synced
and led before the apiserver went away, or has never reached it (its informers still retrying their first list).
The first test runs an API-only ``kubelab.Cluster`` of its own, so stopping its apiserver leaves the other tests
alone; the second points the scheduler at a free port where nothing listens."""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

import httpx
import pytest

from conftest import api_only
from kubelab.api import Cluster
from kubelab.etcd import free_port
from support.scheduler import SchedulerProcess, lease
from support.wait import wait_for


def terminate(scheduler: SchedulerProcess) -> int:
    """SIGTERM and wait (at most 15 s, longer than any lease deadline): the exit status."""
    scheduler.send_signal(signal.SIGTERM)
    try:
        return scheduler.wait(15)
    except TimeoutError:
        pytest.fail(f"the scheduler ignored SIGTERM for 15 s:\n{scheduler.log()[-3000:]}")


@pytest.mark.parametrize("leader_elect", ["true", "false"])
def test_sigterm_stops_a_scheduler_whose_apiserver_went_away(tmp_path: Path, leader_elect: str) -> None:
    with api_only() as api:
        _scheduler_loses_its_apiserver(api, tmp_path, leader_elect)


def _scheduler_loses_its_apiserver(api: Cluster, tmp_path: Path, leader_elect: str) -> None:
    lease_name = f"ks-{uuid.uuid4().hex[:8]}"
    scheduler = SchedulerProcess(api.api_url, tmp_path / "scheduler.log", f"--leader-elect={leader_elect}",
                                 f"--leader-elect-resource-name={lease_name}")
    try:
        if leader_elect == "true":
            with httpx.Client(base_url=api.api_url) as client:
                wait_for(lambda: lease(client, lease_name).get("spec", {}).get("holderIdentity"), what="the lease")
        else:
            time.sleep(1.0)  # let its informers list and start watching
        api.stop_component("apiserver")
        wait_for(lambda: "failed" in scheduler.log(), what="the scheduler to notice the apiserver is gone")
        status = terminate(scheduler)
        assert status == 0, scheduler.log()[-3000:]
        assert "scheduler stopped" in scheduler.log()
    finally:
        scheduler.stop()


@pytest.mark.parametrize("leader_elect", ["true", "false"])
def test_sigterm_stops_a_scheduler_that_never_reached_its_apiserver(tmp_path: Path, leader_elect: str) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    scheduler = SchedulerProcess(nowhere, tmp_path / "scheduler.log", f"--leader-elect={leader_elect}")
    try:
        wait_for(lambda: "list failed" in scheduler.log(), what="the informers to retry their first list")
        status = terminate(scheduler)
        assert status == 0, scheduler.log()[-3000:]
        assert "scheduler stopped" in scheduler.log()
    finally:
        scheduler.stop()
