"""Validation of a custom resource against its version's structural schema (kube-openapi's validator as
kube-apiextensions-apiserver runs it), with kube's field paths and messages::

    spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10
    spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"
    spec.color: Unsupported value: "pink": supported values: "red", "blue"

``x-kubernetes-validations`` (CEL) rules are not evaluated here: a ``RuleValidator`` (``celrules.CELRules`` in
the apiserver) is asked after the schema checks pass, so this walk knows nothing of CEL.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
import uuid
from datetime import date, datetime
from functools import lru_cache
from typing import Any, Protocol

import orjson

from apimachinery.errors import Cause
from apimachinery.validation import duplicate, go_value, invalid, not_supported, required, too_long, too_many

Schema = dict[str, Any]


class RuleValidator(Protocol):
    """Evaluates a schema's ``x-kubernetes-validations`` rules on ``obj`` (``old`` on updates: transition rules)
    and returns one cause per failed rule."""

    def validate(self, schema: Schema, obj: Any, old: Any | None) -> list[Cause]: ...


class NoRules:
    """The rule validator used until a CEL one is plugged in: every rule passes."""

    def validate(self, schema: Schema, obj: Any, old: Any | None) -> list[Cause]:
        return []


def validate(obj: dict[str, Any], schema: Schema, rules: RuleValidator | None = None,
             old: dict[str, Any] | None = None) -> list[Cause]:
    """Every violation of ``schema`` by ``obj`` (apiVersion, kind and metadata are not the schema's business)."""
    return SchemaValidator(schema).validate(obj, rules, old)


# Keywords that leave a scalar unconstrained beyond its type: such values need only a type check.
_PLAIN_KEYS = frozenset({"type", "description", "title", "default", "example", "externalDocs",
                         "x-kubernetes-preserve-unknown-fields"})
_PLAIN_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "boolean": (bool,), "integer": (int,),
                                             "number": (int, float)}


