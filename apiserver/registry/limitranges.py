"""LimitRanges (core/v1): per-namespace min, max, defaults and limit/request ratios for containers and pods.

What kube-apiserver does, and where:

* ``SetDefaults_LimitRangeItem`` (type Container): ``default`` from ``max``, then ``defaultRequest`` from
  ``default``, then from ``min``, for each resource not already given;
* ``ValidateLimitRange``: a known, unduplicated ``type``; no defaults on a ``Pod`` item; valid names and
  quantities; ``min ≤ defaultRequest ≤ default ≤ max`` and ``maxLimitRequestRatio`` at least 1 and at most
  max/min — each with kube's field path and text;
* the LimitRanger admission plugin (``apiserver.admission.limitranger``) applies them to pods;
* ``kubectl get limits`` prints NAME and CREATED AT.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.quantity import Quantity
from apimachinery.quota import parse_list
from apimachinery.validation import duplicate, forbidden, invalid, not_supported, required
from apiserver.registry.qos import validate_quantity_value
from apiserver.registry.resourcequotas import validate_quota_resource_name
from apiserver.registry.strategy import NAME_COLUMN, Object, Strategy, TableColumn

LIMIT_TYPES = ("Container", "PersistentVolumeClaim", "Pod")
ITEM_LISTS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def default_limit_range_item(item: dict[str, Any]) -> None:
    """``SetDefaults_LimitRangeItem``."""
    if item.get("type") != "Container":
        return
    default = dict(item.get("default") or {})
    default_request = dict(item.get("defaultRequest") or {})
    for name, value in (item.get("max") or {}).items():
        default.setdefault(name, value)
    for name, value in default.items():
        default_request.setdefault(name, value)
    for name, value in (item.get("min") or {}).items():
        default_request.setdefault(name, value)
    if default:
        item["default"] = default
    if default_request:
        item["defaultRequest"] = default_request


def _validate_item(item: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    kind = item.get("type")
    if not kind:
        causes.append(required(f"{path}.type", ""))
    elif kind not in LIMIT_TYPES:
        causes.append(not_supported(f"{path}.type", kind, LIMIT_TYPES))
    if kind == "Pod":
        for field in ("default", "defaultRequest"):
            if item.get(field):
                causes.append(forbidden(f"{path}.{field}", "may not be specified when `type` is 'Pod'"))
    for field in ITEM_LISTS:
        for name, value in (item.get(field) or {}).items():
            causes.extend(validate_quota_resource_name(name, f"{path}.{field}[{name}]"))
            causes.extend(validate_quantity_value(name, value, f"{path}.{field}[{name}]"))
    if not causes:
        causes.extend(_validate_bounds(item, path))
    return causes


def _validate_bounds(item: Mapping[str, Any], path: str) -> list[Cause]:
    """``min ≤ defaultRequest ≤ default ≤ max`` and the ratio, per resource (kube's texts)."""
    lists = {field: parse_list(item.get(field)) for field in ITEM_LISTS}
    low, high = lists["min"], lists["max"]
    default, request, ratio = lists["default"], lists["defaultRequest"], lists["maxLimitRequestRatio"]
    causes: list[Cause] = []
    names = sorted({name for values in lists.values() for name in values})
    for name in names:
        mn, mx, d, dr = low.get(name), high.get(name), default.get(name), request.get(name)
        if mn is not None and mx is not None and mn > mx:
            causes.append(invalid(f"{path}.min[{name}]", mn.canonical(),
                                  f"min value {mn.canonical()} is greater than max value {mx.canonical()}"))
        if dr is not None:
            if mn is not None and mn > dr:
                causes.append(invalid(f"{path}.defaultRequest[{name}]", dr.canonical(),
                                      f"min value {mn.canonical()} is greater than default request value "
                                      f"{dr.canonical()}"))
            if mx is not None and dr > mx:
                causes.append(invalid(f"{path}.defaultRequest[{name}]", dr.canonical(),
                                      f"default request value {dr.canonical()} is greater than max value "
                                      f"{mx.canonical()}"))
            if d is not None and dr > d:
                causes.append(invalid(f"{path}.defaultRequest[{name}]", dr.canonical(),
                                      f"default request value {dr.canonical()} is greater than default limit value "
                                      f"{d.canonical()}"))
        if d is not None:
            if mn is not None and mn > d:
                causes.append(invalid(f"{path}.default[{name}]", mn.canonical(),
                                      f"min value {mn.canonical()} is greater than default value {d.canonical()}"))
            if mx is not None and d > mx:
                causes.append(invalid(f"{path}.default[{name}]", mx.canonical(),
                                      f"default value {d.canonical()} is greater than max value {mx.canonical()}"))
        r = ratio.get(name)
        if r is not None:
            if r < Quantity.from_int(1):
                causes.append(invalid(f"{path}.maxLimitRequestRatio[{name}]", r.canonical(),
                                      f"ratio {r.canonical()} is less than 1"))
            if mn is not None and mx is not None and not mn.is_zero():
                bound = float(mx.exact / mn.exact)
                if float(r.exact) > bound:
                    causes.append(invalid(f"{path}.maxLimitRequestRatio[{name}]", r.canonical(),
                                          f"ratio {r.canonical()} is greater than max/min = {bound:f}"))
    return causes


class LimitRangeStrategy(Strategy):
    kind = "LimitRange"
    resource = "limitranges"
    singular = "limitrange"
    short_names = ("limits",)
    bumps_generation = False

    def prepare_for_create(self, obj: Object) -> None:
        for item in (obj.get("spec") or {}).get("limits") or []:
            if isinstance(item, dict):
                default_limit_range_item(item)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.prepare_for_create(new)

    def validate(self, obj: Object) -> list[Cause]:
        causes: list[Cause] = []
        seen: set[str] = set()
        for i, item in enumerate((obj.get("spec") or {}).get("limits") or []):
            path = f"spec.limits[{i}]"
            kind = item.get("type")
            if kind in seen:
                causes.append(duplicate(f"{path}.type", kind))
            seen.add(kind)
            causes.extend(_validate_item(item, path))
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("Created At", type="date", description="CreationTimestamp is a timestamp "
                                         "representing the server time when this object was created.")]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), metadata.get("creationTimestamp", "")]
