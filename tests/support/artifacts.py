"""Where a test keeps what a person should be able to look at after the run (screenshots): the directory
``$KUBELAB_TEST_ARTIFACTS/<name>`` (``.ci/run`` sets it to ``.artifacts/``, which git ignores), else a temporary
one. ``check_png`` is what "a screenshot was taken" means: a PNG of a real size that is not a blank page."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import pytest

__all__ = ["artifacts_dir", "check_png"]

MIN_BYTES = 8_000  # a blank 1280×800 page compresses to ~4 KB; the console's pages are tens of KB


def artifacts_dir(name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = os.environ.get("KUBELAB_TEST_ARTIFACTS")
    if not root:
        return tmp_path_factory.mktemp(name)
    path = Path(root).resolve() / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_png(path: Path) -> tuple[int, int]:
    """``path`` is a PNG of at least 400×300 pixels with more than a blank page's bytes; its (width, height)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])  # IHDR, the first chunk
    assert width >= 400 and height >= 300, (path, width, height)
    assert len(data) >= MIN_BYTES, f"{path}: {len(data)} bytes, a blank page?"
    assert zlib.crc32(data[12:29]) == struct.unpack(">I", data[29:33])[0], f"{path}: a damaged IHDR"
    return width, height
