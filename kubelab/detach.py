"""Run the launcher as a detached supervisor: `kubelab up --detach` forks, the child starts and supervises the
cluster, and the parent shows the child's start-up output and returns once the child says the cluster is up.

Why a fork and not `up` starting the components and exiting: a process can only learn how its own children ended
(``waitpid``), and RESTARTS / LAST EXIT need the exit code or the signal. So the supervisor must be the parent of
every component, and the simplest such parent is the very process that starts them, exactly as in the foreground.

The child leaves the terminal's session (``setsid``: no Ctrl-C or hang-up reaches it), reads ``/dev/null``, and
writes its output to pipes the parent relays, and to its own log as well. When ``Console.detach`` is called
(everything is healthy) it says so on a third pipe and points its output at the log only; the parent, seeing
every pipe closed, returns 0. If the child exits instead (a start-up error: it has shown it and stopped what it
started), the parent returns the child's exit code. A signal to the parent during start-up (Ctrl-C) is passed on
to the child as SIGTERM, which stops what it started.
"""

from __future__ import annotations

import contextlib
import io
import os
import selectors
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import BinaryIO, TextIO

__all__ = ["Console", "run_detached"]

READY = b"ready"


class Console:
    """The child's side: its output goes to the parent's terminal and its log until ``detach``."""

    def __init__(self, log: Path, out: int, err: int, status: int) -> None:
        self.log = log
        self._status = status
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log: TextIO = open(log, "a", buffering=1)  # noqa: SIM115 (kept open for the process's life)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (out, err):
            os.close(fd)
        sys.stdout = _Tee(sys.stdout, self._log)
        sys.stderr = _Tee(sys.stderr, self._log)

    def detach(self) -> None:
        """The cluster is up: tell the parent, and from now on write to the log only."""
        sys.stdout.flush()
        sys.stderr.flush()
        with contextlib.suppress(OSError):  # a parent that is gone has nothing to return
            os.write(self._status, READY)
        os.close(self._status)
        os.dup2(self._log.fileno(), 1)  # closes the pipes: the parent sees them end
        os.dup2(self._log.fileno(), 2)
        sys.stdout = sys.stderr = self._log


class _Tee(io.TextIOBase):
    """Every write to the parent's pipe and to the log, flushed at once (the parent relays as the child writes).

    A parent that is gone (killed while it relayed) only costs the pipe: the log goes on, and start-up too."""

    def __init__(self, pipe: TextIO, log: TextIO) -> None:
        self._pipe: TextIO | None = pipe
        self._log = log

    def write(self, text: str) -> int:
        if self._pipe is not None:
            try:
                self._pipe.write(text)
                self._pipe.flush()
            except (OSError, ValueError):
                self._pipe = None
        self._log.write(text)
        self._log.flush()
        return len(text)

    def isatty(self) -> bool:
        return False


def run_detached(main: Callable[[Console], int], log: Path) -> int:
    """Fork: the child runs ``main(console)`` in its own session; the parent relays its output until it detaches
    (returns 0) or exits (returns its exit code)."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    status_r, status_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the supervisor
        code = 1
        try:
            os.setsid()
            for fd in (out_r, err_r, status_r):
                os.close(fd)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
            code = main(Console(log, out_w, err_w, status_w))
        except BaseException:
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(code)
    for fd in (out_w, err_w, status_w):
        os.close(fd)
    return _relay(pid, out_r, err_r, status_r)


def _relay(pid: int, out: int, err: int, status: int) -> int:
    """Copy the child's output until every pipe is closed; 0 if it said it is ready, else its exit code."""

    def forward(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    said = bytearray()
    sinks: dict[int, BinaryIO | bytearray] = {out: sys.stdout.buffer, err: sys.stderr.buffer, status: said}
    try:
        with selectors.DefaultSelector() as selector:
            for fd in sinks:
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map():
                for key, _ in selector.select():
                    data = os.read(key.fd, 65536)
                    if not data:
                        selector.unregister(key.fd)
                        os.close(key.fd)
                        continue
                    sink = sinks[key.fd]
                    if isinstance(sink, bytearray):
                        sink.extend(data)
                    else:
                        sink.write(data)
                        sink.flush()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if bytes(said) == READY:
        return 0  # the child runs on; init reaps it one day
    _, raw = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(raw)
