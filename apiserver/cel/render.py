"""The expression the evaluator runs, printed from the syntax tree: comprehension bodies wrapped in the cost
counter, and CEL's optional syntax — which the evaluator does not parse — rewritten into library calls.

* ``L.all(x, B)`` (and ``exists``, ``exists_one``, ``map``, ``filter``) → ``L.all(x, __kubelab_cost(n, B))``;
* ``a.?f`` → ``__kubelab_opt_select(a, 'f')`` and ``a[?k]`` → ``__kubelab_opt_index(a, k)``; a selection or index
  on an optional stays optional (``a.?b.c``), as in cel-go; the optional values themselves and their functions
  (``optional.of``, ``orValue``, ``hasValue``, ``value``, ``or``…) are the evaluator's.

Binary, unary and conditional expressions are parenthesised, so the printed text needs no precedence rules.
"""

from __future__ import annotations

from .cost import COUNTER, base_cost
from .syntax import Node

OPT_SELECT = "__kubelab_opt_select"
OPT_INDEX = "__kubelab_opt_index"


def _is_optional(node: Node) -> bool:
    """Whether ``node`` evaluates to an optional (an optional selection or index, or one applied to it)."""
    while node.kind in ("select", "index"):
        if node.value == "?":
            return True
        node = node.target if node.kind == "select" else node.args[0]  # type: ignore[assignment]
    return node.kind == "call" and node.target is not None and node.target.kind == "ident" and \
        node.target.name == "optional"


def _operand(node: Node, instrument: bool) -> str:
    text = render(node, instrument)
    return f"({text})" if node.kind in ("binary", "unary", "ternary") else text


def render(node: Node, instrument: bool = True) -> str:
    """The expression of ``node`` as the evaluator takes it."""
    kind = node.kind
    if kind in ("literal", "ident"):
        return node.name
    if kind == "select":
        assert node.target is not None
        if node.value == "?" or _is_optional(node.target):
            return f"{OPT_SELECT}({render(node.target, instrument)}, '{node.name}')"
        return f"{_operand(node.target, instrument)}.{node.name}"
    if kind == "index":
        target, key = node.args
        if node.value == "?" or _is_optional(target):
            return f"{OPT_INDEX}({render(target, instrument)}, {render(key, instrument)})"
        return f"{_operand(target, instrument)}[{render(key, instrument)}]"
    if kind == "call":
        args = ", ".join(render(arg, instrument) for arg in node.args)
        if node.target is None:
            return f"{node.name}({args})"
        return f"{_operand(node.target, instrument)}.{node.name}({args})"
    if kind == "comprehension":
        assert node.target is not None
        body = render(node.args[0], instrument)
        if instrument:
            body = f"{COUNTER}({base_cost(node.args[0]) + 1}, {body})"
        return f"{_operand(node.target, instrument)}.{node.name}({node.var}, {body})"
    if kind == "list":
        return "[" + ", ".join(render(arg, instrument) for arg in node.args) + "]"
    if kind == "map":
        pairs = zip(node.args[::2], node.args[1::2], strict=False)
        return "{" + ", ".join(f"{render(k, instrument)}: {render(v, instrument)}" for k, v in pairs) + "}"
    if kind == "ternary":
        condition, then, otherwise = (render(arg, instrument) for arg in node.args)
        return f"({condition}) ? ({then}) : ({otherwise})"
    if kind == "binary":
        left, right = node.args
        return f"({render(left, instrument)}) {node.name} ({render(right, instrument)})"
    if kind == "unary":
        return f"{node.name}({render(node.args[0], instrument)})"
    raise ValueError(f"unknown node {kind}")
