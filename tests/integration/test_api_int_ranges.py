"""Every int32 field (IntOrStrings too) of every kind the server creates, generated from its served OpenAPI,
posted out of range.

kube-apiserver decodes a body into Go structs before anything else, so a number that does not fit an int32 is a
400 "cannot unmarshal number … of type int32" whatever else is wrong with the object; never a 5xx and never
stored. The fields come from ``/openapi/v2``, so a kind or field added later is covered without touching this
test. A second test sends control characters where users put free text (field names, label values,
annotations) and checks every answer arrives whole, with ``Warning`` headers that parse as RFC 7234 says.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.builders import make_pod

Schema = dict[str, Any]
INT32_VALUES = (2**31, -(2**31) - 1)


def definition_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def int32_paths(definitions: dict[str, Schema], name: str, prefix: tuple[Any, ...] = (),
                seen: frozenset[str] = frozenset()) -> Iterator[tuple[Any, ...]]:
    """Paths (keys, 0 for a list item, "k" for a map value) to every int32 field reachable from ``name``."""
    if name in seen:
        return
    for key, prop in (definitions[name].get("properties") or {}).items():
        yield from _paths_in(definitions, prop, (*prefix, key), seen | {name})


def _paths_in(definitions: dict[str, Schema], schema: Schema, path: tuple[Any, ...],
              seen: frozenset[str]) -> Iterator[tuple[Any, ...]]:
    target = definitions.get(definition_name(schema["$ref"]), {}) if "$ref" in schema else schema
    if target.get("format") in ("int32", "int-or-string"):  # an IntOrString's number is read into its int32
        yield path
    elif "$ref" in schema:
        yield from int32_paths(definitions, definition_name(schema["$ref"]), path, seen)
    elif schema.get("type") == "array":
        yield from _paths_in(definitions, schema.get("items") or {}, (*path, 0), seen)
    elif schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict):
        yield from _paths_in(definitions, schema["additionalProperties"], (*path, "k"), seen)


def body_with(kind: Schema, path: tuple[Any, ...], value: int) -> dict[str, Any]:
    """A minimal object of ``kind`` with ``value`` at ``path`` (intermediate objects and lists created)."""
    group, version = kind["group"], kind["version"]
    obj: dict[str, Any] = {"apiVersion": f"{group}/{version}" if group else version, "kind": kind["kind"],
                           "metadata": {"name": "int-range"}}
    node: Any = obj
    for i, key in enumerate(path):
        last = i == len(path) - 1
        child: Any = value if last else [] if path[i + 1] == 0 else {}
        if isinstance(node, list):
            node.append(child)
        elif last:
            node[key] = child
        else:
            child = node.setdefault(key, child)
        node = child
    return obj


def go_path(path: tuple[Any, ...]) -> str:
    """The field path as Go's decoder names it: list indices and map keys dropped."""
    return ".".join(str(p) for p in path if isinstance(p, str) and p != "k")


def create_operations(document: Schema) -> Iterator[tuple[str, Schema, str]]:
    """(path template, group-version-kind, body definition) of every POST the document lists."""
    for path, item in sorted(document["paths"].items()):
        op = item.get("post")
        if not op:
            continue
        body = [p for p in [*op.get("parameters", []), *item.get("parameters", [])] if p.get("in") == "body"]
        gvk = op.get("x-kubernetes-group-version-kind")
        if body and gvk:
            yield path, gvk, definition_name(body[0]["schema"]["$ref"])


@pytest.fixture(scope="module")
def openapi(api_url: str) -> Schema:
    resp = httpx.get(f"{api_url}/openapi/v2", headers={"Accept": "application/json"}, timeout=60)
    assert resp.status_code == 200
    return resp.json()


