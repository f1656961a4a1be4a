"""The audit log backend: events leave the request path through a bounded queue to one writer thread.

``process`` is what the middleware calls, on the event loop: it only encodes the event and puts it on a queue of
``buffer_size`` lines (``put_nowait``). A full queue drops the event; a write that fails (``OSError``: a full disk,
a path that cannot be created) loses that line. Both are counted (``dropped``, ``failed``) and logged at most every
``LOG_EVERY`` seconds, never raised: auditing must not fail or slow a request (kube's buffered backend drops the
same way with ``apiserver_audit_event_total``/``apiserver_audit_error_total``). ``--audit-log-path -`` writes
to stdout.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
import time
from typing import Any, Protocol

import orjson

from .rotate import RotatingFile

__all__ = ["AuditBackend", "LogBackend"]

log = logging.getLogger(__name__)
LOG_EVERY = 10.0
_STOP = b""


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
        self._queue: queue.Queue[bytes] = queue.Queue(buffer_size)
        self.dropped = 0
        self.failed = 0
        self.written = 0
        self._last_report = 0.0
        self._thread = threading.Thread(target=self._run, name="audit-log", daemon=True)
        self._thread.start()

    def process(self, event: dict[str, Any]) -> None:
        try:
            self._queue.put_nowait(orjson.dumps(event) + b"\n")
        except queue.Full:
            self.dropped += 1
            self._report()

    def _run(self) -> None:
        while (line := self._queue.get()) is not _STOP:
            try:
                self._out.write(line)
                self.written += 1
            except (OSError, ValueError) as err:
                self.failed += 1
                self._report(err)
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def _report(self, err: Exception | None = None) -> None:
        now = time.monotonic()
        if now - self._last_report >= LOG_EVERY:
            self._last_report = now
            log.warning("audit log %s: %d event(s) dropped (queue full), %d not written%s", self.path, self.dropped,
                        self.failed, f" (last error: {err})" if err else "")

    def flush(self) -> None:
        """Wait until every queued event has been written or has failed (tests, shutdown)."""
        self._queue.join()

    def shutdown(self) -> None:
        """Write what is queued, then stop the thread and close the file."""
        self._queue.put(_STOP)
        self._thread.join(timeout=5)
        self._out.close()
        if self.dropped or self.failed:
            log.warning("audit log %s: %d event(s) dropped, %d not written", self.path, self.dropped, self.failed)
