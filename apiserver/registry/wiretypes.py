"""Wire types: reject a body whose JSON types do not fit the kind's schema, as Go's decoder would (400).

kube-apiserver decodes JSON into typed Go structs, so ``"replicas": "3"`` never reaches a strategy — the client
gets ``400 BadRequest``: ``Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal
string into Go struct field DeploymentSpec.spec.replicas of type int32``. kubelab keeps objects as plain dicts,
so this module walks the object against the served OpenAPI schema (``apiserver/openapi/swagger.json``) and
raises exactly that error; after it, strategies may rely on lists being lists and maps being maps.

Go's rules kept: ``null`` fits every type; unknown fields are ignored here (strict field validation is a
separate request option); field paths are JSON names without list indices (``spec.containers.ports``);
the struct named is the innermost one holding the field. ``IntOrString`` takes an integer or a string, and a
``Quantity`` must parse (``quantities must match the regular expression …``), as their unmarshallers demand —
so every quantity a strategy sees is valid.

``wire_typed`` applies the check in front of a strategy's ``prepare_*`` hooks. The natural home of the check is
the request decoder (``decode_object`` and patch results), which would make the decorator unnecessary.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from apimachinery.errors import BadRequest
from apimachinery.quantity import parse_quantity
from apiserver.openapi import swagger
from apiserver.registry.strategy import Object, Strategy

Schema = dict[str, Any]
S = TypeVar("S", bound=type[Strategy])

_REF_PREFIX = "#/definitions/"
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"


@functools.cache
def _definitions() -> dict[str, Schema]:
    definitions: dict[str, Schema] = swagger()["definitions"]
    return definitions


@functools.cache
def _definition_of(group: str, version: str, kind: str) -> str | None:
    for name, schema in _definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            if (gvk.get("group"), gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return name
    return None


def check_wire_types(obj: Object, kind: str, version: str, group: str = "") -> None:
    """Raise the decoder's ``BadRequest`` if a value in ``obj`` has a JSON type its field cannot hold."""
    name = _definition_of(group, version, kind)
    if name is None:
        return
    problem = _check(obj, {"$ref": _REF_PREFIX + name}, kind, ())
    if problem:
        raise BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: {problem}')


def wire_typed(cls: S) -> S:
    """Class decorator: check incoming objects' wire types before the class's ``prepare_*`` hooks run."""
    for hook in ("prepare_for_create", "prepare_for_update", "prepare_for_status_update"):
        setattr(cls, hook, _checked(getattr(cls, hook)))
    return cls


def _checked(hook: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(hook)
    def checked(self: Strategy, obj: Object, *old: Object) -> None:
        check_wire_types(obj, self.kind, self.version, self.group)
        hook(self, obj, *old)

    return checked


def _check(value: Any, schema: Schema, struct: str, path: tuple[str, ...]) -> str | None:
    """The first mismatch below ``value`` as Go words it, or ``None``."""
    if value is None:
        return None
    ref = schema.get("$ref")
    if ref:
        name = ref[len(_REF_PREFIX):]
        if name == _QUANTITY:
            return _check_quantity(value)
        definition = _definitions()[name]
        if "properties" in definition:
            if not isinstance(value, dict):
                return _mismatch(value, _go_type(schema), struct, path)
            short = name.rsplit(".", 1)[-1]
            properties = definition["properties"]
            for key, item in value.items():
                if key in properties:
                    problem = _check(item, properties[key], short, (*path, key))
                    if problem:
                        return problem
            return None
        schema = definition
    return _check_plain(value, schema, struct, path)


def _check_plain(value: Any, schema: Schema, struct: str, path: tuple[str, ...]) -> str | None:
    kind = schema.get("type")
    fmt = schema.get("format")
    if fmt == "int-or-string":
        if isinstance(value, str):
            return None
        return _check_integer(value, {"type": "integer", "format": "int32"}, struct, path)
    if kind == "string":
        return None if isinstance(value, str) else _mismatch(value, _go_type(schema), struct, path)
    if kind == "boolean":
        return None if isinstance(value, bool) else _mismatch(value, "bool", struct, path)
    if kind == "integer":
        return _check_integer(value, schema, struct, path)
    if kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else _mismatch(value, "float64", struct, path)
    if kind == "array":
        if not isinstance(value, list):
            return _mismatch(value, _go_type(schema), struct, path)
        items = schema.get("items") or {}
        for item in value:
            problem = _check(item, items, struct, path)
            if problem:
                return problem
        return None
    if kind == "object" and "additionalProperties" in schema:
        if not isinstance(value, dict):
            return _mismatch(value, _go_type(schema), struct, path)
        values = schema["additionalProperties"]
        for item in value.values():
            problem = _check(item, values, struct, path)
            if problem:
                return problem
    return None  # free-form (RawExtension, JSON): anything goes


def _check_quantity(value: Any) -> str | None:
    """``Quantity.UnmarshalJSON``: a JSON string or number that parses; its error text is the parser's."""
    text = value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else str(value)
    try:
        parse_quantity(text)
    except ValueError as err:
        return str(err)
    return None


def _check_integer(value: Any, schema: Schema, struct: str, path: tuple[str, ...]) -> str | None:
    go_type = _go_type(schema)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _mismatch(value, go_type, struct, path)
    lo, hi = _INT_RANGES.get(go_type, _INT_RANGES["int64"])
    if isinstance(value, float) or not lo <= value <= hi:
        return _mismatch(value, go_type, struct, path, literal=True)
    return None


def _mismatch(value: Any, go_type: str, struct: str, path: tuple[str, ...], literal: bool = False) -> str:
    """``json.UnmarshalTypeError``: ``json: cannot unmarshal string into Go struct field X.a.b of type int32``."""
    found = _json_kind(value)
    if literal:
        found = f"number {value}"
    field = ".".join(path)
    where = f"Go struct field {struct}.{field}" if field else "Go value"
    return f"json: cannot unmarshal {found} into {where} of type {go_type}"


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _go_type(schema: Schema) -> str:
    """The Go type a schema stands for, as ``reflect.Type.String()`` prints it."""
    ref = schema.get("$ref")
    if ref:
        package, _, short = ref[len(_REF_PREFIX):].rpartition(".")
        return f"{package.rsplit('.', 1)[-1]}.{short}"  # v1.Container, resource.Quantity, v1.Time
    kind = schema.get("type")
    if kind == "integer":
        return schema.get("format") or "int64"
    if kind == "number":
        return "float64"
    if kind == "boolean":
        return "bool"
    if kind == "array":
        return "[]" + _go_type(schema.get("items") or {})
    if kind == "object" and "additionalProperties" in schema:
        return "map[string]" + _go_type(schema["additionalProperties"])
    return "string" if kind == "string" else "interface {}"
