"""The three PATCH content types kube-apiserver accepts, as pure functions on decoded JSON values.

=========================================  ==========================================================
``application/json-patch+json``            ``jsonpatch.apply(doc, operations)`` — RFC 6902
``application/merge-patch+json``           ``mergepatch.apply(doc, patch)`` — RFC 7386
``application/strategic-merge-patch+json`` ``strategic.apply(doc, patch, kind)`` — Kubernetes' own
=========================================  ==========================================================

None of them mutates its arguments. ``patchmeta`` holds the one table of list merge keys and strategies that
the strategic patch reads.

``errors`` is the one place where a patch failure becomes an API status, mapped as kube-apiserver's patch
handler maps them (``staging/…/endpoints/handlers/patch.go``)::

    malformed patch document (not a list / not an object)  → BadRequest 400, the decoder's message
    JSON patch that does not apply, or whose test fails    → PatchRejected (Invalid 422), generic message
    more than 10000 JSON patch operations                  → RequestEntityTooLarge 413
    strategic patch with a badly formed directive          → BadRequest 400
    strategic patch with a list of lists                   → PatchRejected (Invalid 422), generic message
    any other strategic failure (missing merge key …)      → PatchFailed 500 without a reason, so kubectl
                                                              prints "Error from server: <message>"

kube-apiserver really does hide why a JSON patch failed ("the server rejected our request due to an error in
our request"); ``PatchRejected.detail`` keeps the reason for logs and tests.
"""

from __future__ import annotations

from apimachinery.patch import jsonpatch, mergepatch, patchmeta, strategic
from apimachinery.patch.errors import (
    MAX_JSON_PATCH_OPERATIONS,
    REJECTED_MESSAGE,
    PatchFailed,
    PatchRejected,
    bad_request,
    too_many_operations,
)
from apimachinery.patch.values import go_json_kind

__all__ = [
    "MAX_JSON_PATCH_OPERATIONS", "REJECTED_MESSAGE", "PatchFailed", "PatchRejected", "bad_request",
    "go_json_kind", "jsonpatch", "mergepatch", "patchmeta", "strategic", "too_many_operations",
]
