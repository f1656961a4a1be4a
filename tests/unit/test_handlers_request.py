"""apiserver.handlers.request: body limits (size, nesting), YAML numbers as kube reads them, query parameters."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from apimachinery import errors
from apiserver.handlers.request import (
    MAX_DEPTH,
    Output,
    bool_param,
    decode_body,
    depth_exceeds,
    int_param,
    limit_body,
)
from apiserver.handlers.responses import render_object


def test_yaml_whole_numbers_become_ints_and_huge_ones_floats() -> None:
    assert decode_body(b"a: 2.0\nb: 1.5\nc: [3.0, 99999999999999999999999]\nd: true\n", "application/yaml") == {
        "a": 2, "b": 1.5, "c": [3, 1e23], "d": True}
    with pytest.raises(errors.BadRequest, match=r"json: unsupported value: \+Inf"):
        decode_body(b"a: " + b"9" * 400, "application/yaml")


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
def test_nesting_past_the_limit_is_400(content_type: str) -> None:
    ok = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert not depth_exceeds(decode_body(ok, content_type), MAX_DEPTH)
    for depth in (MAX_DEPTH + 1, 2000, 100_000):
        with pytest.raises(errors.BadRequest, match=f"exceeded max depth of {MAX_DEPTH}"):
            decode_body(b"[" * depth + b"]" * depth, content_type)


def test_depth_counts_objects_and_arrays() -> None:
    assert depth_exceeds({"a": [{"b": 1}]}, 2) and not depth_exceeds({"a": [{"b": 1}]}, 3)
    assert not depth_exceeds("scalar", 0)


def test_query_parameters_convert_as_kube_does() -> None:
    params = {"a": "12", "b": "abc", "c": "9223372036854775808", "d": "-3", "e": ""}
    assert int_param(params, "a") == 12 and int_param(params, "d") == -3 and int_param(params, "x") is None
    assert int_param(params, "e") is None
    with pytest.raises(errors.BadRequest, match='strconv.ParseInt: parsing "abc": invalid syntax'):
        int_param(params, "b")
    with pytest.raises(errors.BadRequest, match='parsing "9223372036854775808": value out of range'):
        int_param(params, "c")
    flags = {"t": "true", "one": "1", "yes": "yes", "empty": "", "f": "FALSE", "zero": "0"}
    assert [bool_param(flags, k) for k in ("t", "one", "yes", "empty", "f", "zero", "absent")] == [
        True, True, True, True, False, False, False]


def test_limit_body_refuses_by_content_length_and_while_reading() -> None:
    with pytest.raises(errors.RequestEntityTooLarge, match="limit is 10"):
        limit_body({"headers": [(b"content-length", b"11")]}, None, limit=10)
    chunks = [{"type": "http.request", "body": b"x" * 6, "more_body": True},
              {"type": "http.request", "body": b"x" * 6, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return chunks.pop(0)

    limited = limit_body({"headers": []}, receive, limit=10)
    assert asyncio.run(limited())["body"] == b"x" * 6
    with pytest.raises(errors.RequestEntityTooLarge):
        asyncio.run(limited())


def test_a_table_that_fails_to_render_falls_back_to_the_object() -> None:
    """A committed write's answer is never lost to a rendering error (the Table view is the one that can fail)."""
    class Broken:
        kind = "Pod"

        def __getattr__(self, name: str) -> object:
            raise RuntimeError("boom")

    obj = {"kind": "Pod", "metadata": {"name": "p"}}
    co = SimpleNamespace(obj=obj, raw=b'{"kind":"Pod","metadata":{"name":"p"}}', rv=5)
    response = render_object(SimpleNamespace(strategy=Broken()), co, Output(table=True), {}, 201)  # type: ignore[arg-type]
    assert response.status_code == 201 and response.body == co.raw


def test_a_proxy_path_keeps_what_follows_proxy() -> None:
    from apiserver.handlers.request import parse_path

    info = parse_path("", "v1", "namespaces/default/services/http:web:80/proxy/a/b/")
    assert (info.resource, info.name, info.subresource, info.proxy_path) == ("services", "http:web:80", "proxy",
                                                                             "/a/b/")
    assert parse_path("", "v1", "nodes/node01/proxy").proxy_path == ""
    assert parse_path("", "v1", "nodes/node01/proxy/").proxy_path == "/"
    with pytest.raises(errors.NotFound):
        parse_path("", "v1", "namespaces/default/pods/web/log/extra")
