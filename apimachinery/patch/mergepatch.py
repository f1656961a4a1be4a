"""RFC 7386 JSON Merge Patch, as ``evanphx/json-patch`` (kube-apiserver's library) applies and creates it.

Objects merge key by key, ``null`` deletes a key, and anything else — lists included — replaces the old value.
A value that lands where nothing (or a non-object) was has its nested ``null`` members dropped, also inside
objects held in lists, as the Go library does. A patch that is a list replaces the whole document; a patch
that is ``null`` or a scalar is refused with ``BadRequest`` ("Invalid JSON Patch").
"""

from __future__ import annotations

from typing import Any

from apimachinery.patch.errors import bad_request
from apimachinery.patch.values import copy_json as _copy
from apimachinery.patch.values import equal_json as _equal

JSON = Any

ERR_BAD_JSON_PATCH = "Invalid JSON Patch"
ERR_BAD_JSON_DOC = "Invalid JSON Document"


def apply(doc: JSON, patch: JSON) -> JSON:
    """``jsonpatch.MergePatch(doc, patch)`` on decoded values; neither argument is modified."""
    if doc is None:
        raise bad_request(ERR_BAD_JSON_DOC)
    if isinstance(patch, list):
        return _prune(_copy(patch))
    if not isinstance(patch, dict):
        raise bad_request(ERR_BAD_JSON_PATCH)
    if not isinstance(doc, dict):
        return _prune(_copy(patch))
    return _merge_objects(doc, patch)


def apply_in_place(doc: JSON, patch: JSON) -> JSON:
    """``apply`` that merges into ``doc`` itself (the caller's own copy, which it gives up) and returns it: the
    parts the patch does not touch are neither walked nor copied. ``patch`` is still not modified, nor shared with
    the result (a retried update applies it again)."""
    if not isinstance(doc, dict) or not isinstance(patch, dict):
        return apply(doc, patch)
    return _merge_into(doc, patch)


def _merge_into(doc: dict[str, JSON], patch: dict[str, JSON]) -> dict[str, JSON]:
    """``_merge_objects``' result, made in ``doc``: changed keys keep their place, new ones follow in the patch's
    order."""
    for key, value in patch.items():
        if value is None:
            doc.pop(key, None)
            continue
        current = doc.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            _merge_into(current, value)
        elif isinstance(current, dict):
            doc[key] = _copy(value)
        else:
            doc[key] = _prune(value)  # a fresh copy
    return doc


def _merge_objects(doc: dict[str, JSON], patch: dict[str, JSON]) -> dict[str, JSON]:
    """Merge into a fresh object that keeps ``doc``'s key order and shares no structure with either input."""
    result: dict[str, JSON] = {}
    for key, current in doc.items():
        if key not in patch:
            result[key] = _copy(current)
            continue
        value = patch[key]
        if value is None:
            continue
        if isinstance(current, dict) and isinstance(value, dict):
            result[key] = _merge_objects(current, value)
        elif isinstance(current, dict):
            result[key] = _copy(value)
        else:
            result[key] = _prune(_copy(value))
    for key, value in patch.items():
        if key not in doc and value is not None:
            result[key] = _prune(_copy(value))
    return result


def _prune(value: JSON) -> JSON:
    """Drop ``null`` object members recursively (lists keep their ``null`` items but prune objects inside)."""
    if isinstance(value, dict):
        return {k: _prune(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def create_merge_patch(original: JSON, modified: JSON) -> JSON:
    """``jsonpatch.CreateMergePatch``: the merge patch that turns ``original`` into ``modified``.

    Removed members become ``null``, changed lists are sent whole, nested objects recurse, and equal documents
    give ``{}``. Documents that are not both objects give ``modified`` itself.
    """
    if not isinstance(original, dict) or not isinstance(modified, dict):
        return _copy(modified)
    return _diff(original, modified)


def _diff(original: dict[str, JSON], modified: dict[str, JSON]) -> dict[str, JSON]:
    patch: dict[str, JSON] = {}
    for key, value in modified.items():
        if key not in original:
            patch[key] = _copy(value)
            continue
        old = original[key]
        if isinstance(old, dict) and isinstance(value, dict):
            nested = _diff(old, value)
            if nested:
                patch[key] = nested
        elif not _equal(old, value):
            patch[key] = _copy(value)
    for key in original:
        if key not in modified:
            patch[key] = None
    return patch
