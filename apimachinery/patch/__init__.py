"""The three PATCH content types kube-apiserver accepts, as pure functions on decoded JSON values.

=========================================  ==========================================================
``application/json-patch+json``            ``jsonpatch.apply(doc, operations)`` — RFC 6902
``application/merge-patch+json``           ``mergepatch.apply(doc, patch)`` — RFC 7386
``application/strategic-merge-patch+json`` ``strategic.apply(doc, patch, kind)`` — Kubernetes' own
=========================================  ==========================================================

None of them mutates its arguments. ``patchmeta`` holds the one table of list merge keys and strategies that
the strategic patch reads.

This module is the one place where a patch failure becomes an API status, mapped as kube-apiserver's patch
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

from typing import Any

from apimachinery.errors import BadRequest, Invalid, RequestEntityTooLarge, StatusError

REJECTED_MESSAGE = "the server rejected our request due to an error in our request"
MAX_JSON_PATCH_OPERATIONS = 10000


class PatchRejected(Invalid):
    """422 with kube-apiserver's generic message; ``detail`` says what actually went wrong."""

    def __init__(self, detail: str) -> None:
        super().__init__(REJECTED_MESSAGE)
        self.detail = detail

    def __str__(self) -> str:
        return f"{REJECTED_MESSAGE} ({self.detail})"


class PatchFailed(StatusError):
    """A strategic patch that could not be merged: kube-apiserver reports these as a 500 with no reason."""

    code = 500
    reason = ""


def bad_request(message: str) -> BadRequest:
    return BadRequest(message)


def too_many_operations(count: int) -> RequestEntityTooLarge:
    return RequestEntityTooLarge(
        f"Request entity too large: The allowed maximum operations in a JSON patch is "
        f"{MAX_JSON_PATCH_OPERATIONS}, got {count}")


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


from apimachinery.patch import jsonpatch, mergepatch, patchmeta, strategic  # noqa: E402  (they import the above)

__all__ = [
    "MAX_JSON_PATCH_OPERATIONS", "REJECTED_MESSAGE", "PatchFailed", "PatchRejected", "bad_request",
    "go_json_kind", "jsonpatch", "mergepatch", "patchmeta", "strategic", "too_many_operations",
]
