"""Typed operations on objects (structured-merge-diff's ``typed`` package): the field set an object holds, what
changed between two versions, the apply merge and the removal of fields an applier let go.

Every function walks a plain JSON value beside its ``TypeNode``. Structs and granular maps recurse; atomic values
and scalars are leaves; set lists are keyed by value (``v:``), associative lists by their key fields (``k:``),
atomic lists are one leaf. Unchanged subtrees are skipped with one C-level ``==``, so comparing two versions of
an object costs about the size of what changed.
"""

from __future__ import annotations

from typing import Any

import orjson

from .fieldpath import MEMBER, FieldSet, is_member, make_node
from .schema import DEDUCED, KEY_DEFAULTS, TypeNode, deduce

_MISSING = object()


def _typed(t: TypeNode, value: Any) -> TypeNode:
    return deduce(value) if t is DEDUCED else t


def _granular(t: TypeNode, value: Any) -> bool:
    """Whether ``value`` is walked into (a struct, granular map or set/map list) rather than owned whole."""
    return not t.leaf and isinstance(value, list if t.kind == "list" else dict)


def item_key(item: Any, t: TypeNode) -> str:
    """The path element of a list item: ``v:<value>`` in a set, ``k:{keys}`` in an associative list."""
    if t.list_type == "set" or not isinstance(item, dict):
        return "v:" + orjson.dumps(item).decode()
    keys = {}
    for key in sorted(t.keys):
        value = item.get(key, KEY_DEFAULTS.get(key))
        if value is not None:
            keys[key] = value
    return "k:" + orjson.dumps(keys).decode()


def _children(value: Any, t: TypeNode) -> list[tuple[str, Any, TypeNode]]:
    if isinstance(value, dict):
        return [("f:" + k, v, _typed(t.child(k), v)) for k, v in value.items()]
    item = t.item()
    return [(item_key(v, t), v, _typed(item, v)) for v in value]


def field_set(value: Any, t: TypeNode, added: bool = False) -> FieldSet:
    """The fields ``value`` holds (SMD's ``ToFieldSet``): leaves, list items, map entries, and struct fields only
    when null or empty. ``added`` also makes granular maps members, as a comparison reports new maps. Every write
    runs this over the object it creates, hence the loop written out by hand."""
    out: FieldSet = {}
    if not _granular(t, value):
        return out
    if isinstance(value, dict):
        struct = t.kind == "struct"
        child_type = t.child
        for key, child in value.items():
            ct = child_type(key)
            if ct is DEDUCED:
                ct = deduce(child)
            if ct.leaf or not child or not isinstance(child, list if ct.kind == "list" else dict):
                out["f:" + key] = {}
            elif struct and not (added and ct.kind == "map"):
                sub = field_set(child, ct, added)
                if sub:
                    out["f:" + key] = sub
            else:
                sub = field_set(child, ct, added)
                out["f:" + key] = {MEMBER: {}, **sub} if sub else {}
        return out
    item = t.item()
    for child in value:
        ct = deduce(child) if item is DEDUCED else item
        sub = field_set(child, ct, added)
        out[item_key(child, t)] = {MEMBER: {}, **sub} if sub else {}
    return out


def compare(lhs: Any, rhs: Any, t: TypeNode) -> tuple[FieldSet, FieldSet]:
    """(added or modified, removed) between two versions of a granular value (SMD's ``Compare``)."""
    changed: FieldSet = {}
    removed: FieldSet = {}
    items = isinstance(rhs, list)
    if not lhs and not items:  # everything is new (a create): no pairing to do
        return {pe: _whole(v, ct, False) for pe, v, ct in _children(rhs, t)}, removed
    left = {pe: (v, ct) for pe, v, ct in _children(lhs, t)}
    for pe, rv, ct in _children(rhs, t):
        found = left.pop(pe, None)
        if found is None:
            changed[pe] = _whole(rv, ct, items)
            continue
        lv = found[0]
        if lv == rv:
            continue
        if _granular(ct, lv) and _granular(ct, rv):
            c, r = compare(lv, rv, ct)
            if c:
                changed[pe] = c
            if r:
                removed[pe] = r
        else:
            changed[pe] = {}
    for pe, (lv, ct) in left.items():
        removed[pe] = _whole(lv, ct, items)
    return changed, removed