def test_every_int32_field_out_of_range_is_400(client: httpx.Client, ns: str, openapi: Schema) -> None:
    definitions = openapi["definitions"]
    checked: set[str] = set()
    failures: list[str] = []
    for template, gvk, name in create_operations(openapi):
        url = template.replace("{namespace}", ns).replace("{name}", "int-range")
        for path in int32_paths(definitions, name):
            for value in INT32_VALUES:
                resp = client.post(url, json=body_with(gvk, path, value), params={"dryRun": "All"})
                expected = f"cannot unmarshal number {value} into Go struct field "
                field = go_path(path)
                ok = resp.status_code == 400 and expected in resp.json().get("message", "") and \
                    resp.json()["message"].endswith(f".{field} of type int32")
                if not ok:
                    failures.append(f"POST {template} {field}={value}: {resp.status_code} {resp.text[:300]}")
                assert resp.status_code < 500, failures[-1]
            checked.add(f"{gvk['kind']}.{go_path(path)}")
    assert not failures, "\n".join(failures[:40]) + f"\n({len(failures)} failures)"
    # the generator found the fields of the issue, so the test cannot pass by finding nothing
    for field in ("ReplicationController.spec.replicas", "Deployment.spec.replicas",
                  "Pod.spec.containers.ports.containerPort", "Service.spec.ports.port", "Job.spec.backoffLimit",
                  "Service.spec.ports.targetPort", "Deployment.spec.strategy.rollingUpdate.maxSurge"):
        assert field in checked
    assert len(checked) > 300
    assert client.get(f"/api/v1/namespaces/{ns}/pods").json()["items"] == []


WARNING = re.compile(r'(\d{3}) (\S+) "((?:[^"\\]|\\.)*)"')


def parse_warnings(values: list[str]) -> list[str]:
    """client-go's ``ParseWarningHeaders``: ``299 - "text"`` with quotes and backslashes escaped."""
    texts = []
    for value in values:
        m = WARNING.fullmatch(value)
        assert m, f"unparseable Warning header {value!r}"
        assert m[1] == "299" and m[2] == "-"
        assert not any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)
        texts.append(re.sub(r"\\(.)", r"\1", m[3]))
    return texts


CONTROL = ["\n", "\r", "\t", "\x00", "\x1b[31m", "\x7f", "\u0085", '"\\', "é\u2028"]


def test_control_characters_always_get_a_whole_response(client: httpx.Client, ns: str) -> None:
    for i, ch in enumerate(CONTROL):
        cases: list[tuple[str, dict[str, Any], int]] = []
        pod = make_pod(f"field-{i}").build()
        pod["spec"][f"bad{ch}field"] = 1
        pod["metadata"][f"x{ch}"] = "y"
        cases.append(("field name", pod, 201))
        pod = make_pod(f"label-{i}").build()
        pod["metadata"]["labels"] = {"app": f"a{ch}b"}
        cases.append(("label value", pod, 422))
        pod = make_pod(f"annotation-{i}").build()
        pod["metadata"]["annotations"] = {"note": f"a{ch}b", f"bad{ch}key": "v"}
        cases.append(("annotation", pod, 422))
        pod = make_pod(f"annotation-ok-{i}").build()
        pod["metadata"]["annotations"] = {"note": f"a{ch}b"}
        cases.append(("annotation value", pod, 201))
        for what, body, code in cases:
            for params in ({"dryRun": "All"}, {}):
                try:
                    resp = client.post(f"/api/v1/namespaces/{ns}/pods", json=body, params=params)
                except httpx.HTTPError as err:  # an empty or cut reply
                    pytest.fail(f"{what} with {ch!r}: no whole response: {err!r}")
                assert resp.status_code == code, f"{what} {ch!r}: {resp.status_code} {resp.text}"
                assert resp.json()["kind"] == ("Pod" if code == 201 else "Status")
                texts = parse_warnings(resp.headers.get_list("warning"))
                if what == "field name" and resp.status_code == 201:
                    assert any(t.startswith('unknown field "spec.bad') for t in texts), texts
        assert client.get("/healthz").text == "ok"
