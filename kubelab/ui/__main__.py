"""``python -m kubelab.ui`` / ``kubelab ui``: the console with the trace and the explanation (see __init__)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from console.__main__ import main, parse_args
from kubelab.ui import providers


def run() -> None:
    own = argparse.ArgumentParser(add_help=False)  # the launcher's flag; the rest are the console's
    own.add_argument("--audit-log", default=None, metavar="PATH",
                     help="the apiserver's audit log, for the trace's exact (µs) times (as kubelab trace --audit-log)")
    ours, rest = own.parse_known_args(sys.argv[1:])
    args = parse_args(rest, prog="kubelab ui")
    scheduler = next((c.split("=", 1)[1] for c in args.component if c.startswith("scheduler=")), None)
    audit_log = Path(ours.audit_log) if ours.audit_log else None
    main(rest, providers(args.master, args.kubeconfig, scheduler, audit_log), prog="kubelab ui")


if __name__ == "__main__":
    run()
