"""Pruning and defaulting of custom resources against their structural schema (kube's ``pruning`` and
``structuraldefaulting`` packages).

Order, as kube-apiextensions-apiserver decodes a custom resource: unknown fields are dropped (and reported, so the
request can warn or, with ``fieldValidation=Strict``, refuse), nulls of non-nullable fields without a default are
dropped, then every absent property with a ``default`` is filled in, top-down (a defaulted object is defaulted
inside too). Both also run on objects read back from etcd, so a default added to the CRD later shows on reads.
``apiVersion``, ``kind`` and ``metadata`` at the root and in ``x-kubernetes-embedded-resource`` objects are kept.
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
    """Fill absent properties from their ``default`` (and nulls of non-nullable fields that have one); drop
    nulls of non-nullable fields that have none."""
    if isinstance(obj, dict):
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            if not isinstance(sub, dict):
                continue
            if key in obj and obj[key] is None and not sub.get("nullable"):
                if "default" in sub:
                    obj[key] = copy.deepcopy(sub["default"])
                else:
                    del obj[key]
            elif key not in obj and "default" in sub:
                obj[key] = copy.deepcopy(sub["default"])
        additional = schema.get("additionalProperties")
        for key in list(obj):
            sub = properties.get(key) or (additional if isinstance(additional, dict) else None)
            if sub is not None and obj[key] is not None:
                default(obj[key], sub)
    elif isinstance(obj, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(obj):
                if item is None and not items.get("nullable") and "default" in items:
                    obj[i] = copy.deepcopy(items["default"])
                elif item is not None:
                    default(item, items)
