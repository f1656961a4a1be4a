"""Typed decoding of request objects against the served OpenAPI schema (what Go's JSON decoder does for
kube-apiserver).

kube-apiserver decodes a body into Go structs: a value of the wrong JSON type is a 400 ("json: cannot unmarshal
number into Go struct field PodSpec.spec.containers of type []v1.Container"), unknown fields are dropped — with a
``Warning`` header, or a 400 "strict decoding error" when the client asked for ``fieldValidation=Strict`` (kubectl
does) — and quantities are normalised to their canonical form. The schema is the same ``swagger.json`` the
OpenAPI endpoints serve, so one description of the types drives both.
"""

from __future__ import annotations

import base64
from typing import Any

from apimachinery import errors
from apimachinery.patch import go_json_kind
from apimachinery.quantity import parse_quantity

Schema = dict[str, Any]
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


class Decoder:
    """Checks and prunes objects of every served kind; built once from the OpenAPI definitions."""

    def __init__(self, definitions: dict[str, Schema]) -> None:
        self.definitions = definitions
        self.by_kind: dict[tuple[str, str, str], str] = {}
        for name, schema in definitions.items():
            for gvk in schema.get("x-kubernetes-group-version-kind") or []:
                self.by_kind.setdefault((gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", "")), name)

    def decode(self, obj: dict[str, Any], group: str, version: str, kind: str,
               field_validation: str = "Ignore") -> list[str]:
        """Check ``obj`` in place: prune unknown fields and canonicalise quantities. Returns the warnings
        (unknown fields) for ``Warn``; raises BadRequest for wrong types and, with ``Strict``, unknown fields."""
        name = self.by_kind.get((group, version, kind))
        if name is None:
            return []
        unknown: list[str] = []
        _Walk(self.definitions, kind, version, unknown).object(obj, name, "")
        if not unknown or field_validation == "Ignore":
            return []
        messages = [f'unknown field "{path}"' for path in unknown]
        if field_validation == "Strict":
            raise errors.BadRequest("strict decoding error: " + ", ".join(messages))
        return messages


class _Walk:
    def __init__(self, definitions: dict[str, Schema], kind: str, version: str, unknown: list[str]) -> None:
        self.definitions = definitions
        self.kind = kind
        self.version = version
        self.unknown = unknown

    def fail(self, value: Any, parent: str, path: str, go_type: str) -> errors.BadRequest:
        return errors.BadRequest(
            f'{self.kind} in version "{self.version}" cannot be handled as a {self.kind}: json: cannot unmarshal '
            f"{go_json_kind(value)} into Go struct field {parent}.{path} of type {go_type}")

    def go_type(self, schema: Schema) -> str:
        ref = schema.get("$ref")
        if ref:
            name = ref.rsplit("/", 1)[-1]
            if name == QUANTITY:
                return "resource.Quantity"
            if name == INT_OR_STRING:
                return "intstr.IntOrString"
            parts = name.split(".")
            return f"{parts[-2]}.{parts[-1]}"
        kind = schema.get("type")
        if kind == "array":
            return "[]" + self.go_type(schema.get("items") or {})
        if kind == "object":
            inner = schema.get("additionalProperties")
            return "map[string]" + (self.go_type(inner) if isinstance(inner, dict) else "interface {}")
        if kind == "string" and schema.get("format") == "byte":
            return "[]uint8"
        return {"integer": "int32", "number": "float64", "boolean": "bool"}.get(kind or "", "string")

    def object(self, obj: dict[str, Any], name: str, path: str) -> None:
        schema = self.definitions[name]
        properties = schema.get("properties")
        if not properties:
            return
        parent = name.rsplit(".", 1)[-1]
        for key in list(obj):
            child = f"{path}.{key}" if path else key
            prop = properties.get(key)
            if prop is None:
                self.unknown.append(child)
                del obj[key]
                continue
            value = obj[key]
            if value is None:
                del obj[key]  # null is the zero value: the field is absent
                continue
            obj[key] = self.value(value, prop, parent, child)

    def value(self, value: Any, schema: Schema, parent: str, path: str) -> Any:
        ref = schema.get("$ref")
        if ref:
            name = ref.rsplit("/", 1)[-1]
            if name == QUANTITY:
                return self.quantity(value, parent, path)
            if name == INT_OR_STRING:
                if isinstance(value, bool) or not isinstance(value, (int, str)):
                    raise self.fail(value, parent, path, "intstr.IntOrString")
                return value
            target = self.definitions.get(name, {})
            if target.get("type") == "string" or target.get("format") == "date-time":
                if not isinstance(value, str):
                    raise self.fail(value, parent, path, self.go_type(schema))
                return value
            if target.get("properties"):
                if not isinstance(value, dict):
                    raise self.fail(value, parent, path, self.go_type(schema))
                self.object(value, name, path)
            return value
        kind = schema.get("type")
        if kind == "string":
            if schema.get("format") == "int-or-string":
                if isinstance(value, bool) or not isinstance(value, (int, str)):
                    raise self.fail(value, parent, path, "intstr.IntOrString")
            elif not isinstance(value, str):
                raise self.fail(value, parent, path, self.go_type(schema))
            elif schema.get("format") == "byte":
                offset = base64_error_offset(value)
                if offset is not None:
                    raise errors.BadRequest(f'{self.kind} in version "{self.version}" cannot be handled as a '
                                            f"{self.kind}: illegal base64 data at input byte {offset}")
                return base64.b64encode(base64.b64decode(value)).decode()  # as Go re-encodes the bytes it read
        elif kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    return int(value)
                raise self.fail(value, parent, path, self.go_type(schema))
        elif kind == "number":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self.fail(value, parent, path, "float64")
        elif kind == "boolean":
            if not isinstance(value, bool):
                raise self.fail(value, parent, path, "bool")
        elif kind == "array":
            if not isinstance(value, list):
                raise self.fail(value, parent, path, self.go_type(schema))
            items = schema.get("items") or {}
            return [self.value(v, items, parent, path) if v is not None else self.zero(items) for v in value]
        elif kind == "object":
            if not isinstance(value, dict):
                raise self.fail(value, parent, path, self.go_type(schema))
            inner = schema.get("additionalProperties")
            if isinstance(inner, dict):
                for key in list(value):
                    item = value[key]
                    value[key] = self.value(item, inner, parent, path) if item is not None else self.zero(inner)
        return value

    def zero(self, schema: Schema) -> Any:
        """What Go's decoder leaves for a ``null`` list item or map value: the type's zero value (``{}`` for a
        struct, so a ``[null]`` of objects is validated as ``[{}]``; ``""`` for a string); nil (``None``) for
        slices, maps, pointers and times. A nil ``[]byte`` (a Secret's or ConfigMap's ``{"key": null}``) becomes
        empty bytes, ``""``, which Go would write back as ``null``: every reader of those maps expects strings."""
        ref = schema.get("$ref")
        if ref:
            name = ref.rsplit("/", 1)[-1]
            if name == QUANTITY:
                return "0"
            if name == INT_OR_STRING:
                return 0
            return {} if self.definitions.get(name, {}).get("properties") else None
        if schema.get("format") == "int-or-string":
            return 0
        return {"string": "", "integer": 0, "number": 0, "boolean": False}.get(schema.get("type") or "")

    def quantity(self, value: Any, parent: str, path: str) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.fail(value, parent, path, "resource.Quantity")
        try:
            return parse_quantity(value).canonical()
        except ValueError:
            raise errors.BadRequest(
                f'{self.kind} in version "{self.version}" cannot be handled as a {self.kind}: quantities must '
                f"match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'") from None


_BASE64_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES = frozenset(b"\r\n")


def base64_error_offset(text: str) -> int | None:
    """Where Go's ``base64.StdEncoding`` rejects ``text`` (the byte offset of its ``CorruptInputError``), or None
    when it decodes. Go's JSON decoder reads a ``[]byte`` field this way: padding required, CR/LF skipped."""
    src, si = text.encode(), 0
    while True:
        j = 0
        while j < 4:
            if si == len(src):
                return None if j == 0 else si - j
            c = src[si]
            si += 1
            if c in _NEWLINES:
                continue
            if c in _BASE64_ALPHABET:
                j += 1
                continue
            if c != ord("=") or j < 2:
                return si - 1
            if j == 2:  # "==" expected, the first one read
                while si < len(src) and src[si] in _NEWLINES:
                    si += 1
                if si == len(src):
                    return len(src)
                if src[si] != ord("="):
                    return si - 1
                si += 1
            while si < len(src) and src[si] in _NEWLINES:
                si += 1
            return si if si < len(src) else None


def field_validation_mode(params: Any) -> str:
    value = params.get("fieldValidation") or "Warn"
    if value not in FIELD_VALIDATION:
        raise errors.BadRequest(f'fieldValidation: Unsupported value: "{value}": supported values: "Ignore", '
                                f'"Strict", "Warn"')
    return value
