"""The JSONPath subset CRDs use: printer columns, selectable fields and the scale subresource's paths.

Supported: ``.a.b``, ``.a[0]``, ``.a[*].b``, ``.a[?(@.type=="Ready")].status`` (``==``/``!=`` against a string
or number), and an optional ``{...}`` wrapper — what operators' ``additionalPrinterColumns`` use in practice.
``find`` returns every match (kube's table convertor prints the first; several are joined with ``,``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_STEP = re.compile(
    r"""\.(?P<name>[A-Za-z0-9_\-/]+)"""
    r"""|\[(?P<index>-?\d+|\*)\]"""
    r"""|\[\?\(@\.(?P<field>[A-Za-z0-9_.\-]+)\s*(?P<op>==|!=)\s*(?P<value>"[^"]*"|'[^']*'|[-0-9.]+)\)\]"""
    r"""|\[['"](?P<key>[^'"]+)['"]\]""")
Step = tuple[str, Any]


class JSONPathError(ValueError):
    pass


@lru_cache(maxsize=512)
def parse(path: str) -> tuple[Step, ...]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    text = text.removeprefix("$")
    steps: list[Step] = []
    pos = 0
    while pos < len(text):
        m = _STEP.match(text, pos)
        if m is None:
            raise JSONPathError(f"unrecognized JSONPath {path!r} at {pos}")
        if m["name"] is not None:
            steps.append(("name", m["name"]))
        elif m["key"] is not None:
            steps.append(("name", m["key"]))
        elif m["index"] is not None:
            steps.append(("all", None) if m["index"] == "*" else ("index", int(m["index"])))
        else:
            raw = m["value"]
            value: Any = raw[1:-1] if raw[0] in "'\"" else float(raw)
            steps.append(("filter", (m["field"].split("."), m["op"], value)))
        pos = m.end()
    return tuple(steps)


def find(obj: Any, path: str) -> list[Any]:
    current = [obj]
    for kind, arg in parse(path):
        nxt: list[Any] = []
        for node in current:
            if ((kind == "name" and isinstance(node, dict) and arg in node)
                    or (kind == "index" and isinstance(node, list) and -len(node) <= arg < len(node))):
                nxt.append(node[arg])
            elif kind == "all" and isinstance(node, list):
                nxt.extend(node)
            elif kind == "all" and isinstance(node, dict):
                nxt.extend(node.values())
            elif kind == "filter" and isinstance(node, list):
                nxt.extend(item for item in node if _matches(item, arg))
        current = nxt
    return current


def _matches(item: Any, spec: tuple[list[str], str, Any]) -> bool:
    fields, op, value = spec
    node = item
    for field in fields:
        if not isinstance(node, dict) or field not in node:
            return False
        node = node[field]
    if isinstance(value, float) and isinstance(node, (int, float)) and not isinstance(node, bool):
        equal = float(node) == value
    else:
        equal = node == value
    return equal if op == "==" else not equal


def get(obj: Any, path: str) -> Any:
    """The first match, or None."""
    found = find(obj, path)
    return found[0] if found else None


def set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    """Set a plain ``.a.b.c`` path, creating objects on the way (the scale subresource's replicas)."""
    node = obj
    steps = parse(path)
    for kind, name in steps[:-1]:
        if kind != "name":
            raise JSONPathError(f"cannot set through {path!r}")
        child = node.get(name)
        if not isinstance(child, dict):
            child = node[name] = {}
        node = child
    kind, name = steps[-1]
    if kind != "name":
        raise JSONPathError(f"cannot set {path!r}")
    node[name] = value
