"""CEL for the apiserver: admission (webhook matchConditions, ValidatingAdmissionPolicy) and CRD validation rules.

* ``program``: ``compile(expression, variables)`` once — syntax, undeclared variables, an estimated cost — then
  ``Program.evaluate(activation, limit)`` as often as needed, with a runtime cost limit and cel-go's error texts;
* ``library``: Kubernetes' CEL libraries (regex, lists, strings.format, quantity, URLs, IP/CIDR, authorizer);
* ``cost``: the cost model, limits (``PER_CALL_LIMIT``, ``RUNTIME_CEL_COST_BUDGET``, ``STATIC_ESTIMATED_COST_LIMIT``)
  and the CRD "estimated rule cost exceeds budget" text;
* ``syntax``: the syntax tree costs are computed on (evaluation itself is the ``cel`` library's).

For ``x-kubernetes-validations``: ``compile_rule(rule, transition=…, sizes=…)`` declares ``self`` (and
``oldSelf`` for transition rules) and refuses rules estimated over budget; ``evaluate`` with
``{"self": …, "oldSelf": …}``.
"""

from __future__ import annotations

from functools import lru_cache

from . import cost
from .cost import PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET, STATIC_ESTIMATED_COST_LIMIT, Sizes
from .library import authorizer
from .program import CompileError, CostLimitExceeded, EvaluationError, Program, compile


def compile_rule(rule: str, *, transition: bool = False, sizes: Sizes | None = None,
                 limit: int = STATIC_ESTIMATED_COST_LIMIT) -> Program:
    """A CRD validation rule over ``self`` (and ``oldSelf``); over its estimated budget it is a CompileError
    with kube's text."""
    program = compile(rule, ("self", "oldSelf") if transition else ("self",), sizes=sizes)
    if program.estimated_cost > limit:
        raise CompileError(cost.exceeds_budget_message(program.estimated_cost, limit))
    return program


@lru_cache(maxsize=4096)
def compile_cached(expression: str, variables: tuple[str, ...], boolean: bool = False) -> Program:
    """``compile`` once per expression and environment (admission evaluates the same rules on every request);
    a ``CompileError`` is raised again each time."""
    return compile(expression, variables, boolean=boolean)


__all__ = ["compile_cached", "PER_CALL_LIMIT", "RUNTIME_CEL_COST_BUDGET", "STATIC_ESTIMATED_COST_LIMIT", "CompileError",
           "CostLimitExceeded", "EvaluationError", "Program", "Sizes", "authorizer", "compile", "compile_rule"]
