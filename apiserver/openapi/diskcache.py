"""The built-in OpenAPI encodings kept on disk, keyed by everything that makes their bytes.

Why: the v2 protobuf and the v3 documents are pure functions of ``swagger.json`` and the code that encodes it,
and building them costs ~0.7 s of CPU — a third of an apiserver's cold start, paid again by every `kubelab up`
(in its zygote) and every fresh ``python -m apiserver``. The first process to build them writes the bytes here;
later ones read them (a few ms). The key is a SHA-256 of ``swagger.json``, of the encoders' sources and of the
versions of the libraries that encode (protobuf, orjson), so a change of any of them misses the cache and builds
anew: what is served is byte for byte what a build gives. Only the built-in documents are cached, never one with
custom resources in it. Files are written to a temporary name and renamed, so a reader sees a whole file or
none; an unreadable, unwritable or malformed cache is a miss, never an error. Where: ``$XDG_CACHE_HOME/kubelab/
openapi`` (default ``~/.cache/kubelab/openapi``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

import orjson

HERE = Path(__file__).parent
# What the encoded bytes depend on besides swagger.json: the encoders, and the generated protobuf classes.
SOURCES = ("documents.py", "v2proto.py", "v3.py", "openapiv2_pb2.py")
LIBRARIES = ("protobuf", "orjson")


def directory() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kubelab" / "openapi"


@functools.cache
def key(swagger: bytes) -> str:
    """The cache key of the built-in documents built from ``swagger`` (the file's bytes)."""
    digest = hashlib.sha256(swagger)
    for name in SOURCES:
        digest.update((HERE / name).read_bytes())
    for library in LIBRARIES:
        digest.update(f"{library}={metadata.version(library)}".encode())
    return digest.hexdigest()


def load_or_build(name: str, build: Callable[[], bytes]) -> bytes:
    """The cached bytes of ``name``, or ``build()``'s, written to the cache for the next process."""
    path = directory() / name
    with contextlib.suppress(OSError):
        return path.read_bytes()
    body = build()
    _write(path, body)
    return body


def pack(parts: dict[str, bytes]) -> bytes:
    """Several named bodies as one file: a JSON line of ``[name, length]`` pairs, then the bodies in turn."""
    index = [[name, len(body)] for name, body in parts.items()]
    return orjson.dumps(index) + b"\n" + b"".join(parts.values())


def unpack(data: bytes) -> dict[str, bytes] | None:
    """``pack``'s parts, or None when ``data`` is not a whole packed file."""
    head, newline, rest = data.partition(b"\n")
    try:
        index: Sequence[tuple[str, int]] = orjson.loads(head)
        if not newline or not isinstance(index, list) or sum(length for _, length in index) != len(rest):
            return None
        parts, at = {}, 0
        for name, length in index:
            parts[str(name)] = rest[at:at + length]
            at += length
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None
    return parts


def discard(name: str) -> None:
    """Remove a cache file found malformed."""
    with contextlib.suppress(OSError):
        (directory() / name).unlink()


def _write(path: Path, body: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(body)
        os.replace(temporary, path)
    except OSError:
        Path(temporary).unlink(missing_ok=True)
