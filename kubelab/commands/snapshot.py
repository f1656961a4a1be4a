"""`kubelab snapshot save|restore|status`: back up and restore the cluster's etcd, as kubeadm clusters are.

``save FILE`` snapshots the running etcd over TLS (any member) and prints what ``etcdctl snapshot status``
prints; ``restore FILE`` (cluster stopped) rebuilds every member's data dir from it, so the next `kubelab up`
serves the objects of the snapshot; ``status FILE`` only prints the figures.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kubelab import process
from kubelab.commands.up import DEFAULT_DATA_DIR
from kubelab.snapshot import SnapshotError, restore, save, status
from kubelab.state import load_state

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="{save,restore,status}")
    for name, help in (("save", "save a snapshot of the running cluster's etcd to FILE (0600: it holds Secrets)"),
                       ("restore", "restore FILE into fresh etcd data dirs of a stopped cluster"),
                       ("status", "show a snapshot's size, revision, keys and hash")):
        sub = actions.add_parser(name, help=help, description=help)
        sub.add_argument("file", metavar="FILE")
        if name != "status":
            sub.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="the data dir given to `kubelab up`")
        if name == "restore":
            sub.add_argument("--etcd-members", type=int, choices=(1, 3, 5), default=1, metavar="N",
                             help="members to restore when the data dir has no etcd.json (default 1); "
                                  "otherwise the recorded members")


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        if args.action == "status":
            _print_status(status(path).lines())
            return 0
        data_dir = Path(args.data_dir).absolute()
        if args.action == "save":
            figures = save(data_dir, path)
            print(f"Snapshot saved at {path}")
            _print_status(figures.lines())
            return 0
        state = load_state(data_dir)
        alive = [r.name for r in state.processes if process.pid_alive(r.pid, r.start_time)] if state else []
        if alive:
            print(f"kubelab: the cluster in {data_dir} is running ({', '.join(alive)}); stop it first: "
                  f"kubelab down --data-dir {args.data_dir}", file=sys.stderr)
            return 1
        restored = restore(data_dir, path, args.etcd_members)
        for member_dir in restored:
            print(f"restored {path} into {member_dir}")
        print(f"Start the cluster over it: kubelab up --data-dir {args.data_dir}")
        return 0
    except (SnapshotError, OSError) as err:
        print(f"kubelab: {err}", file=sys.stderr)
        return 1


def _print_status(lines: list[str]) -> None:
    for line in lines:
        print(f"  {line}")
