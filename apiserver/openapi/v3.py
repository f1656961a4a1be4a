"""OpenAPI v3 documents, one per group-version, derived from the v2 document.

kube-apiserver publishes ``/openapi/v3`` as a discovery document whose ``paths`` map a group-version
(``api/v1``, ``apis/apps/v1``, also ``api``, ``apis``, ``apis/apps``, ``version``) to a ``serverRelativeURL``;
each of those URLs serves an OpenAPI 3.0 document holding that group-version's paths and every schema they
reach. kubectl uses them for ``explain`` and to learn whether a kind's PATCH operation takes ``fieldValidation``.

Conversion rules (what kube-openapi's v3 builder produces for the same Go types):

* ``#/definitions/X`` → ``#/components/schemas/X``; a ``$ref`` with siblings (a field's description) is wrapped
  as ``allOf: [{$ref}]`` so the siblings stay meaningful in OpenAPI 3;
* types whose Go value may take two JSON types are ``oneOf`` (``V3_ONE_OF``), not v2's ``type`` + ``format``;
* a body parameter becomes ``requestBody`` with one entry per ``consumes`` type; responses get ``content`` per
  ``produces`` type; other parameters keep ``name``/``in``/``required`` and move their type under ``schema``.
"""

from __future__ import annotations

import copy
import re
from typing import Any

Json = dict[str, Any]

V3_ONE_OF: dict[str, list[str]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": ["integer", "string"],
    "io.k8s.apimachinery.pkg.api.resource.Quantity": ["string", "number"],
}
_REF = re.compile(r"^#/definitions/")
_PARAMETER_KEYS = ("description", "in", "name", "required")


def group_version_of(path: str) -> str:
    """The v3 document a path belongs to: ``/api/v1/pods`` → ``api/v1``, ``/apis/apps/`` → ``apis/apps``."""
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        return "/".join(parts[:2])
    if parts[0] == "apis":
        return "/".join(parts[:3])
    return parts[0]


def split_by_group_version(swagger: Json) -> dict[str, Json]:
    """Every group-version's OpenAPI 3.0 document, keyed as ``/openapi/v3`` lists them."""
    grouped: dict[str, dict[str, Json]] = {}
    for path, item in swagger["paths"].items():
        grouped.setdefault(group_version_of(path), {})[path] = item
    return {gv: _document(swagger, paths) for gv, paths in sorted(grouped.items())}


def _document(swagger: Json, paths: dict[str, Json]) -> Json:
    definitions = swagger["definitions"]
    converted = {path: _path_item(item) for path, item in paths.items()}
    schemas = {name: schema_to_v3(definitions[name], name) for name in sorted(_closure(converted, definitions))}
    components: Json = {"schemas": schemas}
    if "securityDefinitions" in swagger:
        components["securitySchemes"] = copy.deepcopy(swagger["securityDefinitions"])
    out: Json = {"components": components, "info": dict(swagger["info"]), "openapi": "3.0.0", "paths": converted}
    if "security" in swagger:
        out["security"] = copy.deepcopy(swagger["security"])
    return out


def _closure(tree: Any, definitions: Json) -> set[str]:
    """Names of every schema the converted paths reach, following refs through the definitions."""
    seen: set[str] = set()
    pending = _refs(tree)
    while pending:
        name = pending.pop()
        if name not in seen:
            seen.add(name)
            pending |= _refs(definitions[name]) - seen
    return seen


def _refs(tree: Any) -> set[str]:
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                found.add(ref.rsplit("/", 1)[-1])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def schema_to_v3(schema: Json, name: str = "") -> Json:
    """One schema in v3 form (``name`` is the definition's own name, for ``V3_ONE_OF``)."""
    if name in V3_ONE_OF:
        out = {k: v for k, v in schema.items() if k != "type"}
        out["oneOf"] = [{"type": t} for t in V3_ONE_OF[name]]
        return out
    out = {}
    for key, value in schema.items():
        if key == "$ref":
            continue
        if key == "properties":
            out[key] = {prop: schema_to_v3(s) for prop, s in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = schema_to_v3(value)
        elif key == "allOf":
            out[key] = [schema_to_v3(s) for s in value]
        else:
            out[key] = copy.deepcopy(value)
    if "$ref" in schema:
        ref = {"$ref": _REF.sub("#/components/schemas/", schema["$ref"])}
        return {"allOf": [ref], **out} if out else ref
    return out


def _path_item(item: Json) -> Json:
    out: Json = {}
    for key, value in item.items():
        if key == "parameters":
            out[key] = [_parameter(p) for p in value]
        elif isinstance(value, dict) and key in ("get", "put", "post", "delete", "patch", "head", "options"):
            out[key] = _operation(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _operation(op: Json) -> Json:
    consumes, produces = op.get("consumes", []), op.get("produces", [])
    out: Json = {}
    for key, value in op.items():
        if key in ("consumes", "produces", "schemes"):
            continue
        if key == "parameters":
            body = [p for p in value if p["in"] == "body"]
            params = [_parameter(p) for p in value if p["in"] != "body"]
            if params:
                out["parameters"] = params
            if body:
                out["requestBody"] = _request_body(body[0], consumes)
        elif key == "responses":
            out[key] = {code: _response(r, produces) for code, r in value.items()}
        else:
            out[key] = copy.deepcopy(value)
    return out


def _parameter(param: Json) -> Json:
    out = {k: param[k] for k in _PARAMETER_KEYS if k in param}
    schema = {k: v for k, v in param.items() if k not in _PARAMETER_KEYS}
    out["schema"] = schema_to_v3(schema)
    return out


def _request_body(body: Json, consumes: list[str]) -> Json:
    schema = schema_to_v3(body["schema"])
    out: Json = {"content": {media: {"schema": schema} for media in consumes}}
    if body.get("required"):
        out["required"] = True
    return out


def _response(response: Json, produces: list[str]) -> Json:
    out: Json = {"description": response.get("description", "")}
    if "schema" in response:
        schema = schema_to_v3(response["schema"])
        out["content"] = {media: {"schema": schema} for media in produces}
    return out
