"""kube's ``AtomicWriter`` (``pkg/volume/util/atomic_writer.go``): a volume's files replaced all at once.

A reader (an in-cluster client re-reading its token, a process watching its ConfigMap) must never see half of an
update, so the files are never written in place. Layout of a target directory::

    ..2026_12_06_00_10_00.1234567/      one generation of the payload (files and their sub-directories)
    ..data -> ..2026_12_06_00_10_00.1234567
    token -> ..data/token               one link per top-level name of the payload
    ca.crt -> ..data/ca.crt

``write(payload)`` writes a new generation beside the old one, points a temporary ``..data_tmp`` link at it and
renames that over ``..data`` (one atomic ``rename``), then adds the top-level links the new payload needs, removes
those it no longer has and deletes the old generation. An unchanged payload writes nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

DATA_DIR = "..data"
DATA_TMP = "..data_tmp"

Payload = Mapping[str, tuple[bytes, int]]  # relative path → (content, file mode)


class PayloadError(ValueError):
    """A path of the payload is not a clean relative path."""


def _check(path: str) -> None:
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") or p.startswith("..") for p in parts):
        raise PayloadError(f"invalid path {path!r}")


def _current(target: Path) -> Path | None:
    link = target / DATA_DIR
    return target / os.readlink(link) if link.is_symlink() else None


def _unchanged(generation: Path | None, payload: Payload) -> bool:
    if generation is None or not generation.is_dir():
        return False
    present = {str(p.relative_to(generation)) for p in generation.rglob("*") if p.is_file()}
    if present != set(payload):
        return False
    return all((generation / path).read_bytes() == content and
               (generation / path).stat().st_mode & 0o7777 == mode for path, (content, mode) in payload.items())


def write(target: Path, payload: Payload) -> bool:
    """Make ``target`` hold exactly ``payload``; True when anything changed."""
    for path in payload:
        _check(path)
    target.mkdir(parents=True, exist_ok=True)
    old = _current(target)
    if _unchanged(old, payload):
        return False
    generation = Path(tempfile.mkdtemp(dir=target, prefix=time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())))
    generation.chmod(0o755)
    for path, (content, mode) in payload.items():
        file = generation / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(content)
        file.chmod(mode)
    tmp = target / DATA_TMP
    if tmp.is_symlink():
        tmp.unlink()
    tmp.symlink_to(generation.name)
    os.replace(tmp, target / DATA_DIR)
    wanted = {path.split("/")[0] for path in payload}
    for name in wanted:
        link = target / name
        if not link.is_symlink():
            link.symlink_to(f"{DATA_DIR}/{name}")
    for entry in target.iterdir():
        if not entry.name.startswith("..") and entry.name not in wanted:
            if entry.is_symlink() or entry.is_file():
                entry.unlink()
            else:
                shutil.rmtree(entry, ignore_errors=True)
    if old is not None and old != generation:
        shutil.rmtree(old, ignore_errors=True)
    return True
