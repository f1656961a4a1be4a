"""The on-disk cache of the built-in OpenAPI encodings: what it serves is what a build gives, and a bad cache is a
miss."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from apiserver.openapi import diskcache, documents, v3
from apiserver.openapi.v2proto import document_to_proto


def clear() -> None:
    for cached in (documents.served, documents.v2_json, documents.v2_protobuf, documents.v3_documents,
                   documents.v3_discovery):
        cached.cache_clear()


@pytest.fixture()
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    clear()
    yield tmp_path / "kubelab" / "openapi"
    clear()


def built_v2() -> bytes:
    return document_to_proto(documents.served()).SerializeToString(deterministic=True)


def built_v3() -> dict[str, bytes]:
    return {gv: orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
            for gv, doc in v3.split_by_group_version(documents.served()).items()}


def test_the_first_process_writes_and_the_next_reads_the_same_bytes(cache_dir: Path) -> None:
    first_v2 = documents.v2_protobuf().body
    first_v3 = {gv: e.body for gv, e in documents.v3_documents().items()}
    assert sorted(p.suffix for p in cache_dir.iterdir()) == [".pb", ".v3"]
    clear()
    assert documents.v2_protobuf().body == first_v2 == built_v2()
    assert {gv: e.body for gv, e in documents.v3_documents().items()} == first_v3 == built_v3()


def test_a_cached_file_is_what_is_served(cache_dir: Path) -> None:
    """The read path is taken: a (hypothetical) stale file under the current key would be served as it is."""
    documents.v2_protobuf()
    (pb,) = cache_dir.glob("*.pb")
    pb.write_bytes(b"cached")
    clear()
    assert documents.v2_protobuf().body == b"cached"


def test_the_key_changes_with_the_document() -> None:
    assert diskcache.key(b"{}") != diskcache.key(b'{"swagger": "2.0"}')


def test_a_malformed_v3_file_is_rebuilt_and_rewritten(cache_dir: Path) -> None:
    documents.v3_documents()
    (packed,) = cache_dir.glob("*.v3")
    packed.write_bytes(packed.read_bytes()[:-1])  # truncated
    clear()
    assert {gv: e.body for gv, e in documents.v3_documents().items()} == built_v3()
    clear()
    documents.v3_documents()
    assert diskcache.unpack(packed.read_bytes()) == built_v3()


def test_an_unwritable_cache_still_serves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    clear()
    try:
        assert documents.v2_protobuf().body == built_v2()
        assert {gv: e.body for gv, e in documents.v3_documents().items()} == built_v3()
    finally:
        clear()


def test_custom_resources_are_never_cached(cache_dir: Path) -> None:
    definitions = {"com.example.v1.Widget": {"type": "object"}}
    paths = {"/apis/example.com/v1/widgets": {"get": {"operationId": "listWidgets"}}}
    documents.set_custom(definitions, paths)
    try:
        assert "com.example.v1.Widget" in documents.served()["definitions"]
        documents.v2_protobuf()
        documents.v3_documents()
        assert not cache_dir.exists()
    finally:
        documents.set_custom({}, {})


@pytest.mark.parametrize("data", [b"", b"not json\n", b'[["a", 3]]\nab', b'[["a", "x"]]\nab', b"{}\n"])
def test_unpack_refuses_what_pack_did_not_write(data: bytes) -> None:
    assert diskcache.unpack(data) is None


def test_pack_round_trips() -> None:
    parts = {"api/v1": b'{"a":1}', "apis": b"", "version": b"\n\n"}
    assert diskcache.unpack(diskcache.pack(parts)) == parts
