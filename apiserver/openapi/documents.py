"""The served OpenAPI documents, encoded once and kept as bytes with their ETags.

Everything derives from ``swagger.json`` (written by ``tools/gen_openapi.py``). Encodings are built on first use
and cached for the life of the process, so a request only picks bytes: the v2 protobuf (3.3 MB) takes ~0.5 s of
CPU to build, the v3 documents ~0.2 s, and nothing after that. The built-in ones (no custom resources) are also
kept on disk (``diskcache``), so only the first process after a change of the document or its encoders builds
them; the others read them in a few ms. The apiserver builds them in a thread once it is ready (``preload``), as
kube-openapi builds its specs lazily: readiness does not wait for them, and the lock keeps a build that started
before a custom resource changed from being cached after it. ETags are what kube-openapi
computes: the upper-case hex SHA-512 of the encoded bytes. The v3 discovery document embeds each group-version's
ETag as ``?hash=``, which lets clients cache the group-version documents forever and refetch only when the hash in
discovery changes.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import threading
from pathlib import Path
from typing import Any

import orjson

from apiserver.openapi import diskcache, v3
from apiserver.openapi.v2proto import document_to_proto

SWAGGER_FILE = Path(__file__).with_name("swagger.json")
V3_PREFIX = "/openapi/v3/"
# Definitions and paths of what is served besides the built-in API (custom resources), set while running.
_custom: dict[str, dict[str, Any]] = {"definitions": {}, "paths": {}}
_building = threading.Lock()  # held by ``preload`` (a thread) and by ``set_custom`` (which invalidates its work)


class Encoded:
    """One encoding of one document: the bytes, their media type and ETag, and a gzipped copy made on demand."""

    def __init__(self, body: bytes, media_type: str) -> None:
        self.body = body
        self.media_type = media_type
        self.etag = hashlib.sha512(body).hexdigest().upper()

    @functools.cached_property
    def gzipped(self) -> bytes:
        return gzip.compress(self.body, compresslevel=6, mtime=0)


@functools.cache
def swagger_bytes() -> bytes:
    return SWAGGER_FILE.read_bytes()


@functools.cache
def swagger() -> dict[str, Any]:
    """The OpenAPI v2 document as plain data (callers must not mutate it)."""
    document: dict[str, Any] = orjson.loads(swagger_bytes())
    return document


def set_custom(definitions: dict[str, Any], paths: dict[str, Any]) -> None:
    """Publish the custom resources' definitions and paths: the documents (and their ETags, hence kubectl's
    caches) change with them."""
    with _building:
        if _custom == {"definitions": definitions, "paths": paths}:
            return
        _custom.update(definitions=definitions, paths=paths)
        for cached in (served, v2_json, v2_protobuf, v3_documents, v3_discovery):
            cached.cache_clear()


@functools.cache
def served() -> dict[str, Any]:
    """The document as served: the built-in API plus the custom resources (callers must not mutate it)."""
    base = swagger()
    if not _custom["paths"]:
        return base
    return {**base, "definitions": {**base["definitions"], **_custom["definitions"]},
            "paths": {**base["paths"], **_custom["paths"]}}


@functools.cache
def v2_json() -> Encoded:
    return Encoded(orjson.dumps(served(), option=orjson.OPT_SORT_KEYS), "application/json")


@functools.cache
def v2_protobuf() -> Encoded:
    def build() -> bytes:
        return document_to_proto(served()).SerializeToString(deterministic=True)

    body = build() if _custom["paths"] else diskcache.load_or_build(f"{_cache_key()}.v2.pb", build)
    return Encoded(body, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")


@functools.cache
def v3_documents() -> dict[str, Encoded]:
    """``api/v1`` → its OpenAPI 3.0 document, for every group-version (and group, ``api``, ``apis``, ``version``)."""
    return {gv: Encoded(body, "application/json") for gv, body in _v3_bodies().items()}


def _v3_bodies() -> dict[str, bytes]:
    def build() -> dict[str, bytes]:
        return {gv: orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
                for gv, doc in v3.split_by_group_version(served()).items()}

    if _custom["paths"]:
        return build()
    name = f"{_cache_key()}.v3"
    parts = diskcache.unpack(diskcache.load_or_build(name, lambda: diskcache.pack(build())))
    if parts is None:  # not a file this module wrote whole: build, and let the next process write it again
        diskcache.discard(name)
        return build()
    return parts


def _cache_key() -> str:
    return diskcache.key(swagger_bytes())


def v3_url(group_version: str) -> str:
    """The ``serverRelativeURL`` of a group-version document, pinned to its current content."""
    return f"{V3_PREFIX}{group_version}?hash={v3_documents()[group_version].etag}"


@functools.cache
def v3_discovery() -> Encoded:
    paths = {gv: {"serverRelativeURL": v3_url(gv)} for gv in v3_documents()}
    return Encoded(orjson.dumps({"paths": paths}, option=orjson.OPT_SORT_KEYS), "application/json")


def preload() -> None:
    """Build every encoding now (~0.8 s of CPU; in a thread once the apiserver is ready), so no kubectl waits for
    the first one."""
    with _building:
        v2_json()
        v2_protobuf()
        v3_discovery()
