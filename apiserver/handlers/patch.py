"""PATCH bodies (JSON patch, merge patch, strategic merge patch) as update functions over the stored object.

Server-side apply is ``handlers.apply``; the REST handler and the scale subresource both patch through
``patcher``, so the media types accepted and the resourceVersion-precondition rule live once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apimachinery import errors
from apimachinery.patch import jsonpatch, mergepatch, strategic

from .request import (
    APPLY_PATCH,
    JSON,
    JSON_PATCH,
    MERGE_PATCH,
    PATCH_TYPES,
    STRATEGIC_PATCH,
    decode_body,
    json_numbers,
    media_type,
)

Update = Callable[[dict[str, Any]], dict[str, Any]]


def patcher(content_type: str | None, body: bytes, kind: str, resource: str, group: str,
            strategic_merge: bool = True) -> Update:
    """The update function for a PATCH body of a ``kind`` object (strategic merge needs the kind, and custom
    resources have none); a resourceVersion inside the patch is a precondition."""
    mt = media_type(content_type)
    if mt not in PATCH_TYPES or (mt == STRATEGIC_PATCH and not strategic_merge):
        accepted = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH) if strategic_merge else \
            (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)
        raise errors.UnsupportedMediaType(
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{', '.join(accepted)}")
    patch = decode_body(body, JSON, allowed=(JSON,))
    if mt != JSON_PATCH:
        # kube reads merge and strategic patches into float64s and writes the result back as JSON, so a
        # whole number such as 2.0 arrives as 2; a JSON patch's values keep their literal text.
        patch = json_numbers(patch)

    def apply(old: dict[str, Any]) -> dict[str, Any]:
        """``old`` is the update's own copy of the stored object (``guaranteed_update``), so a merge patch is
        applied to it in place."""
        current_rv = old["metadata"].get("resourceVersion")
        if mt == JSON_PATCH:
            new = jsonpatch.apply(old, patch)
        elif mt == MERGE_PATCH:
            new = mergepatch.apply_in_place(old, patch)
        else:
            assert mt == STRATEGIC_PATCH
            new = strategic.apply(old, patch, kind)
        if not isinstance(new, dict):
            raise errors.BadRequest("the patched object must be a JSON object")
        new_rv = (new.get("metadata") or {}).get("resourceVersion")
        if new_rv and new_rv != current_rv:
            raise errors.conflict(resource, old["metadata"]["name"], group)
        return new

    return apply
