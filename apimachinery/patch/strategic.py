"""Strategic merge patch, as ``k8s.io/apimachinery/pkg/util/strategicpatch`` applies and creates it.

It is a JSON merge patch that knows, from ``patchmeta``, which lists to merge instead of replace:

* lists with a merge key (``containers`` by ``name``, ``conditions`` by ``type`` …) merge element by element;
  an element ``{"name": "x", "$patch": "delete"}`` removes ``x``, an element ``{"$patch": "replace"}`` makes the
  rest of the patch list replace the whole list;
* lists of strings with the merge strategy (``finalizers``, ``podCIDRs``) merge as sets, and
  ``$deleteFromPrimitiveList/<field>: [...]`` removes items from them;
* ``$setElementOrder/<field>: [...]`` fixes the order of a merged list (``kubectl apply`` and ``kubectl set
  image`` send it); without it, patch items come first in patch order, interleaved with the server's other
  items by their old positions — so an item new to the list lands in front;
* ``$retainKeys: [...]`` clears the object's other keys (Deployment ``strategy``, pod ``volumes``);
* ``$patch: replace`` / ``$patch: delete`` in an object replace it by the rest of the patch / empty it;
* ``null`` deletes a key; every other list is replaced whole, every other object merges recursively.

The algorithms follow Go's step for step (including where it puts items and which errors it raises); both
public functions work on private copies and never modify their arguments. Values copied whole from a patch
lose their directive keys, as Kubernetes' typed decoding would drop them. Errors are mapped to API statuses
in ``apimachinery.patch``.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from apimachinery.patch.errors import PatchFailed, PatchRejected, bad_request
from apimachinery.patch.values import copy_json as _copy
from apimachinery.patch.values import equal_json as _equal
from apimachinery.patch.values import go_json_kind
from apimachinery.patch.patchmeta import Field, Struct, schema

JSON = Any

DIRECTIVE = "$patch"
DELETE = "delete"
REPLACE = "replace"
MERGE = "merge"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER = "$setElementOrder"

ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST = "invalid patch format of primitive list"
ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS = "invalid patch format of retainKeys"
ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER_LIST = "invalid patch format of setElementOrder list"
ERR_NO_LIST_OF_LISTS = "lists of lists are not supported"

_NO_FIELD = Field()


# --- public -------------------------------------------------------------------------------------------------


def apply(doc: JSON, patch: JSON, kind: str) -> JSON:
    """``StrategicMergeMapPatch(doc, patch, <kind>)`` as kube-apiserver runs it for a PATCH request."""
    if patch is None:  # a JSON null decodes to a nil map: nothing to do
        return _copy(doc)
    if not isinstance(patch, dict):
        raise bad_request(
            f"json: cannot unmarshal {go_json_kind(patch)} into Go value of type map[string]interface {{}}")
    original = _copy(doc) if isinstance(doc, dict) else {}
    return _merge_map(original, _copy(patch), schema(kind))


def create_two_way_merge_patch(original: JSON, modified: JSON, kind: str) -> dict[str, JSON]:
    """``CreateTwoWayMergePatch``: the strategic patch that turns ``original`` into ``modified``.

    Changed keys are sent, removed keys become ``null``, merging lists send only their changed elements plus
    ``$patch: delete`` markers, ``$deleteFromPrimitiveList`` and ``$setElementOrder`` lists, as kubectl does.
    """
    return _diff_maps(original or {}, modified or {}, schema(kind), build_retain_keys=False)


# --- applying: maps -----------------------------------------------------------------------------------------


def _merge_map(original: dict[str, JSON] | None, patch: dict[str, JSON], struct: Struct) -> dict[str, JSON]:
    """``mergeMap``: merge ``patch`` into ``original`` in place (both are private copies) and return it."""
    if DIRECTIVE in patch:
        return _map_directive(patch[DIRECTIVE], patch)
    if original is None:
        original = {}
    _apply_retain_keys(original, patch)
    _merge_ordered_lists(original, patch, struct)

    for key, patch_value in list(patch.items()):
        is_delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        if is_delete_list:
            key = _extract_key(key, DELETE_FROM_PRIMITIVE_LIST)
        if patch_value is None:
            original.pop(key, None)
            continue
        if key not in original:
            if not is_delete_list:
                _set_fresh(original, key, patch_value)
            continue
        current = original[key]
        if _go_type(current) != _go_type(patch_value):
            if not is_delete_list:
                _set_fresh(original, key, patch_value)
            continue
        field = struct.get(key, _NO_FIELD)
        if isinstance(current, dict):
            if field.strategy == REPLACE:
                original[key] = _strip_directive_keys(patch_value)
            else:
                original[key] = _merge_map(current, patch_value, field.schema)
        elif isinstance(current, list):
            original[key] = _merge_list_field(current, patch_value, field, key, is_delete_list)
        else:
            _set_fresh(original, key, patch_value)
    return original


def _set_fresh(original: dict[str, JSON], key: str, value: JSON) -> None:
    """Take a patch value where there is nothing to merge with: nulls and ``$patch`` objects inside vanish."""
    _discard_nulls(value)
    keep, cleaned = _remove_directives(value)
    if keep:
        original[key] = _strip_directive_keys(cleaned)
    else:
        original.pop(key, None)


def _map_directive(directive: JSON, patch: dict[str, JSON]) -> dict[str, JSON]:
    """``$patch`` inside an object: ``replace`` → the rest of the patch, ``delete`` → ``{}``."""
    if directive == REPLACE:
        del patch[DIRECTIVE]
        return _strip_directive_keys(patch)  # type: ignore[no-any-return]
    if directive == DELETE:
        return {}
    raise PatchFailed(f"unknown patch type: {_gofmt(directive)} in map: {_gofmt(patch)}")


def _apply_retain_keys(original: dict[str, JSON], patch: dict[str, JSON]) -> None:
    """``$retainKeys``: drop every key of ``original`` not listed; the patch may only set listed keys."""
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not isinstance(retain, list):
        raise bad_request(ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS)
    keep = {k for k in retain if isinstance(k, str)}
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if key not in keep:
            raise bad_request(ERR_BAD_PATCH_FORMAT_FOR_RETAIN_KEYS)
    for key in [k for k in original if k not in keep]:
        del original[key]


def _merge_ordered_lists(original: dict[str, JSON], patch: dict[str, JSON], struct: Struct) -> None:
    """``mergePatchIntoOriginal``: merge each list that has a ``$setElementOrder`` and put it in that order."""
    for directive_key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(directive_key)
        if not isinstance(order, list):
            raise PatchFailed(_bad_arg_type([], order))
        key = _extract_key(directive_key, SET_ELEMENT_ORDER)
        found_original, found_patch = key in original, key in patch
        original_list, patch_list = original.get(key), patch.get(key)
        if found_original and not isinstance(original_list, list):
            raise PatchFailed(_bad_arg_type([], original_list))
        if found_patch and not isinstance(patch_list, list):
            raise PatchFailed(_bad_arg_type([], patch_list))
        field = struct.get(key, _NO_FIELD)
        merge_key = field.merge_key
        _validate_patch_with_set_order(patch_list or [], order, merge_key)

        if found_original and not found_patch:
            merged = original_list
        elif not found_original and found_patch:
            merged = _remove_directives(patch_list)[1]
        elif found_original and found_patch:
            merged = _merge_list_field(original_list, patch_list, field, key, is_delete_list=False)
        else:
            continue
        if merge_key:
            patch_items, server_only = _partition_maps(merged, order, merge_key)
        else:
            patch_items, server_only = _partition_scalars(merged, order)
        kind = _list_element_type(original_list or [], patch_list or [])
        original[key] = _normalize_element_order(patch_items, server_only, order, original_list or [], merge_key,
                                                 kind)
        patch.pop(key, None)


# --- applying: lists ----------------------------------------------------------------------------------------


def _merge_list_field(original: list[JSON], patch: list[JSON], field: Field, name: str,
                      is_delete_list: bool) -> list[JSON]:
    """``mergeSliceHandler``: merge-strategy lists (and every ``$deleteFromPrimitiveList``) merge, others replace."""
    if field.strategy == MERGE or is_delete_list:
        return _merge_list(original, patch, field, name, is_delete_list)
    return _strip_directive_keys(patch)  # type: ignore[no-any-return]


def _merge_list(original: list[JSON], patch: list[JSON], field: Field, name: str,
                is_delete_list: bool) -> list[JSON]:
    """``mergeSlice``: merge by key (maps) or as a set (scalars), then restore Kubernetes' element order."""
    if not original and not patch:
        return original
    kind = _list_element_type(original, patch)
    merge_key = field.merge_key
    if kind != "map":
        if is_delete_list:
            return _delete_from_list(original, patch)
        merged = _dedup(original + patch)
    else:
        if not merge_key:
            raise PatchFailed(f"cannot merge lists without merge key for {name}")
        original, patch = _apply_special_elements(original, patch, merge_key)
        merged = _merge_elements(original, patch, merge_key, field.schema)
    if merge_key:
        patch_items, server_only = _partition_maps(merged, patch, merge_key)
    else:
        patch_items, server_only = _partition_scalars(merged, patch)
    return _normalize_element_order(patch_items, server_only, patch, original, merge_key, kind)


