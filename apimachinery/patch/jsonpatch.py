"""RFC 6902 JSON Patch with the semantics of ``gopkg.in/evanphx/json-patch.v4``, the library kube-apiserver uses.

Where that library departs from the RFC, this module departs with it, because clients see the result:

* negative array indices count from the end (``/spec/containers/-1``); indices parse like Go's ``Atoi``;
* ``replace`` of a missing object member adds it (only a missing array index fails);
* ``copy`` from a missing object member copies ``null``;
* ``add`` without a ``value`` adds ``null``; ``test`` never matches a missing or ``null`` member;
* paths are split on ``/`` and the first segment ignored, so ``a/b`` means ``/b``; ``""`` names the whole
  document only for ``replace`` and ``test``;
* scalars compare as their JSON text, so ``1`` and ``1.0`` differ.

Failures raise ``PatchRejected`` (422, kube-apiserver's generic message) and a document that is not a list of
operations raises ``BadRequest``; see ``apimachinery.patch`` for the mapping.
"""

from __future__ import annotations

import re
from typing import Any

from apimachinery.patch.errors import MAX_JSON_PATCH_OPERATIONS, PatchRejected, bad_request, too_many_operations
from apimachinery.patch.values import copy_json as _copy
from apimachinery.patch.values import equal_json as _equal
from apimachinery.patch.values import go_json_kind

JSON = Any
Container = dict[str, JSON] | list[JSON]

_ATOI = re.compile(r"[+-]?[0-9]+")
_MISSING = object()


