"""Private files written atomically: keys, certificates and kubeconfigs, for the launcher and the kubelet alike."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_private"]


def write_private(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` atomically with ``mode``, creating missing parent directories 0700."""
    _make_private_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _make_private_dirs(directory: Path) -> None:
    missing = []
    for d in (directory, *directory.parents):
        if d.exists():
            break
        missing.append(d)
    for d in reversed(missing):
        d.mkdir(mode=0o700)
        d.chmod(0o700)  # mkdir's mode is masked by the umask
