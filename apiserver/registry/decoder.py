"""Typed decoding of request objects against the served OpenAPI schema (what Go's JSON decoder does for
kube-apiserver).

kube-apiserver decodes a body into Go structs: a value of the wrong JSON type is a 400 ("json: cannot unmarshal
number into Go struct field PodSpec.spec.containers of type []v1.Container"), unknown fields are dropped — with a
``Warning`` header, or a 400 "strict decoding error" when the client asked for ``fieldValidation=Strict`` (kubectl
does) — and quantities are normalised to their canonical form. Integer fields are Go ``int32``/``int64`` (the
schema's ``format``): a value out of that range, or any JSON number with a fraction or an exponent, is the 400
Go's decoder gives ("cannot unmarshal number 2147483648 into Go struct field ReplicationControllerSpec.spec.replicas
of type int32"), so what is stored is always an int that fits. The schema is the same ``swagger.json`` the OpenAPI
endpoints serve, so one description of the types drives both.

An update's object is decoded against the stored one it replaces (``old``): a field whose value equals the stored
object's is not walked, since what is stored was decoded when it was written (pruned, canonical, in range) and
decoding is idempotent. A status update or a patch of one field then walks what changed, not the whole object.
"""

from __future__ import annotations

import base64
from typing import Any, Protocol

import orjson

from apimachinery import errors
from apimachinery.patch import go_json_kind
from apimachinery.quantity import parse_quantity
from apimachinery.validation import go_quote, not_supported

Schema = dict[str, Any]
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
FIELD_VALIDATION = ("Ignore", "Warn", "Strict")
INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class BodyDecoder(Protocol):
    """What a store asks of a request body's decoder: check ``obj`` in place (prune, canonicalise, default) and
    return the warnings; a wrong body raises a StatusError. ``Decoder`` for built-in kinds, the custom resource
    decoder (``apiextensions.strategy``) for custom resources."""

    def decode(self, obj: dict[str, Any], group: str, version: str, kind: str,
               field_validation: str = "Ignore", old: dict[str, Any] | None = None) -> list[str]: ...


