"""``x-kubernetes-validations``: a CRD schema's CEL rules evaluated on custom resources (the ``RuleValidator`` that
``schemavalidation`` asks once a resource passed its schema), as kube-apiextensions-apiserver's CEL validator does:

- every schema node with rules is visited where the object has a value: ``self`` is that value (the whole object,
  ``apiVersion``/``kind``/``metadata`` included, at the root), ``oldSelf`` the same place in the old object;
- a transition rule (one that names ``oldSelf``) runs only on an update where the old value exists: list items are
  correlated by their ``x-kubernetes-list-map-keys`` (other lists' items are not), map and object fields by key;
- a rule that is false fails with ``message``, else ``messageExpression``'s string, else ``failed rule: <rule>``,
  as ``reason`` says (``FieldValueInvalid`` by default: ``Invalid value: "object": …``, the schema's type standing
  for the value) at the node's path plus ``fieldPath``; a root-level rule's path is ``<nil>``, as kube prints it;
- an evaluation error fails the rule with the error; a request's rules together get kube's runtime cost budget,
  past which ``validation failed due to running out of cost budget, no further validation rules will be run``.

Programs are compiled once per rule text (``apiserver.cel``, the same CEL as admission).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import duplicate, forbidden, invalid, required

from .. import cel

Schema = dict[str, Any]
ROOT = "<nil>"
OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"
_OLD_SELF = re.compile(r"\boldSelf\b")


@dataclass
class _Budget:
    left: int = cel.RUNTIME_CEL_COST_BUDGET
    exhausted: bool = False


@dataclass
class CELRules:
    """The CEL ``RuleValidator``; compiled programs are cached per (expression, transition)."""

    _programs: dict[tuple[str, bool], cel.Program | str] = field(default_factory=dict)

    def validate(self, schema: Schema, obj: Any, old: Any | None) -> list[Cause]:
        causes: list[Cause] = []
        self._walk(schema, obj, old, "", causes, _Budget())
        return causes

    # --- the walk over schema and value together ----------------------------------------------------------
    def _walk(self, schema: Schema, value: Any, old: Any, path: str, causes: list[Cause], budget: _Budget) -> None:
        if value is None or not isinstance(schema, dict) or budget.exhausted:
            return
        for rule in schema.get("x-kubernetes-validations") or []:
            self._check(rule, schema, value, old, path, causes, budget)
        if isinstance(value, dict):
            properties = schema.get("properties") or {}
            extra = schema.get("additionalProperties")
            for key, item in value.items():
                sub = properties.get(key) if key in properties else extra if isinstance(extra, dict) else None
                if sub is not None:
                    child = f"{path}.{key}" if path and key in properties else (
                        f"{path}[{key}]" if path else key)
                    self._walk(sub, item, old.get(key) if isinstance(old, dict) else None, child, causes, budget)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            items, olds = schema["items"], _correlate(schema, value, old)
            for i, item in enumerate(value):
                self._walk(items, item, olds[i], f"{path}[{i}]", causes, budget)

    def _check(self, rule: dict[str, Any], schema: Schema, value: Any, old: Any, path: str, causes: list[Cause],
               budget: _Budget) -> None:
        text = str(rule.get("rule") or "")
        transition = bool(_OLD_SELF.search(text))
        if transition and old is None:
            return  # a transition rule needs a previous value
        at = path or ROOT
        program = self._program(text, transition)
        if isinstance(program, str):  # refused when the CRD was written, so only a schema from before can get here
            causes.append(invalid(at, _type(schema), program))
            return
        activation = {"self": value, "oldSelf": old}
        try:
            result, cost = program.evaluate(activation, min(cel.PER_CALL_LIMIT, budget.left))
        except cel.CostLimitExceeded:
            budget.exhausted = True
            causes.append(invalid(at, _type(schema), OUT_OF_BUDGET))
            return
        except cel.EvaluationError as err:
            causes.append(invalid(at, _type(schema), f"{_one_line(text)}: {err}"))
            return
        budget.left -= cost
        if result is True:
            return
        target = at + (rule.get("fieldPath") or "") if rule.get("fieldPath") else at
        causes.append(_cause(rule.get("reason"), target.removeprefix(f"{ROOT}.") if path == "" else target,
                             _type(schema), self._message(rule, activation, text)))

    def _message(self, rule: dict[str, Any], activation: dict[str, Any], text: str) -> str:
        expression = rule.get("messageExpression")
        if expression:
            program = self._program(str(expression), bool(_OLD_SELF.search(str(expression))))
            if not isinstance(program, str):
                try:
                    message, _ = program.evaluate(activation)
                    if isinstance(message, str) and message.strip() and "\n" not in message:
                        return message
                except cel.EvaluationError:
                    pass
        if rule.get("message"):
            return str(rule["message"])
        return f"failed rule: {_one_line(text)}"

    def _program(self, text: str, transition: bool) -> cel.Program | str:
        key = (text, transition)
        if key not in self._programs:
            try:
                self._programs[key] = cel.compile_rule(text, transition=transition)
            except cel.CompileError as err:
                self._programs[key] = f"compilation failed: {err}"
        return self._programs[key]


def compile_error(rule: str) -> str | None:
    """Why ``rule`` cannot be a validation rule (kube's "compilation failed: …"), None if it compiles."""
    try:
        cel.compile_rule(rule, transition=bool(_OLD_SELF.search(rule)))
    except cel.CompileError as err:
        return f"compilation failed: {err}"
    return None


def _correlate(schema: Schema, items: list[Any], old: Any) -> list[Any]:
    """The old item each new item is the same as: by the list's map keys; none for other lists."""
    if not isinstance(old, list) or schema.get("x-kubernetes-list-type") != "map":
        return [None] * len(items)
    keys = schema.get("x-kubernetes-list-map-keys") or []

    def key_of(item: Any) -> tuple[Any, ...] | None:
        return tuple(item.get(k) for k in keys) if isinstance(item, dict) else None

    previous = {key_of(item): item for item in old}
    return [previous.get(key_of(item)) for item in items]


def _cause(reason: Any, path: str, value_type: str, detail: str) -> Cause:
    """kube's fieldErrorForReason."""
    if reason == "FieldValueForbidden":
        return forbidden(path, detail)
    if reason == "FieldValueRequired":
        return required(path, detail)
    if reason == "FieldValueDuplicate":
        return duplicate(path, detail)
    return invalid(path, value_type, detail)


def _type(schema: Schema) -> str:
    return str(schema.get("type") or "object")


def _one_line(rule: str) -> str:
    return " ".join(rule.split())
