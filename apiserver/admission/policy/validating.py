"""The ValidatingAdmissionPolicy plugin (kube's ``validating.Plugin``): every binding whose policy matches the
request is evaluated, and the bindings' actions decide what a failed validation does.

For each binding (in name order) whose policy exists and matches (``matchConstraints``, then the binding's
``matchResources``), for each parameter object: the ``matchConditions`` (any false: the binding does not apply),
the ``variables`` (evaluated in order, each seeing the earlier ones as ``variables.<name>``), then each validation:

* false: a violation with ``message``, else the ``messageExpression``'s value, else ``failed expression: <expr>``,
  and the validation's ``reason`` (default Invalid: 422; Forbidden: 403; RequestEntityTooLarge: 413);
* an error (or a binding that cannot be configured, or the binding's 10,000,000 runtime cost budget spent): a
  violation with ``failurePolicy: Fail``, nothing with ``Ignore``.

``Deny`` refuses the request with the first violation — ``<resource> "<name>" is forbidden: ValidatingAdmissionPolicy
'<policy>' with binding '<binding>' denied request: <message>`` with the violation's reason and code (kubectl prints
``The deployments "web" is invalid: : ValidatingAdmissionPolicy …``); ``Warn`` adds the Warning header
``Validation failed for ValidatingAdmissionPolicy '<policy>' with binding '<binding>': <message>``; ``Audit`` is
logged (there is no audit log). Expressions are ``dyn`` when they run; ``typecheck`` reports misspelt fields in
the policy's status.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apimachinery import errors
from apimachinery.errors import Cause

from ... import cel
from ...registry.admissionpolicies import policy_variables
from ..attributes import Attributes, Object
from ..celenv import activation
from ..sources import Sources
from .matcher import matches
from .params import ParamsError, params_for

log = logging.getLogger(__name__)
GROUP = "admissionregistration.k8s.io"
REASON_CODES = {"Forbidden": 403, "Invalid": 422, "RequestEntityTooLarge": 413}
OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"


@dataclass(frozen=True, slots=True)
class Violation:
    message: str
    reason: str = "Invalid"


class _Budget:
    def __init__(self) -> None:
        self.left = cel.RUNTIME_CEL_COST_BUDGET

    def run(self, program: cel.Program, values: dict[str, Any]) -> Any:
        if self.left <= 0:
            raise cel.CostLimitExceeded()
        value, spent = program.evaluate(values, min(cel.PER_CALL_LIMIT, self.left))
        self.left -= spent
        return value


class ValidatingAdmissionPolicies:
    """The plugin: ``handles`` when any binding exists; ``validate`` as the module says."""

    def __init__(self, sources: Sources, on_warning: Callable[[str], None]) -> None:
        self.sources = sources
        self.on_warning = on_warning

    def configured(self) -> bool:
        return bool(self.sources.cached(GROUP, "validatingadmissionpolicybindings"))

    def concerns(self, group: str, resource: str) -> bool:
        return True

    def handles(self, attrs: Attributes) -> bool:
        return self.configured()

    async def validate(self, attrs: Attributes) -> None:
        denied: list[tuple[str, str, Violation]] = []
        for binding_co in self.sources.cached(GROUP, "validatingadmissionpolicybindings"):
            binding = binding_co.obj
            spec = binding.get("spec") or {}
            policy = self.sources.get(GROUP, "validatingadmissionpolicies", None, spec.get("policyName") or "")
            if policy is None:
                continue
            matched = matches((policy.get("spec") or {}).get("matchConstraints"), attrs, self.sources)
            if matched is None or matches(spec.get("matchResources"), attrs, self.sources) is None:
                continue
            policy_name, binding_name = policy["metadata"]["name"], binding["metadata"]["name"]
            actions = spec.get("validationActions") or []
            for violation, configuration in self._evaluate(policy, binding, matched):
                if configuration:
                    denied.append((policy_name, binding_name, violation))
                    continue
                if "Deny" in actions:
                    denied.append((policy_name, binding_name, violation))
                if "Warn" in actions:
                    self.on_warning(f"Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding "
                                    f"'{binding_name}': {violation.message}")
                if "Audit" in actions:
                    log.info("ValidatingAdmissionPolicy %s with binding %s (audit): %s", policy_name, binding_name,
                             violation.message)
        if denied:
            raise self._refusal(attrs, *denied[0])

    @staticmethod
    def _refusal(attrs: Attributes, policy: str, binding: str, violation: Violation) -> errors.StatusError:
        """``admission.NewForbidden`` with the violation's reason and code."""
        message = f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {violation.message}"
        name = attrs.name or (((attrs.obj or attrs.old) or {}).get("metadata") or {}).get("name", "")
        err = errors.forbidden(attrs.resource, name, message, attrs.group, causes=[Cause("", message)])
        err.reason = violation.reason  # type: ignore[misc]
        err.code = REASON_CODES.get(violation.reason, 422)  # type: ignore[misc]
        return err

    def _evaluate(self, policy: Object, binding: Object, attrs: Attributes) -> list[tuple[Violation, bool]]:
        """(violation, whether it is a configuration error that denies whatever the actions) for one binding."""
        spec = policy.get("spec") or {}
        fail = (spec.get("failurePolicy") or "Fail") == "Fail"
        try:
            all_params = params_for(policy, binding, attrs, self.sources)
        except ParamsError as err:
            return [(Violation(f"failed to configure binding: {err}"), True)] if fail else []
        variables = policy_variables(spec)
        budget = _Budget()
        out: list[tuple[Violation, bool]] = []
        for params in all_params:
            values = activation(attrs, self.sources, params)
            try:
                if not self._conditions_hold(spec, variables, values, budget):
                    continue
                values["variables"] = self._variables(spec, variables, values, budget)
                out.extend((v, False) for v in self._validations(spec, variables, values, budget, fail))
            except cel.CostLimitExceeded:
                if fail:
                    out.append((Violation(OUT_OF_BUDGET), False))
            except _ConditionFailed as err:
                if fail:
                    out.append((Violation(str(err)), False))
        return out

    @staticmethod
    def _conditions_hold(spec: Object, variables: tuple[str, ...], values: dict[str, Any], budget: _Budget) -> bool:
        problems: list[str] = []
        for condition in spec.get("matchConditions") or []:
            expression = condition.get("expression") or ""
            try:
                result = budget.run(cel.compile_cached(expression, variables, True), values)
            except cel.CostLimitExceeded:
                raise
            except (cel.CompileError, cel.EvaluationError) as err:
                problems.append(f"expression '{expression}' resulted in error: {err}")
                continue
            if result is False:
                return False
        if problems:
            raise _ConditionFailed("; ".join(problems))
        return True

    @staticmethod
    def _variables(spec: Object, variables: tuple[str, ...], values: dict[str, Any],
                   budget: _Budget) -> dict[str, Any]:
        """Each variable's value, or the error its use reports (kube evaluates them lazily: an unused variable's
        error is never seen)."""
        composed: dict[str, Any] = {}
        values["variables"] = composed
        for variable in spec.get("variables") or []:
            expression = variable.get("expression") or ""
            try:
                composed[variable.get("name", "")] = budget.run(cel.compile_cached(expression, variables), values)
            except cel.CostLimitExceeded:
                raise
            except (cel.CompileError, cel.EvaluationError):
                continue  # referencing it fails with "no such key", as an unusable variable does
        return composed

    @staticmethod
    def _validations(spec: Object, variables: tuple[str, ...], values: dict[str, Any], budget: _Budget,
                     fail: bool) -> list[Violation]:
        out: list[Violation] = []
        for validation in spec.get("validations") or []:
            expression = validation.get("expression") or ""
            reason = validation.get("reason") or "Invalid"
            try:
                result = budget.run(cel.compile_cached(expression, variables, True), values)
            except cel.CostLimitExceeded:
                raise
            except (cel.CompileError, cel.EvaluationError) as err:
                if fail:
                    out.append(Violation(f"expression '{expression}' resulted in error: {err}", reason))
                continue
            if result is True:
                continue
            if result is not False:
                if fail:
                    out.append(Violation(f"expression '{expression}' resulted in error: no such overload", reason))
                continue
            out.append(Violation(_message(validation, variables, values, budget), reason))
        return out


def _message(validation: Object, variables: tuple[str, ...], values: dict[str, Any], budget: _Budget) -> str:
    """``messageExpression``'s value when it gives a non-empty single-line string, else ``message``, else
    ``failed expression: <expression>``."""
    message_expression = (validation.get("messageExpression") or "").strip()
    if message_expression:
        try:
            text = budget.run(cel.compile_cached(message_expression, tuple(v for v in variables
                                                                          if v != "authorizer")), values)
            if isinstance(text, str) and text.strip() and "\n" not in text.strip():
                return text.strip()
        except cel.CostLimitExceeded:
            raise
        except (cel.CompileError, cel.EvaluationError) as err:
            log.info("messageExpression %r failed: %s", message_expression, err)
    if (validation.get("message") or "").strip():
        return str(validation["message"]).strip()
    return f"failed expression: {(validation.get('expression') or '').strip()}"


class _ConditionFailed(Exception):
    """A matchCondition could not be evaluated."""
