"""CEL cost: the static estimate made when a rule is compiled, and the runtime count made while it runs.

Kubernetes bounds CEL twice (``k8s.io/apiserver/pkg/apis/cel``): a rule whose *estimated* cost is over budget is
refused when it is written (CRD validation rules), and an evaluation stops once its *actual* cost passes the
per-call limit (``operation cancelled: actual cost limit exceeded``).

The model is cel-go's in outline: every identifier, field selection, operator and call costs 1; a comprehension
(``all``, ``exists``, ``exists_one``, ``map``, ``filter``) costs its range plus, per element, its body. For the
estimate a list's size comes from ``sizes`` (a CRD's ``maxItems``, say) or, when nothing bounds it, from the
largest list a request can carry (kube's ``MaxRequestSizeBytes`` over the smallest element). At run time the
body of every comprehension is wrapped in a counting call (``render``), so the count follows the elements
actually visited.
"""

from __future__ import annotations

from collections.abc import Callable

from .syntax import Node

PER_CALL_LIMIT = 1_000_000  # PerCallLimit: one expression's runtime budget
RUNTIME_CEL_COST_BUDGET = 10_000_000  # RuntimeCELCostBudget: one binding's (or custom resource's) budget
STATIC_ESTIMATED_COST_LIMIT = 10_000_000  # StaticEstimatedCostLimit: one CRD rule's estimated budget
MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024
UNBOUNDED_LIST_SIZE = MAX_REQUEST_SIZE_BYTES // 2  # the smallest serialised element and its comma
COUNTER = "__kubelab_cost"

Sizes = Callable[[str], int | None]


def path_of(node: Node) -> str:
    """``self.spec.items`` for a select chain from a variable; "" for anything else."""
    parts: list[str] = []
    while node.kind == "select" and node.target is not None:
        parts.append(node.name)
        node = node.target
    if node.kind != "ident":
        return ""
    return ".".join([node.name, *reversed(parts)])


def size_of(node: Node, sizes: Sizes | None) -> int:
    """The largest number of elements ``node`` can have."""
    if node.kind in ("list", "map"):
        return len(node.args) if node.kind == "list" else len(node.args) // 2
    if node.kind == "comprehension" and node.name in ("map", "filter") and node.target is not None:
        return size_of(node.target, sizes)
    path = path_of(node)
    if path and sizes is not None:
        bound = sizes(path)
        if bound is not None:
            return bound
    return UNBOUNDED_LIST_SIZE


def body_cost(node: Node, sizes: Sizes | None = None) -> int:
    """The estimated cost of ``node``, comprehensions included."""
    if node.kind == "comprehension":
        assert node.target is not None
        return estimate(node.target, sizes) + size_of(node.target, sizes) * (estimate(node.args[0], sizes) + 1)
    own = 0 if node.kind == "literal" else 1
    total = own + (estimate(node.target, sizes) if node.target is not None else 0)
    return total + sum(estimate(arg, sizes) for arg in node.args)


def estimate(node: Node, sizes: Sizes | None = None) -> int:
    return body_cost(node, sizes)


def base_cost(node: Node) -> int:
    """The cost of ``node`` outside comprehension bodies (what runs once per evaluation)."""
    if node.kind == "comprehension":
        assert node.target is not None
        return base_cost(node.target) + 1
    own = 0 if node.kind == "literal" else 1
    total = own + (base_cost(node.target) if node.target is not None else 0)
    return total + sum(base_cost(arg) for arg in node.args)


def exceeds_budget_message(cost: int, limit: int) -> str:
    """The CRD validation text for a rule estimated over budget."""
    factor = cost / limit
    return (f"estimated rule cost exceeds budget by factor of {factor:.6g}x (try simplifying the rule, or "
            f"adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")


class CostExceeded(Exception):
    """The evaluation passed its runtime cost limit."""


class Counter:
    """One evaluation's running cost; ``step`` is what instrumented bodies call."""

    def __init__(self, start: int, limit: int) -> None:
        self.cost = start
        self.limit = limit
        self.exceeded = False

    def step(self, amount: int, value: object) -> object:
        self.cost += int(amount)
        if self.cost > self.limit:
            self.exceeded = True
            raise CostExceeded()
        return value
