"""The CEL evaluator (the ``common-expression-language`` package, module ``cel``), imported on first use.

Its package imports its command-line tool too (typer, rich, prompt_toolkit: ~0.2 s on a quiet machine, seconds on
a busy one) on every apiserver start, although most apiservers never evaluate an expression; so nothing here is
loaded until a rule, a policy or a match condition is compiled.
"""

from __future__ import annotations

from functools import lru_cache
from types import ModuleType


@lru_cache(maxsize=1)
def module() -> ModuleType:
    import cel

    return cel


@lru_cache(maxsize=1)
def stdlib() -> ModuleType:
    from cel import stdlib

    return stdlib
