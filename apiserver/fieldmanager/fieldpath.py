"""Field sets in their wire form, ``FieldsV1`` (structured-merge-diff's ``fieldpath.Set``).

A set is a tree of path elements — ``f:<field>``, ``k:<keys as JSON>`` (an associative list's item), ``v:<value
as JSON>`` (a set's item), ``i:<index>`` — each node a dict of its children. A node is itself a member of the set
when it has no children (``{}``) or holds the ``"."`` marker; the root is never a member. Keeping sets in this
shape means managedFields are decoded and encoded without conversion; the operations below build new trees and
never mutate their arguments.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

FieldSet = dict[str, Any]
MEMBER = "."


def is_member(node: FieldSet) -> bool:
    return not node or MEMBER in node


def make_node(member: bool, children: FieldSet) -> FieldSet | None:
    if not children:
        return {} if member else None
    if member:
        return {MEMBER: {}, **children}
    return children


def union(a: FieldSet, b: FieldSet) -> FieldSet:
    if not a:
        return b
    if not b:
        return a
    out = dict(a)
    out.pop(MEMBER, None)
    for key, child in b.items():
        if key == MEMBER:
            continue
        mine = out.get(key)
        out[key] = child if mine is None else _union_node(mine, child)
    return out


def _union_node(a: FieldSet, b: FieldSet) -> FieldSet:
    merged = make_node(is_member(a) or is_member(b), union(a, b))
    assert merged is not None
    return merged


def difference(a: FieldSet, b: FieldSet, recursive: bool = False) -> FieldSet:
    """Members of ``a`` not in ``b``; ``recursive``: nor under a member of ``b`` (SMD's ``RecursiveDifference``,
    how reset and stripped fields are filtered out, subtrees and all)."""
    if not a or not b:
        return {k: v for k, v in a.items() if k != MEMBER}
    out: FieldSet = {}
    for key, child in a.items():
        if key == MEMBER:
            continue
        other = b.get(key)
        if other is None:
            out[key] = child
            continue
        if recursive and is_member(other):
            continue
        node = make_node(is_member(child) and not is_member(other), difference(child, other, recursive))
        if node is not None:
            out[key] = node
    return out


def intersection(a: FieldSet, b: FieldSet) -> FieldSet:
    out: FieldSet = {}
    if not a or not b:
        return out
    for key, child in a.items():
        if key == MEMBER:
            continue
        other = b.get(key)
        if other is None:
            continue
        node = make_node(is_member(child) and is_member(other), intersection(child, other))
        if node is not None:
            out[key] = node
    return out


def paths(tree: FieldSet, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The member paths of ``tree``, parents before their children."""
    for key, child in tree.items():
        if key == MEMBER:
            continue
        path = (*prefix, key)
        if is_member(child):
            yield path
        yield from paths(child, path)


def path_string(path: tuple[str, ...]) -> str:
    """A path as kube prints it in conflicts: ``.spec.containers[name="nginx"].image``, ``[="x"]``."""
    out = []
    for element in path:
        kind, rest = element[0], element[2:]
        if kind == "f":
            out.append("." + rest)
        elif kind == "k":
            keys = orjson.loads(rest)
            out.append("[" + ",".join(f"{k}={_go_value(v)}" for k, v in keys.items()) + "]")
        elif kind == "v":
            out.append(f"[={_go_value(orjson.loads(rest))}]")
        else:
            out.append(f"[{rest}]")
    return "".join(out)


def _go_value(value: Any) -> str:
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value) if not isinstance(value, (dict, list)) else orjson.dumps(value).decode()



def recursive_difference(a: FieldSet, b: FieldSet) -> FieldSet:
    return difference(a, b, recursive=True)
