"""`kubelab status`: one row per process that `kubelab up` started, with its restarts, as `kubectl get pods`.

COMPONENT PID PORT HEALTH RESTARTS UPTIME LAST EXIT, under a line that names the supervisor (the `up` process
that restarts what exits) with its pid and log.

HEALTH is ``ok`` when the process answers its health URL (etcd /health, apiserver /healthz, or one a
component printed), ``running`` when it has no health URL but is alive, ``unhealthy`` when it is
alive but its health URL fails, ``restarting`` while the supervisor waits out its back-off, ``dead`` when
the process is gone and nothing will restart it. RESTARTS counts the supervisor's restarts (a pod's
``restartCount``); LAST EXIT says how the previous run ended and when: ``Error (exit 1) 2m ago``,
``Completed (exit 0) 5s ago``, ``signal SIGKILL 40s ago``. Exit code 0 only if every row is ok or running.
The first line also names each node's container runtime (``node01 linux://0.1.0``: Linux containers;
``process://0.1``: plain processes), as ``kubectl get nodes -o wide`` shows it, then the runtime and pod network
`kubelab up` chose, with why (``runtime: linux (auto: root, namespaces, ...), pod network: bridge``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from kubelab import auditpolicy, process
from kubelab.commands.up import DEFAULT_DATA_DIR
from kubelab.state import ClusterState, ProcessRecord, load_state, state_path
from kubelab.table import format_duration, render_table

__all__ = ["add_arguments", "health_of", "last_exit", "run"]

HEADERS = ("COMPONENT", "PID", "PORT", "HEALTH", "RESTARTS", "UPTIME", "LAST EXIT")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="the data dir given to `kubelab up`")


def health_of(record: ProcessRecord, client: httpx.Client, supervised: bool = False) -> str:
    if not process.pid_alive(record.pid, record.start_time):
        return "restarting" if supervised and record.restart_at is not None else "dead"
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


def last_exit(record: ProcessRecord, now: float) -> str:
    """How the previous run ended, as kubectl's LAST STATE reasons: ``Error (exit 1) 2m ago``, ``signal SIGKILL``."""
    if record.last_exit_signal is not None:
        what = f"signal {record.last_exit_signal}"
    elif record.last_exit_code is not None:
        what = f"{'Completed' if record.last_exit_code == 0 else 'Error'} (exit {record.last_exit_code})"
    elif record.last_exit_at is not None:
        what = "Unknown"
    else:
        return "-"
    return f"{what} {format_duration(now - record.last_exit_at)} ago" if record.last_exit_at is not None else what


def supervisor_of(state: ClusterState) -> str:
    if state.supervisor_pid and process.pid_alive(state.supervisor_pid, state.supervisor_start_time):
        if state.detached:
            return f"supervisor pid {state.supervisor_pid}, detached, log {state.supervisor_log}"
        return f"supervisor pid {state.supervisor_pid}, the foreground `kubelab up`"
    return "no supervisor: nothing restarts a component that exits"


def node_runtimes(client: httpx.Client, api_url: str) -> str:
    """Each node's ``status.nodeInfo.containerRuntimeVersion`` (``node01 linux://0.1.0``), or "" when the
    apiserver does not answer."""
    try:
        nodes = client.get(f"{api_url}/api/v1/nodes").json().get("items") or []
    except (httpx.HTTPError, ValueError):
        return ""
    info = ((n["metadata"]["name"], (n.get("status") or {}).get("nodeInfo") or {}) for n in nodes)
    return ", ".join(f"{name} {i.get('containerRuntimeVersion', '?')}" for name, i in info)


def run(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir).absolute()
    state = load_state(data_dir)
    if state is None:
        print(f"kubelab is not running (no {state_path(data_dir)})")
        return 1
    now = time.time()
    supervised = bool(state.supervisor_pid) and process.pid_alive(state.supervisor_pid, state.supervisor_start_time)
    with httpx.Client(timeout=2.0) as client:
        rows = [
            (
                record.name,
                str(record.pid),
                port_of(record),
                health,
                str(record.restarts),
                format_duration(now - record.started_at) if health not in ("dead", "restarting") else "-",
                last_exit(record, now),
            )
            for record in state.processes
            for health in (health_of(record, client, supervised),)
        ]
        runtimes = node_runtimes(client, state.api_url)
    nodes = f"; container runtime: {runtimes}" if runtimes else ""
    chosen = f"; runtime: {state.runtime}, pod network: {state.pod_network}" if state.runtime else ""
    secure = f" and {state.secure_url}" if state.secure_url else ""
    console = f", web console: {state.console_url}" if state.console_url else ""
    print(f"kubelab in {data_dir}: apiserver {state.api_url}{secure} ({supervisor_of(state)}), "
          f"kubeconfig {state.kubeconfig}{console}{nodes}{chosen}")
    print(render_table(HEADERS, rows))
    audit = data_dir / "logs" / auditpolicy.LOG_NAME
    if audit.exists():
        print(f"audit log: {audit} (policy {data_dir / auditpolicy.FILE_NAME}; `kubelab trace` reads it)")
    return 0 if rows and all(row[3] in ("ok", "running") for row in rows) else 1