def _apply_special_elements(original: list[JSON], patch: list[JSON],
                            merge_key: str) -> tuple[list[JSON], list[JSON]]:
    """``$patch`` elements: ``delete`` removes matching items, ``replace`` discards the original list."""
    plain: list[JSON] = []
    replace = False
    for element in patch:
        if DIRECTIVE not in element:
            plain.append(element)
            continue
        directive = element[DIRECTIVE]
        if directive == DELETE:
            if merge_key not in element:
                raise PatchFailed(_no_merge_key(element, merge_key))
            original = [item for item in original if not _matches_key(item, merge_key, element[merge_key])]
        elif directive == REPLACE:
            replace = True
        elif directive == MERGE:
            raise PatchFailed("merging lists cannot yet be specified in the patch")
        else:
            raise PatchFailed(f"unknown patch type: {_gofmt(directive)} in map: {_gofmt(element)}")
    return (plain, []) if replace else (original, plain)


def _merge_elements(original: list[JSON], patch: list[JSON], merge_key: str, struct: Struct) -> list[JSON]:
    """Merge each patch element into the item with the same key, or append it."""
    merged = list(original)
    for element in patch:
        if merge_key not in element:
            raise PatchFailed(_no_merge_key(element, merge_key))
        index = _find_by_key(merged, merge_key, element[merge_key])
        if index is None:
            merged.append(_strip_directive_keys(element))
        else:
            merged[index] = _merge_map(merged[index], element, struct)
    return merged


