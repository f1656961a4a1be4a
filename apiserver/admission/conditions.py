"""Webhook ``matchConditions``: CEL over ``object``, ``oldObject``, ``request`` and ``authorizer``.

As kube's matcher: any condition false means the webhook is not called (even when another one failed);
otherwise an evaluation error is the caller's to handle with the webhook's failure policy.
"""

from __future__ import annotations

from typing import Any

from .. import cel
from .attributes import Attributes
from .celenv import BASE_VARIABLES, activation, compiled
from .webhook.dispatch import ConditionError


class WebhookMatchConditions:
    """``MatchConditions`` for the webhook dispatchers."""

    def matches(self, owner: str, conditions: list[dict[str, Any]], attrs: Attributes) -> bool:
        values = activation(attrs)
        errors: list[str] = []
        for condition in conditions:
            expression = condition.get("expression") or ""
            try:
                result, _cost = compiled(expression, BASE_VARIABLES, True).evaluate(values)
            except (cel.CompileError, cel.EvaluationError) as err:
                errors.append(f"matchConditions[{condition.get('name', '')}]: expression '{expression}' resulted "
                              f"in error: {err}")
                continue
            if result is not True:
                if result is False:
                    return False
                errors.append(f"matchConditions[{condition.get('name', '')}]: expression '{expression}' must "
                              f"evaluate to bool")
        if errors:
            raise ConditionError("; ".join(errors))
        return True
