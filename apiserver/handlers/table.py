"""Server-side printing: objects → ``meta.k8s.io/v1`` Table, as ``kubectl get`` asks for it.

The columns and cells come from the resource's strategy; this module only builds the envelope, the
``includeObject`` rendering (None / Metadata (default) / Object) and the PartialObjectMetadata forms.
"""

from __future__ import annotations

from typing import Any, Protocol

from apimachinery import errors

from ..registry.strategy import TableColumn

Object = dict[str, Any]


class Printer(Protocol):
    """The columns and cells of a resource's table (its strategy, or the metrics API's printers)."""

    def columns(self) -> list[TableColumn]: ...

    def row(self, obj: Object) -> list[Any]: ...


def partial_metadata(obj: Object) -> Object:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata", {})}


def _row_object(obj: Object, include: str) -> Object | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return partial_metadata(obj)


def include_object(params: Any) -> str:
    include = params.get("includeObject") or "Metadata"
    if include not in ("None", "Metadata", "Object"):
        raise errors.BadRequest(f'includeObject: Unsupported value: "{include}": supported values: "None", '
                                f'"Metadata", "Object"')
    return include


def to_table(strategy: Printer, objs: list[Object], include: str, list_meta: Object | None = None,
             no_headers: bool = False) -> Object:
    rows = []
    for obj in objs:
        row: Object = {"cells": strategy.row(obj)}
        rendered = _row_object(obj, include)
        if rendered is not None:
            row["object"] = rendered
        rows.append(row)
    table: Object = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "columnDefinitions": [] if no_headers else [c.to_dict() for c in strategy.columns()],
        "rows": rows,
    }
    return table


def partial_metadata_list(objs: list[Object], list_meta: Object) -> Object:
    return {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "items": [partial_metadata(o) for o in objs]}
