"""`kubelab image load FILE`: put an image tarball onto the cluster's nodes, as `kind load image-archive` does.

FILE is a `docker save` or OCI image-layout tarball (`kubelet.imagearchive` reads both). Each node's kubelet
keeps its images under `<root-dir>/images`; by default every node `kubelab up` started (`<data-dir>/kubelet/*`),
or the nodes named with `--nodes`, or the kubelet root directories given with `--root-dir`. The kubelets list
the image in their Node's `status.images` at their next heartbeat; a pod runs it with the linux runtime
(`imagePullPolicy: IfNotPresent` or `Never`, as with kind: there is no registry to pull it from).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kubelab.commands.up import DEFAULT_DATA_DIR
from kubelet.imagearchive import ArchiveError, load

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    loader = sub.add_parser("load", help="import a `docker save` or OCI image-layout tarball into the nodes")
    loader.add_argument("file", type=Path, help="the image tarball")
    loader.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="the data dir given to `kubelab up`")
    loader.add_argument("--nodes", default="", help="comma-separated node names (default: every node)")
    loader.add_argument("--root-dir", action="append", default=[], type=Path,
                        help="a kubelet's --root-dir to load into instead (repeatable)")


def node_roots(args: argparse.Namespace) -> list[Path]:
    if args.root_dir:
        return [Path(d) for d in args.root_dir]
    base = Path(args.data_dir) / "kubelet"
    wanted = {n for n in args.nodes.split(",") if n}
    found = sorted(d for d in base.glob("*") if d.is_dir() and d.name != "hollow")
    return [d for d in found if not wanted or d.name in wanted]


def run(args: argparse.Namespace) -> int:
    roots = node_roots(args)
    if not roots:
        print(f"no nodes to load into (no kubelet under {Path(args.data_dir) / 'kubelet'}; "
              "give --root-dir)", file=sys.stderr)
        return 1
    for root in roots:
        try:
            names = load(args.file, root / "images")
        except (ArchiveError, OSError) as err:
            print(f"ERROR: failed to load image: {err}", file=sys.stderr)
            return 1
        for name in names:
            print(f'Image: "{name}" loaded into {root.name}')
    return 0
