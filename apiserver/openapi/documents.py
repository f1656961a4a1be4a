"""The served OpenAPI documents, encoded once and kept as bytes with their ETags.

Everything derives from ``swagger.json`` (written by ``tools/gen_openapi.py``). Encodings are built on first use
and cached for the life of the process, so a request only picks bytes: the v2 protobuf (~0.8 MB) takes ~50 ms to
build and nothing after that. ETags are what kube-openapi computes: the upper-case hex SHA-512 of the encoded
bytes. The v3 discovery document embeds each group-version's ETag as ``?hash=``, which lets clients cache the
group-version documents forever and refetch only when the hash in discovery changes.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
from pathlib import Path
from typing import Any

import orjson

from apiserver.openapi import v3
from apiserver.openapi.v2proto import document_to_proto

SWAGGER_FILE = Path(__file__).with_name("swagger.json")
V3_PREFIX = "/openapi/v3/"


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
def swagger() -> dict[str, Any]:
    """The OpenAPI v2 document as plain data (callers must not mutate it)."""
    document: dict[str, Any] = orjson.loads(SWAGGER_FILE.read_bytes())
    return document


@functools.cache
def v2_json() -> Encoded:
    return Encoded(orjson.dumps(swagger(), option=orjson.OPT_SORT_KEYS), "application/json")


@functools.cache
def v2_protobuf() -> Encoded:
    body = document_to_proto(swagger()).SerializeToString(deterministic=True)
    return Encoded(body, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")


@functools.cache
def v3_documents() -> dict[str, Encoded]:
    """``api/v1`` → its OpenAPI 3.0 document, for every group-version (and group, ``api``, ``apis``, ``version``)."""
    return {gv: Encoded(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS), "application/json")
            for gv, doc in v3.split_by_group_version(swagger()).items()}


def v3_url(group_version: str) -> str:
    """The ``serverRelativeURL`` of a group-version document, pinned to its current content."""
    return f"{V3_PREFIX}{group_version}?hash={v3_documents()[group_version].etag}"


@functools.cache
def v3_discovery() -> Encoded:
    paths = {gv: {"serverRelativeURL": v3_url(gv)} for gv in v3_documents()}
    return Encoded(orjson.dumps({"paths": paths}, option=orjson.OPT_SORT_KEYS), "application/json")


def preload() -> None:
    """Build every encoding now (~0.1 s), e.g. at apiserver startup, so no kubectl waits for the first one."""
    v2_json()
    v2_protobuf()
    v3_discovery()
