"""The answers every handler writes: Status errors and successes, objects and lists as the client asked for them.

One place for the response shapes, below every handler that writes them (``rest``, ``apply``, ``subresources``
and the app's own routes), so none of them imports another to answer. Objects reuse their stored JSON bytes;
lists are spliced from them rather than re-encoded.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from starlette.responses import Response

from apimachinery import errors

from ..registry.store import ResourceStore
from ..registry.strategy import Strategy
from ..storage.cacher import CachedObject
from .request import JSON, Output
from .table import include_object, partial_metadata, partial_metadata_list, to_table

log = logging.getLogger(__name__)


def json_response(body: bytes | Any, status: int = 200) -> Response:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    return Response(raw, status_code=status, media_type=JSON)


def status_response(err: errors.StatusError) -> Response:
    headers = {"Retry-After": str(err.retry_after)} if err.retry_after is not None else None
    return Response(err.to_json(), status_code=err.code, media_type=JSON, headers=headers)


def success_status(code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        status["details"] = details
    status["code"] = code  # last, in metav1.Status's field order
    return status


def render_object(store: ResourceStore, co: CachedObject, output: Output, params: Any, status: int = 200) -> Response:
    """The object as the client asked for it. Writes call this once they are committed, so a Table or metadata
    view that fails to render falls back to the object itself (logged) instead of turning a success into an
    error: the answer of a write is never lost."""
    try:
        if output.table:
            return json_response(to_table(store.strategy, [co.obj], include_object(params),
                                          {"resourceVersion": str(co.rv)}), status)
        if output.partial_metadata:
            return json_response(partial_metadata(co.obj), status)
    except Exception:
        log.exception("could not render %s %s as asked; answering the object", store.strategy.kind,
                      co.obj.get("metadata", {}).get("name"))
    return json_response(co.raw, status)


def list_json(strategy: Strategy, objects: list[CachedObject], list_meta: dict[str, Any]) -> bytes:
    """A ``<Kind>List`` around the objects' stored bytes (no re-encoding)."""
    head = orjson.dumps({"kind": strategy.list_kind, "apiVersion": strategy.api_version, "metadata": list_meta})
    return head[:-1] + b',"items":[' + b",".join(co.raw for co in objects) + b"]}"


def render_list(store: ResourceStore, objects: list[CachedObject], list_meta: dict[str, Any], output: Output,
                params: Any) -> Response:
    """A list as the client asked for it: a Table, PartialObjectMetadataList or the ``<Kind>List``."""
    strategy = store.strategy
    if output.table:
        return json_response(to_table(strategy, [co.obj for co in objects], include_object(params), list_meta))
    if output.partial_metadata:
        return json_response(partial_metadata_list([co.obj for co in objects], list_meta))
    return json_response(list_json(strategy, objects, list_meta))
