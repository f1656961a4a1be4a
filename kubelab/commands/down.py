"""`kubelab down`: stop what `kubelab up` started, from ``<data-dir>/state.json``.

A foreground `up` is asked to stop its own cluster (SIGTERM to the launcher), so it can finish cleanly;
anything still running afterwards, or started by `up --detach`, is stopped here in reverse order.
The etcd data stays: the next `up` starts from it; ``--wipe`` deletes it (and the record of which etcd ran it),
so the next `up` starts afresh.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from kubelab import process
from kubelab.cluster import stop_records
from kubelab.etcdcluster import wipe
from kubelab.commands.up import DEFAULT_DATA_DIR
from kubelab.state import load_state, remove_state, state_path

__all__ = ["add_arguments", "run"]

LAUNCHER_GRACE = 30.0  # a foreground `up` stops its tiers with 10s timeouts each


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="the data dir given to `kubelab up`")
    parser.add_argument(
        "--timeout", type=float, default=10.0,
        help="seconds between SIGTERM and SIGKILL for each tier (default 10)",
    )  # fmt: skip
    parser.add_argument(
        "--wipe", action="store_true",
        help="also delete the etcd data (every object) and <data-dir>/etcd.json: the next `up` starts afresh",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir).absolute()
    state = load_state(data_dir)
    if state is None:
        print(f"kubelab: nothing to stop (no {state_path(data_dir)})")
        return _wipe(data_dir) if args.wipe else 0
    began = time.monotonic()
    if state.launcher_pid and process.pid_alive(state.launcher_pid, state.launcher_start_time):
        print(f"kubelab: asking the foreground `kubelab up` (pid {state.launcher_pid}) to stop ...")
        with contextlib.suppress(ProcessLookupError):
            os.kill(state.launcher_pid, signal.SIGTERM)
        deadline = time.monotonic() + LAUNCHER_GRACE
        while time.monotonic() < deadline and process.pid_alive(state.launcher_pid, state.launcher_start_time):
            time.sleep(0.1)
        state = load_state(data_dir) or state  # the launcher removes the file when it is done
    stopped = stop_records(state.processes, args.timeout)
    remove_state(data_dir)
    for record in stopped:
        print(f"  stopped {record.name:<20} pid {record.pid}")
    left = [r for r in state.processes if process.pid_alive(r.pid, r.start_time)]
    if left:
        names = ", ".join(f"{r.name} pid {r.pid}" for r in left)
        print(f"kubelab: could not stop {names}", file=sys.stderr)
        return 1
    if args.wipe:
        print(f"kubelab: down in {time.monotonic() - began:.1f}s")
        return _wipe(data_dir)
    print(f"kubelab: down in {time.monotonic() - began:.1f}s (etcd data kept in {data_dir / 'etcd'})")
    return 0


def _wipe(data_dir: Path) -> int:
    for path in wipe(data_dir):
        print(f"  deleted {path}")
    return 0
