"""Helpers on decoded JSON values shared by the patch types and the decoders."""

from __future__ import annotations

from typing import Any

JSON = Any


def go_json_kind(value: Any) -> str:
    """How Go's ``encoding/json`` names a value in "cannot unmarshal X into …" errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def copy_json(value: JSON) -> JSON:
    """A deep copy of a JSON value (faster than ``copy.deepcopy`` for dicts, lists and scalars)."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def equal_json(a: JSON, b: JSON) -> bool:
    """Structural equality where scalars must have the same JSON type (``1`` ≠ ``1.0``, ``true`` ≠ ``1``)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(equal_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(equal_json(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b