def _whole(value: Any, t: TypeNode, item: bool) -> FieldSet:
    """A value and everything in it, as SMD's comparison reports it: a member node, except a struct field with
    fields (Go's non-pointer structs are never absent, so kube never reports them added); list items always."""
    struct = not item and t.kind == "struct" and _granular(t, value) and bool(value)
    return make_node(not struct, field_set(value, t, added=True)) or {}


# --- apply ------------------------------------------------------------------------------------------------------
def merge(live: Any, config: Any, t: TypeNode) -> Any:
    """``config`` merged into ``live`` (SMD's ``Merge``): struct and map fields merge, set and associative lists
    merge item by item, everything else is replaced. Copy on write: ``live`` is not changed, untouched subtrees
    are shared with the result."""
    if not (_granular(t, live) and _granular(t, config)):
        return config
    if isinstance(live, dict):
        out = dict(live)
        for key, value in config.items():
            if value is None:
                out.pop(key, None)
                continue
            current = out.get(key, _MISSING)
            out[key] = value if current is _MISSING else merge(current, value, _typed(t.child(key), value))
        return out
    return _merge_list(live, config, t)


def _merge_list(live: list[Any], config: list[Any], t: TypeNode) -> list[Any]:
    """Items of both, merged, in SMD's order: live items the config lacks keep their place, applied items come
    in the config's order, and a shared item is placed where the config's order next expects it."""
    item = t.item()
    lpes = [item_key(v, t) for v in live]
    rpes = [item_key(v, t) for v in config]
    lobs = dict(zip(lpes, live, strict=False))
    robs = dict(zip(rpes, config, strict=False))
    shared = [pe for pe in rpes if pe in lobs]
    next_shared = 0  # index into shared of the shared item expected next
    done: set[str] = set()
    out: list[Any] = []
    li = ri = 0

    def merged(pe: str) -> Any:
        value = robs[pe]
        return merge(lobs[pe], value, _typed(item, value)) if pe in lobs else value

    def advance(pe: str) -> None:
        nonlocal next_shared
        if next_shared < len(shared) and shared[next_shared] == pe:
            next_shared += 1

    while li < len(lpes) or ri < len(rpes):
        if li < len(lpes) and ri < len(rpes):
            pe = lpes[li]
            if pe == rpes[ri]:
                done.add(pe)
                out.append(merged(pe))
                li, ri = li + 1, ri + 1
                advance(pe)
                continue
            if pe in robs and next_shared < len(shared) and shared[next_shared] != pe:
                li += 1  # a shared item, but not the one due now
                continue
        if li < len(lpes):
            pe = lpes[li]
            if pe not in robs:
                out.append(live[li])
                li += 1
                continue
            if pe in done:
                li += 1
                continue
        if ri < len(rpes):
            pe = rpes[ri]
            done.add(pe)
            out.append(merged(pe))
            ri += 1
            advance(pe)
    return out


def remove(value: Any, tree: FieldSet, owned: FieldSet, t: TypeNode) -> Any:
    """``value`` without the members of ``tree`` (SMD's ``RemoveItems``), except what ``owned`` still holds:
    a removed member goes with everything in it; a struct or map left empty by the removal goes too. Copy on
    write, as ``merge``."""
    if not _granular(t, value):
        return value
    if isinstance(value, dict):
        value = dict(value)
        for pe, sub in tree.items():
            if pe == MEMBER or not pe.startswith("f:") or pe[2:] not in value:
                continue
            name = pe[2:]
            kept = _kept(value[name], sub, owned.get(pe), _typed(t.child(name), value[name]))
            if kept is _MISSING:
                del value[name]
            else:
                value[name] = kept
        return value
    item = t.item()
    out = []
    for child in value:
        pe = item_key(child, t)
        sub = tree.get(pe)
        kept = child if sub is None else _kept(child, sub, owned.get(pe), _typed(item, child))
        if kept is not _MISSING:
            out.append(kept)
    return out


def _kept(value: Any, sub: FieldSet, owned: FieldSet | None, t: TypeNode) -> Any:
    inner_owned = {k: v for k, v in (owned or {}).items() if k != MEMBER}
    if is_member(sub) and not inner_owned:
        return _MISSING
    was_filled = bool(value)
    kept = remove(value, sub, inner_owned, t)
    if was_filled and not kept and isinstance(kept, dict) and owned is None:
        return _MISSING
    return kept
