"""A real scheduler's health endpoints, as kube-scheduler's: ``/healthz`` and ``/livez`` say the process serves,
``/readyz`` also that its informers have handed their first lists to its handlers (``sched-handler-sync``), so
whoever waits for it (a bench, a launcher) knows pods are scheduled against a full cache from then on."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import httpx

from kubelab.api import Cluster
from kubelab.etcd import free_port
from support.scheduler import SchedulerProcess
from support.wait import wait_for


def health_base(scheduler: SchedulerProcess) -> str:
    """The scheduler's health server, from the URL it prints when it listens."""
    def printed() -> str | None:
        found = re.search(r"healthz: (http://\S+)/healthz", scheduler.log())
        return found.group(1) if found else None
    return str(wait_for(printed, what="the scheduler's health server"))


def test_readyz_fails_until_the_informers_have_synced(tmp_path: Path) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"  # nothing listens there: the first lists never succeed
    scheduler = SchedulerProcess(nowhere, tmp_path / "scheduler.log", "--leader-elect=false")
    try:
        base = health_base(scheduler)
        assert httpx.get(f"{base}/healthz").text == "ok" and httpx.get(f"{base}/livez").text == "ok"
        ready = httpx.get(f"{base}/readyz")
        assert ready.status_code == 500, ready.text
        assert ready.text == "[+]ping ok\n[-]sched-handler-sync failed: reason withheld\nreadyz check failed\n"
    finally:
        scheduler.stop()


def test_readyz_passes_once_synced(apiserver: Cluster, tmp_path: Path) -> None:
    # Its own scheduler name: it binds no other test's pods.
    scheduler = SchedulerProcess(apiserver.api_url, tmp_path / "scheduler.log", "--leader-elect=false",
                                 "--scheduler-name", f"readyz-{uuid.uuid4().hex[:6]}")
    try:
        base = health_base(scheduler)
        wait_for(lambda: httpx.get(f"{base}/readyz").status_code == 200, what="the scheduler ready")
        assert httpx.get(f"{base}/readyz").text == "ok"
        verbose = httpx.get(f"{base}/readyz", params={"verbose": ""}).text
        assert verbose == "[+]ping ok\n[+]sched-handler-sync ok\nreadyz check passed\n", verbose
    finally:
        scheduler.stop()
