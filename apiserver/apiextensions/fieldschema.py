"""The server-side-apply type of a custom resource, from its structural schema.

The field manager reads types from OpenAPI *definitions* (named structs reached through ``$ref``). A CRD's
schema is one inline tree, so each nested object with ``properties`` becomes a definition of its own, named by
its path under the kind; ``metadata`` points at ObjectMeta; ``x-kubernetes-list-type``/``-list-map-keys`` and
``x-kubernetes-map-type`` carry over as they are, which is what makes applies merge lists as the CRD says.
"""

from __future__ import annotations

from typing import Any

from apiserver.fieldmanager import Schema as FieldSchema

from .crd import OBJECT_META

Schema = dict[str, Any]


def field_schema(base: dict[str, Schema], group: str, version: str, kind: str, schema: Schema) -> FieldSchema:
    """A field-manager ``Schema`` knowing ``kind`` (over the built-in ``base`` definitions, for ObjectMeta)."""
    root = f"custom.{group}.{version}.{kind}"
    definitions: dict[str, Schema] = {}
    top = _flatten(schema, root, definitions)
    if "$ref" not in top:  # a root without properties: still a struct, of apiVersion/kind/metadata
        definitions[root] = {"properties": {}, "type": "object"}
    definitions[root] = {**definitions[root], "x-kubernetes-group-version-kind": [
        {"group": group, "version": version, "kind": kind}]}
    props = definitions[root].setdefault("properties", {})
    props["metadata"] = {"$ref": f"#/definitions/{OBJECT_META}"}
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    return FieldSchema({**base, **definitions})


def _flatten(schema: Schema, name: str, out: dict[str, Schema]) -> Schema:
    if not isinstance(schema, dict):
        return {}
    kind = schema.get("type")
    if schema.get("properties"):
        props = {key: _flatten(sub, f"{name}.{key}", out) for key, sub in schema["properties"].items()}
        definition: Schema = {"properties": props, "type": "object"}
        if schema.get("x-kubernetes-map-type") == "atomic":
            definition["x-kubernetes-map-type"] = "atomic"
        out[name] = definition
        return {"$ref": f"#/definitions/{name}"}
    out_schema: Schema = {k: v for k, v in schema.items() if k.startswith("x-kubernetes-list")}
    if kind == "array":
        out_schema["type"] = "array"
        out_schema["items"] = _flatten(schema.get("items") or {}, f"{name}[]", out)
    elif kind == "object":
        out_schema["type"] = "object"
        inner = schema.get("additionalProperties")
        if isinstance(inner, dict):
            out_schema["additionalProperties"] = _flatten(inner, f"{name}{{}}", out)
        if schema.get("x-kubernetes-map-type") == "atomic":
            out[name] = {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {}}
            return {"$ref": f"#/definitions/{name}"}
    elif kind:
        out_schema["type"] = kind
    return out_schema
