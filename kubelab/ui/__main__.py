"""``python -m kubelab.ui`` / ``kubelab ui``: the console with the trace and the explanation (see __init__)."""

from __future__ import annotations

import sys

from console.__main__ import main, parse_args
from kubelab.ui import providers


def run() -> None:
    args = parse_args(sys.argv[1:], prog="kubelab ui")
    scheduler = next((c.split("=", 1)[1] for c in args.component if c.startswith("scheduler=")), None)
    main(sys.argv[1:], providers(args.master, args.kubeconfig, scheduler), prog="kubelab ui")


if __name__ == "__main__":
    run()
