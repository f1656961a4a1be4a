"""A benchmark stopped with SIGTERM or SIGHUP (``kill``, a closed terminal, a CI timeout) stops as on Ctrl-C: its
``finally`` blocks and context managers stop the cluster and processes it started. Python's default for those
signals ends the process at once and leaves them running, holding ports, CPU and their data directories."""

from __future__ import annotations

import signal
from types import FrameType


def stop_on_termination() -> None:
    """Raise ``SystemExit`` (128 + the signal's number, the shell's convention) on SIGTERM and SIGHUP."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
