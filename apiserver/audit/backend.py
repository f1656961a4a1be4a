"""The audit log backend: events leave the request path through a bounded deque, drained in batches on the loop.

``process`` is what the middleware calls, on the event loop: it only encodes the event and appends the line to a
deque of at most ``buffer_size`` lines, and, unless one is already due, schedules one drain on the loop
(``call_soon``). The drain runs after the requests the loop is busy with and writes every line queued meanwhile in
one ``write`` (up to ``BATCH_BYTES`` each): no thread, no lock, no wake-up per event, one system call per loop
iteration however many requests it served (a writer thread fed by ``queue.Queue`` cost a lock, a condition
notify and a GIL hand-off per event, and an unbuffered write each). Called outside a running loop (tests, the last
events at shutdown) it writes at once.

A full deque drops the event; a write that fails (``OSError``: a full disk, a path that cannot be created) loses
the lines of that write. Both are counted (``dropped``, ``failed``) and logged at most every ``LOG_EVERY`` seconds,
never raised: auditing must not fail or slow a request (kube's buffered backend drops the same way with
``apiserver_audit_event_total``/``apiserver_audit_error_total``). ``--audit-log-path -`` writes to stdout.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections import deque
from typing import Any, Protocol

import orjson

from .rotate import RotatingFile

__all__ = ["AuditBackend", "LogBackend"]

log = logging.getLogger(__name__)
LOG_EVERY = 10.0
BATCH_BYTES = 256 * 1024  # at most this much per write: far below the rotation size, bounded work per drain


class AuditBackend(Protocol):
    """Where audit events go (kube's ``audit.Backend``)."""

    def process(self, event: dict[str, Any]) -> None: ...

    def shutdown(self) -> None: ...


class _Stdout:
    def write(self, data: bytes) -> None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    def close(self) -> None:
        pass


class LogBackend:
    """JSON lines (``--audit-log-format json``) into a lumberjack-rotated file or stdout; see the module doc."""

    def __init__(self, path: str, *, max_size_mb: int = 0, max_backups: int = 0, max_age_days: int = 0,
                 buffer_size: int = 10_000) -> None:
        self.path = path
        self._out: RotatingFile | _Stdout = _Stdout() if path == "-" else RotatingFile(
            path, max_size_mb=max_size_mb, max_backups=max_backups, max_age_days=max_age_days)
        self._lines: deque[bytes] = deque()
        self._buffer_size = buffer_size
        self._drain_due = False
        self.dropped = 0
        self.failed = 0
        self.written = 0
        self._last_report = 0.0

    def process(self, event: dict[str, Any]) -> None:
        if len(self._lines) >= self._buffer_size:
            self.dropped += 1
            self._report()
            return
        self._lines.append(orjson.dumps(event) + b"\n")
        if self._drain_due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        self._drain_due = True
        loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write every queued line now (the scheduled drain; tests; shutdown)."""
        self._drain_due = False
        lines = self._lines
        while lines:
            batch = [lines.popleft()]
            size = len(batch[0])
            while lines and size + len(lines[0]) <= BATCH_BYTES:
                size += len(lines[0])
                batch.append(lines.popleft())
            try:
                self._out.write(b"".join(batch))
                self.written += len(batch)
            except (OSError, ValueError) as err:
                self.failed += len(batch)
                self._report(err)

    def _report(self, err: Exception | None = None) -> None:
        now = time.monotonic()
        if now - self._last_report >= LOG_EVERY:
            self._last_report = now
            log.warning("audit log %s: %d event(s) dropped (queue full), %d not written%s", self.path, self.dropped,
                        self.failed, f" (last error: {err})" if err else "")

    def shutdown(self) -> None:
        """Write what is queued, then close the file."""
        self.flush()
        self._out.close()
        if self.dropped or self.failed:
            log.warning("audit log %s: %d event(s) dropped, %d not written", self.path, self.dropped, self.failed)
