"""`kubelab down`: stop what `kubelab up` started, from ``<data-dir>/state.json``.

The supervisor goes first (the `up` process, foreground or detached): asked with SIGUSR1, it restarts nothing
more, writes the state as it is and exits (SIGKILL after ``SUPERVISOR_GRACE`` if it does not). Then the
components are stopped here in reverse order — clients, apiserver, etcd — so nothing `down` stops is restarted.
The etcd data stays: the next `up` starts from it; ``--wipe`` deletes it (and the record of which etcd ran it),
so the next `up` starts afresh. Should a kubelet have needed SIGKILL, what it left (containers, pod sandboxes,
cgroups) is removed from its root directory (``kubelet.runtime.leftovers``).
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
from kubelab.cluster import remove_kubelet_leftovers, stop_records
from kubelab.commands.up import DEFAULT_DATA_DIR
from kubelab.etcdcluster import wipe
from kubelab.state import load_state, remove_state, state_path
from kubelet.network import ClusterNetwork, default_name, name_exists

__all__ = ["add_arguments", "run"]

SUPERVISOR_GRACE = 30.0  # a supervisor still starting the cluster stops what it started first (10s per tier)


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


def _remove_network(data_dir: Path) -> None:
    """`kubelab up --pod-network bridge`'s cluster network namespace, and with it every bridge, veth and rule."""
    name = default_name(data_dir)
    if name_exists(name):
        ClusterNetwork(name).remove()
        print(f"  removed cluster network {name}")


def _remove_leftovers(data_dir: Path) -> None:
    """What a kubelet that had to be killed left: its containers, pod sandboxes and cgroups (a kubelet stopped
    with SIGTERM stops its pods itself)."""
    for root, removed in remove_kubelet_leftovers(data_dir).items():
        print(f"  removed {len(removed)} pod(s) the kubelet left in {root}")


def run(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir).absolute()
    state = load_state(data_dir)
    if state is None:
        print(f"kubelab: nothing to stop (no {state_path(data_dir)})")
        return _wipe(data_dir) if args.wipe else 0
    began = time.monotonic()
    supervisor = state.supervisor_pid, state.supervisor_start_time
    if _stop_supervisor(*supervisor):
        print(f"  stopped {'supervisor':<20} pid {supervisor[0]}")
        state = load_state(data_dir) or state  # its last word: the pids of the latest restarts
    stopped = stop_records(state.processes, args.timeout)
    remove_state(data_dir)
    _remove_network(data_dir)
    for record in stopped:
        print(f"  stopped {record.name:<20} pid {record.pid}")
    left = [(r.name, r.pid) for r in state.processes if process.pid_alive(r.pid, r.start_time)]
    if not any(name.startswith("kubelet") for name, _ in left):
        _remove_leftovers(data_dir)
    if supervisor[0] and process.pid_alive(*supervisor):
        left.insert(0, ("supervisor", supervisor[0]))
    if left:
        print(f"kubelab: could not stop {', '.join(f'{name} pid {pid}' for name, pid in left)}", file=sys.stderr)
        return 1
    if args.wipe:
        print(f"kubelab: down in {time.monotonic() - began:.1f}s")
        return _wipe(data_dir)
    kept = f" (etcd data kept in {data_dir / 'etcd'})" if state.etcd_url else ""  # a joined node has no etcd
    print(f"kubelab: down in {time.monotonic() - began:.1f}s{kept}")
    return 0


def _stop_supervisor(pid: int | None, start_time: int | None) -> bool:
    """Ask the supervisor to restart nothing more and exit; SIGKILL it if it does not. True if it was running."""
    if not pid or not process.pid_alive(pid, start_time):
        return False
    print(f"kubelab: stopping the supervisor (pid {pid}) so that it restarts nothing ...")
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + SUPERVISOR_GRACE
    while time.monotonic() < deadline and process.pid_alive(pid, start_time):
        time.sleep(0.05)
    if process.pid_alive(pid, start_time):
        print(f"kubelab: the supervisor did not exit within {SUPERVISOR_GRACE:.0f}s: SIGKILL", file=sys.stderr)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            os.kill(pid, signal.SIGCONT)
        while process.pid_alive(pid, start_time) and time.monotonic() < deadline + 5:
            time.sleep(0.05)
    return True


def _wipe(data_dir: Path) -> int:
    for path in wipe(data_dir):
        print(f"  deleted {path}")
    return 0
