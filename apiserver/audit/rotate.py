"""A log file that rotates as lumberjack (``gopkg.in/natefinch/lumberjack.v2``, kube-apiserver's audit log writer).

Before a write would take the file past ``max_size_mb`` megabytes (lumberjack's default 100 when 0), the file is
renamed to ``<name>-<UTC time as 2006-01-02T15-04-05.000><ext>`` beside it and a new one is started; then backups
beyond ``max_backups`` (0: keep all) and older than ``max_age_days`` (0: keep all), by the time in their name, are
removed. Not thread-safe: one writer (the backend's drain) owns it.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import BinaryIO

__all__ = ["BACKUP_TIME_FORMAT", "RotatingFile", "backup_name"]

MEGABYTE = 1024 * 1024
DEFAULT_MAX_SIZE_MB = 100
BACKUP_TIME_FORMAT = "%Y-%m-%dT%H-%M-%S"


def backup_name(path: Path, at: datetime) -> Path:
    stamp = at.strftime(BACKUP_TIME_FORMAT) + f".{at.microsecond // 1000:03d}"
    return path.with_name(f"{path.stem}-{stamp}{path.suffix}")


class RotatingFile:
    def __init__(self, path: str | Path, *, max_size_mb: int = 0, max_backups: int = 0, max_age_days: int = 0) -> None:
        self.path = Path(path)
        self.max_bytes = (max_size_mb or DEFAULT_MAX_SIZE_MB) * MEGABYTE
        self.max_backups = max_backups
        self.max_age_days = max_age_days
        self._file: BinaryIO | None = None
        self._size = 0
        self._backup = re.compile(re.escape(self.path.stem) + r"-(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3})"
                                  + re.escape(self.path.suffix) + "$")

    def write(self, data: bytes) -> None:
        """Append ``data`` (rotating first if it would not fit); raises ``OSError`` as the file system does."""
        if len(data) > self.max_bytes:
            raise OSError(f"write length {len(data)} exceeds maximum file size {self.max_bytes}")
        if self._file is None:
            self._open()
        if self._size + len(data) > self.max_bytes and self._size > 0:
            self.rotate()
        assert self._file is not None
        self._file.write(data)
        self._file.flush()
        self._size += len(data)

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # unbuffered: a failed write (ENOSPC) loses that line instead of piling up in a buffer
        self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 - closed by close() and rotate()
        self._size = self._file.tell()

    def rotate(self) -> None:
        self.close()
        if self.path.exists():
            os.replace(self.path, backup_name(self.path, datetime.now(UTC)))
        self._open()
        self._prune()

    def backups(self) -> list[tuple[datetime, Path]]:
        """The rotated files beside the log, newest first."""
        found = []
        for candidate in self.path.parent.iterdir():
            if m := self._backup.match(candidate.name):
                at = datetime.strptime(m.group(1), BACKUP_TIME_FORMAT + ".%f").replace(tzinfo=UTC)
                found.append((at, candidate))
        return sorted(found, reverse=True)

    def _prune(self) -> None:
        backups = self.backups()
        stale = backups[self.max_backups:] if self.max_backups else []
        if self.max_age_days:
            cutoff = datetime.now(UTC) - timedelta(days=self.max_age_days)
            stale += [b for b in backups if b[0] < cutoff and b not in stale]
        for _, path in stale:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