def apply(doc: JSON, operations: JSON) -> JSON:
    """Apply ``operations`` to a copy of ``doc`` and return the copy; ``doc`` is left untouched."""
    if not isinstance(operations, list):
        raise bad_request(f"json: cannot unmarshal {go_json_kind(operations)} into Go value of type jsonpatch.Patch")
    for operation in operations:
        if not isinstance(operation, dict):
            raise bad_request(
                f"json: cannot unmarshal {go_json_kind(operation)} into Go value of type jsonpatch.Operation")
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise too_many_operations(len(operations))
    holder = [_copy(doc)]  # the document lives in a one-element list so "replace ''" can swap it
    for operation in operations:
        kind = operation.get("op")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise PatchRejected(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")
        handler(holder, operation)
    return holder[0]


# --- operations ---------------------------------------------------------------------------------------------


def _add(holder: list[JSON], op: dict[str, JSON]) -> None:
    path = _path(op, "path", "add")
    container, key = _find(holder[0], path)
    if container is None:
        raise PatchRejected(f'add operation does not apply: doc is missing path: "{path}"')
    _insert(container, key, _copy(op.get("value")), path)


def _remove(holder: list[JSON], op: dict[str, JSON]) -> None:
    path = _path(op, "path", "remove")
    container, key = _find(holder[0], path)
    if container is None:
        raise PatchRejected(f'remove operation does not apply: doc is missing path: "{path}"')
    _delete(container, key, path)


def _replace(holder: list[JSON], op: dict[str, JSON]) -> None:
    path = _path(op, "path", "replace")
    value = op.get("value")
    if path == "":
        if not isinstance(value, (dict, list)):
            raise PatchRejected("replace operation value must be object or array")
        holder[0] = _copy(value)
        return
    container, key = _find(holder[0], path)
    if container is None:
        raise PatchRejected(f"replace operation does not apply: doc is missing path: {path}")
    if isinstance(container, list):
        index = _index(container, key, path)
        if index is None:
            raise PatchRejected(f"replace operation does not apply: doc is missing key: {path}")
        container[index] = _copy(value)
    else:
        container[key] = _copy(value)  # v4 reads a missing member as null, so replace acts as add here


def _move(holder: list[JSON], op: dict[str, JSON]) -> None:
    source = _path(op, "from", "move")
    container, key = _find(holder[0], source)
    if container is None:
        raise PatchRejected(f"move operation does not apply: doc is missing from path: {source}")
    value = _get(container, key, source)
    _delete(container, key, source)
    path = _path(op, "path", "move")
    container, key = _find(holder[0], path)
    if container is None:
        raise PatchRejected(f"move operation does not apply: doc is missing destination path: {path}")
    _insert(container, key, None if value is _MISSING else value, path)


def _copy_op(holder: list[JSON], op: dict[str, JSON]) -> None:
    source = _path(op, "from", "copy")
    container, key = _find(holder[0], source)
    if container is None:
        raise PatchRejected(f"copy operation does not apply: doc is missing from path: {source}")
    value = _get(container, key, source)
    path = _path(op, "path", "copy")
    container, key = _find(holder[0], path)
    if container is None:
        raise PatchRejected(f"copy operation does not apply: doc is missing destination path: {path}")
    _insert(container, key, None if value is _MISSING else _copy(value), path)


def _test(holder: list[JSON], op: dict[str, JSON]) -> None:
    path = _path(op, "path", "test")
    if path == "":
        if "value" not in op or not _equal(holder[0], op["value"]):
            raise PatchRejected(f"testing value {path} failed")
        return
    container, key = _find(holder[0], path)
    if container is None:
        raise PatchRejected(f"test operation does not apply: is missing path: {path}")
    value = _get(container, key, path)
    # v4 holds a JSON null member as a nil node, and a nil node never equals the operation's value.
    if value is _MISSING or value is None or "value" not in op or not _equal(value, op["value"]):
        raise PatchRejected(f"testing value {path} failed")


_HANDLERS = {"add": _add, "remove": _remove, "replace": _replace, "move": _move, "copy": _copy_op, "test": _test}


# --- pointers and containers --------------------------------------------------------------------------------


def _path(op: dict[str, JSON], field: str, kind: str) -> str:
    value = op.get(field)
    if not isinstance(value, str):
        what = "path" if field == "path" else "from"
        raise PatchRejected(f"{kind} operation failed to decode {what}")
    return value


def _decode(token: str) -> str:
    """RFC 6901 unescaping in one left-to-right pass: ``~1`` → ``/``, ``~0`` → ``~``."""
    if "~" not in token:
        return token
    return re.sub(r"~[01]", lambda m: "/" if m.group() == "~1" else "~", token)


def _find(doc: JSON, path: str) -> tuple[Container | None, str]:
    """The container holding the last path segment, walking every segment but the first and last."""
    segments = path.split("/")
    if len(segments) < 2:
        return None, ""
    node = doc
    for part in segments[1:-1]:
        if not isinstance(node, (dict, list)):
            return None, ""
        child = _get(node, _decode(part), path, strict=False)
        if not isinstance(child, (dict, list)):
            return None, ""
        node = child
    if not isinstance(node, (dict, list)):
        return None, ""
    return node, _decode(segments[-1])


def _atoi(key: str) -> int | None:
    return int(key) if _ATOI.fullmatch(key) else None


def _index(array: list[JSON], key: str, path: str) -> int | None:
    """A readable index (negative counts from the end), or ``None`` when out of range."""
    index = _atoi(key)
    if index is None:
        raise PatchRejected(f'strconv.Atoi: parsing "{key}": invalid syntax')
    if index < 0:
        index += len(array)
    return index if 0 <= index < len(array) else None


def _get(container: Container, key: str, path: str, strict: bool = True) -> JSON:
    """The member at ``key``: ``_MISSING`` for an absent object member; a bad array index fails (if strict)."""
    if isinstance(container, dict):
        return container.get(key, _MISSING)
    index = _atoi(key)
    if index is not None and index < 0:
        index += len(container)
    if index is None or not 0 <= index < len(container):
        if not strict:
            return _MISSING
        raise PatchRejected(f"Unable to access invalid index: {key}")
    return container[index]


def _insert(container: Container, key: str, value: JSON, path: str) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    index = _atoi(key)
    if index is None:
        raise PatchRejected(f"value was not a proper array index: '{key}'")
    size = len(container) + 1
    if index < 0:
        index += size
    if not 0 <= index < size:
        raise PatchRejected(f"Unable to access invalid index: {key}")
    container.insert(index, value)


def _delete(container: Container, key: str, path: str) -> None:
    if isinstance(container, dict):
        if key not in container:
            raise PatchRejected(f"Unable to remove nonexistent key: {key}")
        del container[key]
        return
    index = _index(container, key, path)
    if index is None:
        raise PatchRejected(f"Unable to access invalid index: {key}")
    del container[index]


# --- values -------------------------------------------------------------------------------------------------