def _matches_key(item: JSON, merge_key: str, value: JSON) -> bool:
    if not isinstance(item, dict):
        raise PatchFailed("value for key is not a map")
    return merge_key in item and _same(item[merge_key], value)


def _find_by_key(items: list[JSON], merge_key: str, value: JSON) -> int | None:
    """``findMapInSliceBasedOnKeyValue``."""
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise PatchFailed(f"value for key {index} is not a map")
        if merge_key in item and _same(item[merge_key], value):
            return index
    return None


def _delete_from_list(current: list[JSON], to_delete: list[JSON]) -> list[JSON]:
    doomed = {_key(v) for v in to_delete}
    return [v for v in current if _key(v) not in doomed]


def _dedup(items: list[JSON]) -> list[JSON]:
    seen: set[Hashable] = set()
    out = []
    for item in items:
        key = _key(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _partition_scalars(items: list[JSON], partition_by: list[JSON]) -> tuple[list[JSON], list[JSON]]:
    """Split ``items`` into those present in ``partition_by`` and the server-only rest."""
    wanted = {_key(v) for v in partition_by}
    return [v for v in items if _key(v) in wanted], [v for v in items if _key(v) not in wanted]


def _partition_maps(items: list[JSON], partition_by: list[JSON], merge_key: str) -> tuple[list[JSON], list[JSON]]:
    in_patch: list[JSON] = []
    server_only: list[JSON] = []
    for item in items:
        if not isinstance(item, dict):
            raise PatchFailed(_bad_arg_type({}, item))
        if merge_key not in item:
            raise PatchFailed(_no_merge_key(item, merge_key))
        (in_patch if _find_by_key(partition_by, merge_key, item[merge_key]) is not None else server_only).append(item)
    return in_patch, server_only


# --- applying: element order ----------------------------------------------------------------------------------


def _normalize_element_order(patch_items: list[JSON], server_only: list[JSON], patch_order: list[JSON],
                             server_order: list[JSON], merge_key: str, kind: str) -> list[JSON]:
    """Sort patch items by the patch (or ``$setElementOrder``), server items by the live list, then interleave."""
    patch_items = _normalize_list_order(patch_items, patch_order, merge_key, kind)
    server_only = _normalize_list_order(server_only, server_order, merge_key, kind)
    return _merge_sorted(server_only, patch_items, server_order, merge_key, kind)


def _normalize_list_order(items: list[JSON], order: list[JSON], merge_key: str, kind: str) -> list[JSON]:
    """``normalizeSliceOrder``: stable sort by position in ``order``; ``$patch: delete`` elements go last."""
    to_delete: list[JSON] = []
    if kind == "map":
        _validate_merge_key_in_lists(merge_key, items, order)
        items, to_delete = _split_deletions(items)
    position = _positions(order, merge_key, kind)
    identity = _identity(merge_key, kind)
    ranked = sorted(items, key=lambda item: position.get(identity(item), len(order)))
    return ranked + to_delete


def _merge_sorted(left: list[JSON], right: list[JSON], server_order: list[JSON], merge_key: str,
                  kind: str) -> list[JSON]:
    """``mergeSortedSlice``: take a left (server-only) item first only when both sit in the live list and it
    came earlier there; otherwise the right (patch) item wins."""
    position = _positions(server_order, merge_key, kind)
    identity = _identity(merge_key, kind)
    out: list[JSON] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li, ri = position.get(identity(left[i]), -1), position.get(identity(right[j]), -1)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _identity(merge_key: str, kind: str) -> Callable[[JSON], Hashable]:
    """What identifies an element for ordering: its merge key value (maps) or itself (scalars)."""
    if kind == "map":
        return lambda item: _key(item.get(merge_key)) if isinstance(item, dict) else _key(None)
    return _key


def _positions(order: list[JSON], merge_key: str, kind: str) -> dict[Hashable, int]:
    identity = _identity(merge_key, kind)
    position: dict[Hashable, int] = {}
    for index, item in enumerate(order):
        position.setdefault(identity(item), index)
    return position


def _split_deletions(items: list[JSON]) -> tuple[list[JSON], list[JSON]]:
    keep: list[JSON] = []
    delete: list[JSON] = []
    for item in items:
        if not isinstance(item, dict):
            raise PatchFailed(_bad_arg_type({}, item))
        (delete if item.get(DIRECTIVE) == DELETE else keep).append(item)
    return keep, delete


def _validate_merge_key_in_lists(merge_key: str, *lists: list[JSON]) -> None:
    for items in lists:
        for item in items:
            if not isinstance(item, dict):
                raise PatchFailed(_bad_arg_type({}, item))
            if merge_key not in item:
                raise PatchFailed(_no_merge_key(item, merge_key))


def _validate_patch_with_set_order(patch_list: list[JSON], order: list[JSON], merge_key: str) -> None:
    """The patch list's items must appear in ``$setElementOrder`` and in the same relative order."""
    if not order or not patch_list:
        return
    items = _split_deletions(patch_list)[0] if merge_key else patch_list
    p = s = 0
    while p < len(items) and s < len(order):
        if isinstance(items[p], dict) and DIRECTIVE in items[p]:
            p += 1
            continue
        if _merge_key_equal(items[p], order[s], merge_key):
            p += 1
        s += 1
    if p < len(items) and s >= len(order):
        raise PatchFailed(f"The order in patch list:\n{_gofmt(patch_list)}\n doesn't match "
                          f"{SET_ELEMENT_ORDER} list:\n{_gofmt(order)}")


def _merge_key_equal(left: JSON, right: JSON, merge_key: str) -> bool:
    if not merge_key:
        return _same(left, right)
    for side in (left, right):
        if not isinstance(side, dict):
            raise PatchFailed(_bad_arg_type({}, side))
        if merge_key not in side:
            raise PatchFailed(_no_merge_key(side, merge_key))
    return _same(left[merge_key], right[merge_key])


# --- applying: directive clean-up ---------------------------------------------------------------------------


def _extract_key(key: str, prefix: str) -> str:
    """``$deleteFromPrimitiveList/finalizers`` → ``finalizers`` (anything else after the prefix is malformed)."""
    head, sep, tail = key.partition("/")
    if not sep or head != prefix:
        raise bad_request(ERR_BAD_PATCH_FORMAT_FOR_PRIMITIVE_LIST if prefix == DELETE_FROM_PRIMITIVE_LIST
                          else ERR_BAD_PATCH_FORMAT_FOR_SET_ELEMENT_ORDER_LIST)
    return tail


def _discard_nulls(value: JSON) -> None:
    """``discardNullValuesFromPatch``: a value that is added outright keeps no ``null`` members (in place)."""
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for item in value.values():
            _discard_nulls(item)
    elif isinstance(value, list):
        for item in value:
            _discard_nulls(item)


def _remove_directives(value: JSON) -> tuple[bool, JSON]:
    """``removeDirectives``: objects carrying ``$patch`` are dropped (``False``) rather than stored."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return False, None
        for key in list(value):
            keep, cleaned = _remove_directives(value[key])
            if keep:
                value[key] = cleaned
            else:
                del value[key]
        return True, value
    if isinstance(value, list):
        return True, [cleaned for keep, cleaned in map(_remove_directives, value) if keep]
    return True, value


def _is_directive_key(key: str) -> bool:
    return key in (DIRECTIVE, RETAIN_KEYS) or key.startswith((SET_ELEMENT_ORDER + "/",
                                                              DELETE_FROM_PRIMITIVE_LIST + "/"))


def _strip_directive_keys(value: JSON) -> JSON:
    """Drop directive keys from a value taken whole, as decoding into the typed object would."""
    if isinstance(value, dict):
        return {k: _strip_directive_keys(v) for k, v in value.items() if not _is_directive_key(k)}
    if isinstance(value, list):
        return [_strip_directive_keys(v) for v in value]
    return value


# --- creating -----------------------------------------------------------------------------------------------


def _diff_maps(original: dict[str, JSON], modified: dict[str, JSON], struct: Struct,
               build_retain_keys: bool) -> dict[str, JSON]:
    """``diffMaps`` with ``SetElementOrder`` on, as ``CreateTwoWayMergePatch`` calls it."""
    patch: dict[str, JSON] = {}
    retain: list[str] = []
    for key, new in modified.items():
        if build_retain_keys and new is not None:
            retain.append(key)
        if key not in original:
            patch[key] = _copy(new)
            continue
        old = original[key]
        if key == DIRECTIVE:
            if not isinstance(old, str) or not isinstance(new, str):
                raise PatchFailed(f"invalid value for special key: {DIRECTIVE}")
            if old != new:
                patch[key] = new
            continue
        if _go_type(old) != _go_type(new):
            patch[key] = _copy(new)
            continue
        field = struct.get(key, _NO_FIELD)
        if isinstance(old, dict):
            if field.strategy == REPLACE:
                patch[key] = _copy(new)
            else:
                nested = _diff_maps(old, new, field.schema, field.retain_keys)
                if nested:
                    patch[key] = nested
        elif isinstance(old, list):
            _diff_list_field(key, old, new, field, patch)
        elif not _equal(old, new):
            patch[key] = _copy(new)
    for key in original:
        if key not in modified:
            patch[key] = None
    if retain and (patch or any(v is not None and k not in modified for k, v in original.items())):
        patch[RETAIN_KEYS] = sorted(retain, key=_gofmt)
    return patch


def _diff_list_field(key: str, old: list[JSON], new: list[JSON], field: Field, patch: dict[str, JSON]) -> None:
    if field.strategy != MERGE:
        if not _equal(old, new):
            patch[key] = _copy(new)
        return
    additions, deletions, order = _diff_lists(old, new, field)
    if additions:
        patch[key] = additions
    if deletions:
        patch[f"{DELETE_FROM_PRIMITIVE_LIST}/{key}"] = deletions
    if order:
        patch[f"{SET_ELEMENT_ORDER}/{key}"] = order


def _diff_lists(original: list[JSON], modified: list[JSON],
                field: Field) -> tuple[list[JSON], list[JSON], list[JSON]]:
    """``diffLists``: (patch list, primitive deletion list, ``$setElementOrder`` list)."""
    if not original:
        return _copy(modified), [], []
    kind = _list_element_type(original, modified)
    merge_key = field.merge_key
    if kind == "map":
        changes, deletions = _diff_lists_of_maps(original, modified, field)
        changes = _normalize_list_order(changes, modified, merge_key, kind)
        order_same = _is_order_same(original, modified, merge_key)
        changes += deletions
        order = [{merge_key: item[merge_key]} for item in modified] if changes or not order_same else []
        return changes, [], order
    additions, removals = _diff_lists_of_scalars(original, modified)
    additions = _normalize_list_order(additions, modified, "", kind)
    order = _copy(modified) if removals or not _equal(original, modified) else []
    return additions, removals, order


def _diff_lists_of_maps(original: list[JSON], modified: list[JSON], field: Field) -> tuple[list[JSON], list[JSON]]:
    """Walk both lists sorted by merge key: recurse into common items, add new ones, mark removed ones."""
    merge_key = field.merge_key
    old_sorted = sorted(original, key=lambda m: _gofmt(m.get(merge_key) if isinstance(m, dict) else None))
    new_sorted = sorted(modified, key=lambda m: _gofmt(m.get(merge_key) if isinstance(m, dict) else None))
    changes: list[JSON] = []
    deletions: list[JSON] = []
    i = j = 0
    while i < len(old_sorted) or j < len(new_sorted):
        old_in, new_in = i < len(old_sorted), j < len(new_sorted)
        if old_in:
            old_item, old_value = _map_and_key(old_sorted[i], merge_key)
            old_text = _gofmt(old_value)
        if new_in:
            new_item, new_value = _map_and_key(new_sorted[j], merge_key)
            new_text = _gofmt(new_value)
        if old_in and new_in and old_text == new_text:
            nested = _diff_maps(old_item, new_item, field.schema, field.retain_keys)
            if nested:
                nested[merge_key] = new_value
                changes.append(nested)
            i += 1
            j += 1
        elif not old_in or (new_in and old_text > new_text):
            changes.append(_copy(new_item))
            j += 1
        else:
            deletions.append({merge_key: old_value, DIRECTIVE: DELETE})
            i += 1
    return changes, deletions


def _diff_lists_of_scalars(original: list[JSON], modified: list[JSON]) -> tuple[list[JSON], list[JSON]]:
    old_sorted, new_sorted = sorted(original, key=_gofmt), sorted(modified, key=_gofmt)
    additions: list[JSON] = []
    removals: list[JSON] = []
    i = j = 0
    while i < len(old_sorted) or j < len(new_sorted):
        old_in, new_in = i < len(old_sorted), j < len(new_sorted)
        old_text = _gofmt(old_sorted[i]) if old_in else ""
        new_text = _gofmt(new_sorted[j]) if new_in else ""
        if old_in and new_in and old_text == new_text:
            i += 1
            j += 1
        elif not old_in or (new_in and old_text > new_text):
            additions.append(new_sorted[j])
            j += 1
        else:
            removals.append(old_sorted[i])
            i += 1
    return additions, _dedup(removals)


def _map_and_key(item: JSON, merge_key: str) -> tuple[dict[str, JSON], JSON]:
    if not isinstance(item, dict):
        raise PatchFailed(_bad_arg_type({}, item))
    if merge_key not in item:
        raise PatchFailed(_no_merge_key(item, merge_key))
    return item, item[merge_key]


def _is_order_same(original: list[JSON], modified: list[JSON], merge_key: str) -> bool:
    if len(original) != len(modified):
        return False
    return all(_merge_key_equal(o, m, merge_key) for o, m in zip(original, modified))


# --- Go's view of JSON values -------------------------------------------------------------------------------

_GO_TYPES = {dict: "map", list: "slice", str: "string", bool: "bool", int: "int64", float: "float64",
             type(None): "nil"}
_GO_TYPE_NAMES = {"map": "map[string]interface {}", "slice": "[]interface {}", "string": "string", "bool": "bool",
                  "int64": "int64", "float64": "float64", "nil": "<nil>"}


def _go_type(value: JSON) -> str:
    """The Go type a decoded JSON value has in Kubernetes (integers decode as int64, others as float64)."""
    return _GO_TYPES.get(type(value), "map")


def _list_element_type(*lists: Sequence[JSON]) -> str:
    """``sliceElementType``: all elements must share one type, which must not be a list."""
    found: str | None = None
    for items in lists:
        for item in items:
            current = _go_type(item)
            if found is None:
                if current == "slice":
                    raise PatchRejected(ERR_NO_LIST_OF_LISTS)
                found = current
            elif current != found:
                raise PatchFailed(f"list element types are not identical: {_gofmt([list(x) for x in lists])}")
    if found is None:
        raise PatchFailed("no elements in any of the given slices")
    return found


def _key(value: JSON) -> Hashable:
    """A hashable identity with Go's interface equality: same type and same value (``1`` ≠ ``1.0`` ≠ ``true``)."""
    if isinstance(value, (dict, list)):
        return ("json", _gofmt(value))
    return (type(value), value)


def _same(a: JSON, b: JSON) -> bool:
    return _key(a) == _key(b)


def _bad_arg_type(expected: JSON, actual: JSON) -> str:
    return (f"expected a {_GO_TYPE_NAMES[_go_type(expected)]}, "
            f"but received a {_GO_TYPE_NAMES[_go_type(actual)]}")


def _no_merge_key(item: JSON, merge_key: str) -> str:
    return f"map: {_gofmt(item)} does not contain declared merge key: {merge_key}"


def _gofmt(value: JSON) -> str:
    """Go's ``%v`` of a decoded JSON value (maps print sorted: ``map[a:1 b:[x y]]``)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_gofmt(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_gofmt(v) for v in value) + "]"
    return str(value)


def _go_float(value: float) -> str:
    """``%v`` of a float64 (``%g``, shortest digits): exponent form below 1e-4 and from 1e6 up (``1e+06``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exponent)  # position of the decimal point after the first digit run
    exp10 = point - 1
    prefix = "-" if sign else ""
    if exp10 < -4 or exp10 >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"
