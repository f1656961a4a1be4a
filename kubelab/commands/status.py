"""`kubelab status`: one row per process that `kubelab up` started: COMPONENT PID PORT HEALTH UPTIME.

HEALTH is ``ok`` when the process answers its health URL (etcd /health, apiserver /healthz, or one a
component printed), ``running`` when it has no health URL but is alive, ``unhealthy`` when it is
alive but its health URL fails, ``dead`` when the process is gone. Exit code 0 only if every row is
ok or running.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from kubelab import process
from kubelab.commands.up import DEFAULT_DATA_DIR
from kubelab.state import ProcessRecord, load_state, state_path
from kubelab.table import format_duration, render_table

__all__ = ["add_arguments", "health_of", "run"]

HEADERS = ("COMPONENT", "PID", "PORT", "HEALTH", "UPTIME")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="the data dir given to `kubelab up`")


def health_of(record: ProcessRecord, client: httpx.Client) -> str:
    if not process.pid_alive(record.pid, record.start_time):
        return "dead"
    if not record.health_url:
        return "running"
    try:
        r = client.get(record.health_url)
    except httpx.HTTPError:
        return "unhealthy"
    return "ok" if r.status_code == 200 else "unhealthy"


def port_of(record: ProcessRecord) -> str:
    """The port it was given, else the one its health URL names (the scheduler's and controller-manager's)."""
    port = record.port or (urlsplit(record.health_url).port if record.health_url else None)
    return str(port) if port else "-"


def run(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir).absolute()
    state = load_state(data_dir)
    if state is None:
        print(f"kubelab is not running (no {state_path(data_dir)})")
        return 1
    now = time.time()
    with httpx.Client(timeout=2.0) as client:
        rows = [
            (
                record.name,
                str(record.pid),
                port_of(record),
                health,
                format_duration(now - record.started_at) if health != "dead" else "-",
            )
            for record in state.processes
            for health in (health_of(record, client),)
        ]
    mode = (
        f"foreground launcher pid {state.launcher_pid}"
        if state.launcher_pid and process.pid_alive(state.launcher_pid, state.launcher_start_time)
        else "detached"
    )
    print(f"kubelab in {data_dir}: apiserver {state.api_url} ({mode}), kubeconfig {state.kubeconfig}")
    print(render_table(HEADERS, rows))
    return 0 if rows and all(row[3] in ("ok", "running") for row in rows) else 1
