"""Compiling and running CEL as Kubernetes does: compile once (syntax, declared variables, estimated cost), then
evaluate many times against an activation with a runtime cost limit, failing with cel-go's texts.

The evaluator is ``common-expression-language`` (the ``cel`` module, Rust's ``cel`` crate): measured against
``cel-python`` on typical admission rules it compiles ~8x and evaluates ~12x faster (see the commit that chose
it). It is untyped here (every variable is ``dyn``), so what kube's type checker refuses at compile time is
refused here when it can be told from the syntax (an undeclared variable, a rule that cannot be a bool), and
otherwise at run time.
"""

from __future__ import annotations

import contextvars
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import cost, engine, library
from .render import render
from .syntax import Node, SyntaxProblem, free_identifiers, parse

if TYPE_CHECKING:
    import cel

logging.getLogger("cel").setLevel(logging.CRITICAL)  # it logs every failed call; callers report them instead
_counter: contextvars.ContextVar[cost.Counter | None] = contextvars.ContextVar("cel_cost_counter", default=None)
_NAMESPACES = frozenset({"math", "sets", "strings", "base64", "lists", "ip", "optional"})
_NOT_BOOL_LITERALS = ("string", "int", "uint", "double", "bytes", "null")
_FUNCTION_ERROR = re.compile(r"Function '([^']*)' error: (?:Python function call failed: )?(?:\w+: )?(.*?)"
                             r"(?:\. Check function arguments and their types\.)?$", re.DOTALL)


class CompileError(Exception):
    """Not a usable expression; the message is cel-go's (``ERROR: <input>:1:1: …``)."""


class EvaluationError(Exception):
    """The expression failed while running (``no such key: x``, ``no such overload``, …)."""


class CostLimitExceeded(EvaluationError):
    """The runtime cost limit was passed."""

    def __init__(self) -> None:
        super().__init__("operation cancelled: actual cost limit exceeded")


def _step(amount: int, value: Any) -> Any:
    counter = _counter.get()
    return value if counter is None else counter.step(amount, value)


def _base_context() -> cel.Context:
    context: cel.Context = engine.module().Context()
    engine.stdlib().add_stdlib_to_context(context)
    for name, function in library.functions().items():
        context.add_function(name, function)
    context.add_function(cost.COUNTER, _step)
    return context


_CONTEXT: cel.Context | None = None


def _context() -> cel.Context:
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = _base_context()
    return _CONTEXT


@dataclass(frozen=True)
class Program:
    """One compiled expression: run it with ``evaluate``."""

    source: str
    tree: Node
    variables: frozenset[str]
    estimated_cost: int
    _program: Any

    def references(self, variable: str) -> set[str]:
        """The fields of ``variable`` the expression selects (``variables.x`` → {"x"})."""
        from .syntax import walk

        return {n.name for n in walk(self.tree) if n.kind == "select" and n.target is not None and
                n.target.kind == "ident" and n.target.name == variable}

    def evaluate(self, activation: Mapping[str, Any], limit: int = cost.PER_CALL_LIMIT) -> tuple[Any, int]:
        """The value and the actual cost; ``EvaluationError`` (``CostLimitExceeded``) when it fails."""
        counter = cost.Counter(cost.base_cost(self.tree), limit)
        if counter.cost > limit:
            raise CostLimitExceeded()
        context = _context()
        context.update({name: activation.get(name) for name in self.variables})
        token = _counter.set(counter)
        try:
            value = self._program.execute(context)
        except Exception as err:  # the evaluator's exceptions: KeyError, TypeError, RuntimeError, …
            if counter.exceeded:
                raise CostLimitExceeded() from None
            raise EvaluationError(evaluation_message(err)) from None
        finally:
            _counter.reset(token)
        return value, counter.cost


def evaluation_message(err: Exception) -> str:
    """cel-go's wording for the evaluator's errors."""
    if isinstance(err, KeyError):
        return f"no such key: {err.args[0] if err.args else ''}"
    if isinstance(err, ZeroDivisionError):
        return "division by zero"
    text = str(err)
    match = _FUNCTION_ERROR.match(text)
    if match:
        return match.group(2)
    if text.startswith("No such overload") or "no such overload" in text.lower():
        return "no such overload"
    undefined = re.match(r"Undefined variable or function: '([^']*)'", text)
    if undefined:
        return f"no such attribute: {undefined.group(1)}"
    return text


def compile(expression: str, variables: Iterable[str], *, boolean: bool = False,
            sizes: cost.Sizes | None = None) -> Program:
    """Compile ``expression`` over the declared ``variables``: syntax, undeclared references and (with
    ``boolean``) a result that cannot be a bool are ``CompileError``s; the estimated cost uses ``sizes``."""
    declared = frozenset(variables)
    if ".?" not in expression and "[?" not in expression:  # the evaluator's own syntax errors read best
        try:
            engine.module().compile(expression)
        except ValueError as err:
            raise CompileError(_syntax_message(str(err))) from None
    try:
        tree = parse(expression)
    except SyntaxProblem as err:
        raise CompileError(str(err)) from None
    for ident in free_identifiers(tree):
        if ident.name not in declared and ident.name not in _NAMESPACES:
            line_col = _line_col(expression, ident.start)
            raise CompileError(f"ERROR: <input>:{line_col}: undeclared reference to '{ident.name}' (in container "
                               f"'')")
    if boolean and not _may_be_bool(tree):
        raise CompileError("cel expression must evaluate to a bool")
    try:
        program = engine.module().compile(render(tree))
    except ValueError as err:
        raise CompileError(_syntax_message(str(err))) from None
    return Program(expression, tree, declared, cost.estimate(tree, sizes), program)


def _syntax_message(text: str) -> str:
    """The evaluator's parse error without its preamble: ``ERROR: <input>:l:c: …`` and the caret lines."""
    index = text.find("ERROR:")
    return text[index:] if index >= 0 else text


def _line_col(source: str, offset: int) -> str:
    line = source.count("\n", 0, offset) + 1
    return f"{line}:{offset - (source.rfind(chr(10), 0, offset) + 1) + 1}"


def _may_be_bool(tree: Node) -> bool:
    if tree.kind == "literal":
        return tree.value == "bool"
    if tree.kind in ("list", "map"):
        return False
    if tree.kind == "binary" and tree.name in ("+", "-", "*", "/", "%"):
        return False
    if tree.kind == "unary" and tree.name == "-":
        return False
    if tree.kind == "comprehension":
        return tree.name not in ("map", "filter")
    return True