class Decoder:
    """Checks and prunes objects of every served kind; built once from the OpenAPI definitions."""

    def __init__(self, definitions: dict[str, Schema]) -> None:
        self.definitions = definitions
        self.by_kind: dict[tuple[str, str, str], str] = {}
        for name, schema in definitions.items():
            for gvk in schema.get("x-kubernetes-group-version-kind") or []:
                self.by_kind.setdefault((gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", "")), name)

    def decode(self, obj: dict[str, Any], group: str, version: str, kind: str,
               field_validation: str = "Ignore", old: dict[str, Any] | None = None) -> list[str]:
        """Check ``obj`` in place: prune unknown fields and canonicalise quantities. Returns the warnings
        (unknown fields) for ``Warn``; raises BadRequest for wrong types and, with ``Strict``, unknown fields.
        ``old``: the stored object an update replaces, whose equal fields are not walked again."""
        name = self.by_kind.get((group, version, kind))
        if name is None:
            return []
        unknown: list[str] = []
        _Walk(self.definitions, kind, version, unknown).object(obj, name, "", old)
        return unknown_fields(unknown, field_validation)

    def unknown_in(self, obj: dict[str, Any], definition: str, kind: str, version: str, path: str) -> list[str]:
        """Check and prune ``obj`` as the named definition at ``path`` (a custom resource's ObjectMeta); returns
        the unknown fields' paths. Wrong types are a 400, as for built-in kinds."""
        unknown: list[str] = []
        _Walk(self.definitions, kind, version, unknown).object(obj, definition, path)
        return unknown


def unknown_fields(unknown: list[str], field_validation: str) -> list[str]:
    """What dropping the ``unknown`` fields means for the request: warnings (Warn), nothing (Ignore), or a 400
    "strict decoding error" (Strict)."""
    if not unknown or field_validation == "Ignore":
        return []
    messages = [f"unknown field {go_quote(path)}" for path in unknown]
    if field_validation == "Strict":
        raise errors.BadRequest("strict decoding error: " + ", ".join(messages))
    return messages


class _Walk:
    def __init__(self, definitions: dict[str, Schema], kind: str, version: str, unknown: list[str]) -> None:
        self.definitions = definitions
        self.kind = kind
        self.version = version
        self.unknown = unknown

    def fail(self, value: Any, parent: str, path: str, go_type: str, literal: bool = False) -> errors.BadRequest:
        """Go's ``UnmarshalTypeError``; a number that does not fit its integer type is named with its value."""
        what = f"number {go_number(value)}" if literal else go_json_kind(value)
        return errors.BadRequest(
            f'{self.kind} in version "{self.version}" cannot be handled as a {self.kind}: json: cannot unmarshal '
            f"{what} into Go struct field {parent}.{path} of type {go_type}")

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
        if kind == "integer":
            return schema.get("format") or "int64"
        return {"number": "float64", "boolean": "bool"}.get(kind or "", "string")

    def object(self, obj: dict[str, Any], name: str, path: str, old: Any = None) -> None:
        """``old``: the stored object at this place, if any (a field equal to its own is left as it is)."""
        schema = self.definitions[name]
        properties = schema.get("properties")
        if not properties:
            return
        parent = name.rsplit(".", 1)[-1]
        stored = old if isinstance(old, dict) else None
        for key in list(obj):
            value = obj[key]
            before = stored.get(key) if stored is not None else None
            if before is not None and as_stored(value, before):
                continue  # as stored, so already decoded
            child = f"{path}.{key}" if path else key
            prop = properties.get(key)
            if prop is None:
                self.unknown.append(child)
                del obj[key]
                continue
            if value is None:
                del obj[key]  # null is the zero value: the field is absent
                continue
            obj[key] = self.value(value, prop, parent, child, before)

    def value(self, value: Any, schema: Schema, parent: str, path: str, old: Any = None) -> Any:
        ref = schema.get("$ref")
        if ref:
            name = ref.rsplit("/", 1)[-1]
            if name == QUANTITY:
                return self.quantity(value, parent, path)
            if name == INT_OR_STRING:
                return self.int_or_string(value, parent, path)
            target = self.definitions.get(name, {})
            if target.get("type") == "string" or target.get("format") == "date-time":
                if not isinstance(value, str):
                    raise self.fail(value, parent, path, self.go_type(schema))
                return value
            if target.get("properties"):
                if not isinstance(value, dict):
                    raise self.fail(value, parent, path, self.go_type(schema))
                self.object(value, name, path, old)
            return value
        kind = schema.get("type")
        if kind == "string":
            if schema.get("format") == "int-or-string":
                return self.int_or_string(value, parent, path)
            if not isinstance(value, str):
                raise self.fail(value, parent, path, self.go_type(schema))
            elif schema.get("format") == "byte":
                offset = base64_error_offset(value)
                if offset is not None:
                    raise errors.BadRequest(f'{self.kind} in version "{self.version}" cannot be handled as a '
                                            f"{self.kind}: illegal base64 data at input byte {offset}")
                return base64.b64encode(base64.b64decode(value)).decode()  # as Go re-encodes the bytes it read
        elif kind == "integer":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self.fail(value, parent, path, self.go_type(schema))
            low, high = INT_RANGES.get(schema.get("format") or "int64", INT_RANGES["int64"])
            if isinstance(value, float) or not low <= value <= high:
                raise self.fail(value, parent, path, self.go_type(schema), literal=True)
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
            stored = old if isinstance(old, list) else ()
            return [v if i < len(stored) and v is not None and as_stored(v, stored[i])
                    else self.value(v, items, parent, path, stored[i] if i < len(stored) else None)
                    if v is not None else self.zero(items) for i, v in enumerate(value)]
        elif kind == "object":
            if not isinstance(value, dict):
                raise self.fail(value, parent, path, self.go_type(schema))
            inner = schema.get("additionalProperties")
            if isinstance(inner, dict):
                for key in list(value):
                    item = value[key]
                    value[key] = self.value(item, inner, parent, path) if item is not None else self.zero(inner)
        return value

    def int_or_string(self, value: Any, parent: str, path: str) -> Any:
        """``IntOrString.UnmarshalJSON``: a JSON string is the string, anything else is read into its int32 (so
        the error names int32, with the field's context, as Go adds it to the inner decoder's error)."""
        if isinstance(value, str):
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(value, parent, path, "int32")
        low, high = INT_RANGES["int32"]
        if isinstance(value, float) or not low <= value <= high:
            raise self.fail(value, parent, path, "int32", literal=True)
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


def as_stored(value: Any, stored: Any) -> bool:
    """``value`` is exactly the stored value, JSON types included: ``==`` alone takes ``2.0`` for ``2`` and ``true``
    for ``1``, which decoding refuses for an integer or a string field. The encoding settles it (in C; a dict with
    its keys in another order is walked, which is only slower)."""
    if value != stored:
        return False
    try:
        return orjson.dumps(value) == orjson.dumps(stored)
    except orjson.JSONEncodeError:
        return False


def go_number(value: int | float) -> str:
    """A JSON number as Go's error quotes its literal, from the parsed value: ``1e3`` is quoted as ``1000.0``; a
    whole number past 64 bits (which orjson reads as a float) in digits, as it was most likely written."""
    if isinstance(value, float) and value.is_integer() and 2.0**63 <= abs(value) < 1e21:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


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


def field_validation_mode(params: Any, options_kind: str = "CreateOptions") -> str:
    """``?fieldValidation`` (default Warn); another value is 422 ``<options_kind>.meta.k8s.io`` as kube's
    ``ValidateFieldValidation`` answers."""
    value = params.get("fieldValidation") or "Warn"
    if value not in FIELD_VALIDATION:
        supported = ("", *sorted(FIELD_VALIDATION))
        raise errors.invalid(options_kind, "", [not_supported("fieldValidation", value, supported)], "meta.k8s.io")
    return value