class SchemaValidator:
    """Validation against one schema, built once per served version: the scalar nodes that only constrain
    their type are found up front, so the common value costs one type check."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema  # kept: the node ids below stay valid while it lives
        self.plain: dict[int, tuple[type, ...]] = {}
        self._scan(schema)

    def _scan(self, node: Any) -> None:
        if not isinstance(node, dict):
            return
        kind = node.get("type")
        if kind in _PLAIN_TYPES and set(node) <= _PLAIN_KEYS:
            self.plain[id(node)] = _PLAIN_TYPES[kind]
        for sub in (node.get("properties") or {}).values():
            self._scan(sub)
        for key in ("items", "additionalProperties"):
            self._scan(node.get(key))

    def validate(self, obj: dict[str, Any], rules: RuleValidator | None = None,
                 old: dict[str, Any] | None = None) -> list[Cause]:
        causes: list[Cause] = []
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        _Walk(causes, self.plain).object(body, self.schema, "", root=True)
        if not causes and rules is not None:
            causes.extend(rules.validate(self.schema, obj, old))
        return causes


def validate_value(value: Any, schema: Schema, path: str) -> list[Cause]:
    """Violations of ``schema`` by one value at ``path`` (a CRD's ``default``, checked when the CRD is written)."""
    causes: list[Cause] = []
    _Walk(causes, {}).value(value, schema, path)
    return causes


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _number(n: Any) -> str:
    """Go's ``%v`` of a float64 bound: 10, 0.5, 1e+21."""
    if isinstance(n, float) and n.is_integer() and abs(n) < 1e21:
        return str(int(n))
    return str(n)


@lru_cache(maxsize=256)
def _pattern(expr: str) -> re.Pattern[str]:
    return re.compile(expr)


class _Walk:
    def __init__(self, causes: list[Cause], plain: dict[int, tuple[type, ...]]) -> None:
        self.causes = causes
        self.plain = plain

    def fail(self, path: str, value: Any, message: str) -> None:
        self.causes.append(invalid(path, value, f"{path} in body {message}"))

    def value(self, value: Any, schema: Schema, path: str) -> None:
        plain = self.plain.get(id(schema))
        if plain is not None and isinstance(value, plain) and (bool in plain or not isinstance(value, bool)):
            return
        if value is None:
            if not schema.get("nullable") and (schema.get("type") or schema.get("x-kubernetes-int-or-string")):
                kind = schema.get("type") or "integer"
                self.causes.append(Cause("FieldValueTypeInvalid", f'Invalid value: "null": {path} in body must be '
                                                                  f'of type {kind}: "null"', path))
            return
        if not self.type_ok(value, schema, path):
            return
        if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
            self.causes.append(not_supported(path, value, [_enum_text(v) for v in schema["enum"]]))
        if isinstance(value, bool):
            return
        if isinstance(value, (int, float)):
            self.number(value, schema, path)
        elif isinstance(value, str):
            self.string(value, schema, path)
        elif isinstance(value, list):
            self.array(value, schema, path)
        elif isinstance(value, dict):
            self.object(value, schema, path)

    def type_ok(self, value: Any, schema: Schema, path: str) -> bool:
        kind = schema.get("type")
        actual = json_type(value)
        if schema.get("x-kubernetes-int-or-string"):
            ok = actual in ("integer", "string") or (actual == "number" and float(value).is_integer())
            expected = "integer,string"
        elif not kind:
            return True
        else:
            expected = kind
            ok = actual == kind or (kind == "number" and actual == "integer") or \
                (kind == "integer" and actual == "number" and float(value).is_integer())
        if not ok:
            self.causes.append(Cause("FieldValueTypeInvalid", f'Invalid value: "{actual}": {path} in body must '
                                                              f'be of type {expected}: "{actual}"', path))
        return ok

    def number(self, value: float, schema: Schema, path: str) -> None:
        if "maximum" in schema and isinstance(schema["maximum"], (int, float)):
            top = schema["maximum"]
            if schema.get("exclusiveMaximum") and value >= top:
                self.fail(path, value, f"should be less than {_number(top)}")
            elif value > top:
                self.fail(path, value, f"should be less than or equal to {_number(top)}")
        if "minimum" in schema and isinstance(schema["minimum"], (int, float)):
            low = schema["minimum"]
            if schema.get("exclusiveMinimum") and value <= low:
                self.fail(path, value, f"should be greater than {_number(low)}")
            elif value < low:
                self.fail(path, value, f"should be greater than or equal to {_number(low)}")
        step = schema.get("multipleOf")
        if isinstance(step, (int, float)) and step > 0 and not float(value / step).is_integer():
            self.fail(path, value, f"should be a multiple of {_number(step)}")
        fmt = schema.get("format")
        if fmt == "int32" and isinstance(value, int) and not -2**31 <= value < 2**31:
            self.fail(path, value, "should be an int32")

    def string(self, value: str, schema: Schema, path: str) -> None:
        if isinstance(schema.get("maxLength"), int) and len(value) > schema["maxLength"]:
            self.causes.append(too_long(path, schema["maxLength"]))
        if isinstance(schema.get("minLength"), int) and len(value) < schema["minLength"]:
            self.fail(path, value, f"should be at least {schema['minLength']} chars long")
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                matched = _pattern(pattern).search(value) is not None
            except re.error:
                matched = True
            if not matched:
                self.fail(path, value, f"should match '{pattern}'")
        fmt = schema.get("format")
        if fmt and not _format_ok(fmt, value):
            self.fail(path, value, f"must be of type {fmt}: {go_value(value)}")

    def array(self, value: list[Any], schema: Schema, path: str) -> None:
        if isinstance(schema.get("maxItems"), int) and len(value) > schema["maxItems"]:
            self.causes.append(too_many(path, len(value), schema["maxItems"]))
        if isinstance(schema.get("minItems"), int) and len(value) < schema["minItems"]:
            self.fail(path, len(value), f"should have at least {schema['minItems']} items")
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set" or schema.get("uniqueItems"):
            seen: set[bytes] = set()
            for i, item in enumerate(value):
                key = orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
                if key in seen:
                    self.causes.append(duplicate(f"{path}[{i}]", item))
                seen.add(key)
        elif list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            seen_keys: set[bytes] = set()
            for i, item in enumerate(value):
                if not isinstance(item, dict):
                    continue
                key = orjson.dumps([item.get(k) for k in keys])
                if key in seen_keys:
                    self.causes.append(duplicate(f"{path}[{i}]", {k: item.get(k) for k in keys if k in item}))
                seen_keys.add(key)
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                self.value(item, items, f"{path}[{i}]")

    def object(self, value: dict[str, Any], schema: Schema, path: str, root: bool = False) -> None:
        if isinstance(schema.get("maxProperties"), int) and len(value) > schema["maxProperties"]:
            self.causes.append(too_many(path, len(value), schema["maxProperties"]))
        if isinstance(schema.get("minProperties"), int) and len(value) < schema["minProperties"]:
            self.fail(path, len(value), f"should have at least {schema['minProperties']} properties")
        for name in schema.get("required") or []:
            if name not in value and not (root and name in ("apiVersion", "kind", "metadata")):
                self.causes.append(required(f"{path}.{name}" if path else name))
        if schema.get("x-kubernetes-embedded-resource"):
            for name in ("apiVersion", "kind"):
                if not value.get(name):
                    self.causes.append(required(f"{path}.{name}", "must not be empty"))
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None and isinstance(additional, dict):
                sub = additional
            if sub is not None:
                self.value(item, sub, f"{path}.{key}" if path else key)


def _enum_text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


_HOSTNAME = re.compile(r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,62})?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,62})?)*\.?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d|w))+$")


def _format_ok(fmt: str, value: str) -> bool:
    """kube's supported string formats; unknown formats pass (as kube-openapi's registry does)."""
    try:
        if fmt == "date-time":
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        elif fmt == "date":
            date.fromisoformat(value)
        elif fmt == "uuid":
            uuid.UUID(value)
        elif fmt == "ipv4":
            ipaddress.IPv4Address(value)
        elif fmt == "ipv6":
            ipaddress.IPv6Address(value)
        elif fmt == "cidr":
            ipaddress.ip_network(value, strict=False)
        elif fmt == "byte":
            base64.b64decode(value, validate=True)
        elif fmt == "hostname":
            return bool(_HOSTNAME.match(value))
        elif fmt == "email":
            return bool(_EMAIL.match(value))
        elif fmt == "duration":
            return bool(_DURATION.match(value))
    except (ValueError, binascii.Error):
        return False
    return True
