"""Pruning and defaulting of custom resources against their structural schema (kube's ``pruning`` and
``structuraldefaulting`` packages).

Order, as kube-apiextensions-apiserver decodes a custom resource: unknown fields are dropped (and reported, so the
request can warn or, with ``fieldValidation=Strict``, refuse), nulls of non-nullable fields without a default are
dropped, then every absent property with a ``default`` is filled in, top-down (a defaulted object is defaulted
inside too). Defaulting also runs on objects read back from etcd, so a default added to the CRD later shows on
reads. ``apiVersion``, ``kind`` and ``metadata`` at the root and in ``x-kubernetes-embedded-resource`` objects are kept.
"""

from __future__ import annotations

import copy
from typing import Any

Schema = dict[str, Any]
ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def prune(obj: dict[str, Any], schema: Schema) -> list[str]:
    """Drop fields the schema does not specify; returns their paths (``spec.foo``) in document order."""
    unknown: list[str] = []
    _prune_object(obj, schema, "", unknown, root=True)
    return unknown


def _prune_object(obj: dict[str, Any], schema: Schema, path: str, unknown: list[str], root: bool = False) -> None:
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    keep_meta = root or bool(schema.get("x-kubernetes-embedded-resource"))
    for key in list(obj):
        child = f"{path}.{key}" if path else key
        if keep_meta and key in ROOT_FIELDS:
            continue
        sub = properties.get(key)
        if sub is None and isinstance(additional, dict):
            sub = additional
        if sub is None:
            if not preserve and not additional:
                unknown.append(child)
                del obj[key]
            continue
        if obj[key] is None and not sub.get("nullable") and "default" not in sub:
            del obj[key]  # a null where null is no value: as if absent (one with a default gets the default)
            continue
        _prune_value(obj[key], sub, child, unknown)


def _prune_value(value: Any, schema: Schema, path: str, unknown: list[str]) -> None:
    if isinstance(value, dict):
        _prune_object(value, schema, path, unknown)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _prune_value(item, items, f"{path}[{i}]", unknown)


def default(obj: Any, schema: Schema) -> None:
    """Fill absent properties (and nulls of non-nullable fields) from their ``default``."""
    Defaulter(schema).apply(obj)


class Defaulter:
    """Defaulting for one schema, walking only the subtrees that hold a default (found once, when built: most of
    a custom resource has none, and every write and every read defaults). Nulls of non-nullable fields without a
    default were dropped by ``prune`` on the way in."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._needed: dict[int, bool] = {}
        self._scan(schema)

    def _scan(self, schema: Any) -> bool:
        if not isinstance(schema, dict):
            return False
        needed = False
        for sub in (schema.get("properties") or {}).values():
            if isinstance(sub, dict):
                needed = self._scan(sub) or "default" in sub or needed
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                needed = self._scan(schema[key]) or needed
        self._needed[id(schema)] = needed
        return needed

    def apply(self, obj: Any) -> None:
        self._apply(obj, self.schema)

    def _apply(self, obj: Any, schema: Schema) -> None:
        if not self._needed.get(id(schema), True):
            return
        if isinstance(obj, dict):
            properties = schema.get("properties") or {}
            for key, sub in properties.items():
                if not isinstance(sub, dict):
                    continue
                if key in obj:
                    value = obj[key]
                    if value is None and not sub.get("nullable"):
                        if "default" in sub:
                            obj[key] = copy.deepcopy(sub["default"])
                        else:
                            del obj[key]
                        continue
                    if value is not None and self._needed.get(id(sub), True):
                        self._apply(value, sub)
                elif "default" in sub:
                    obj[key] = value = copy.deepcopy(sub["default"])
                    self._apply(value, sub)
            additional = schema.get("additionalProperties")
            if isinstance(additional, dict) and self._needed.get(id(additional), True):
                for key in list(obj):
                    if key not in properties and obj[key] is not None:
                        self._apply(obj[key], additional)
        elif isinstance(obj, list):
            items = schema.get("items")
            if isinstance(items, dict):
                for i, item in enumerate(obj):
                    if item is None and not items.get("nullable") and "default" in items:
                        obj[i] = copy.deepcopy(items["default"])
                    elif item is not None:
                        self._apply(item, items)
