"""ValidatingAdmissionPolicy type checking, where it is cheap: field selections on ``object`` and ``oldObject``
checked against the OpenAPI schemas of the kinds the policy matches, reported in ``status.typeChecking`` as
kube's type checker words them (``apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replica'``).

kube type-checks every expression fully (types of results, functions, params); here the evaluator is untyped, so
only the chains of field selections that start at ``object``/``oldObject`` are followed — through ``$ref``s and
nested objects, stopping at maps, lists and schemaless fields — which catches the common mistake, a misspelt
field. Policies matching wildcard groups, versions or resources are not checked (as kube, beyond a bound).
``PolicyStatus`` writes ``status.observedGeneration`` and ``status.typeChecking`` (``{}`` without warnings) once
per generation, from every apiserver (in kube the controller-manager does it).
"""

from __future__ import annotations

from typing import Any

from ...cel.syntax import Node, SyntaxProblem, parse, walk
from ...periodic import Periodic
from ...registry.registry import Registry

Schema = dict[str, Any]
GROUP = "admissionregistration.k8s.io"
INTERVAL = 1.0


def _expressions(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(fieldRef, expression) of every CEL expression of a policy."""
    out: list[tuple[str, str]] = []
    for i, condition in enumerate(spec.get("matchConditions") or []):
        out.append((f"spec.matchConditions[{i}].expression", condition.get("expression") or ""))
    for i, variable in enumerate(spec.get("variables") or []):
        out.append((f"spec.variables[{i}].expression", variable.get("expression") or ""))
    for i, validation in enumerate(spec.get("validations") or []):
        out.append((f"spec.validations[{i}].expression", validation.get("expression") or ""))
        if validation.get("messageExpression"):
            out.append((f"spec.validations[{i}].messageExpression", validation["messageExpression"]))
    for i, annotation in enumerate(spec.get("auditAnnotations") or []):
        out.append((f"spec.auditAnnotations[{i}].valueExpression", annotation.get("valueExpression") or ""))
    return out


class TypeChecker:
    """Checks policies against the served kinds' schemas (the decoder's OpenAPI definitions)."""

    def __init__(self, registry: Registry, definitions: dict[str, Schema]) -> None:
        self.registry = registry
        self.definitions = definitions
        self.by_kind: dict[tuple[str, str, str], str] = {}
        for name, schema in definitions.items():
            for gvk in schema.get("x-kubernetes-group-version-kind") or []:
                self.by_kind.setdefault((gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", "")), name)

    def kinds(self, spec: dict[str, Any]) -> list[tuple[str, str, str]]:
        """The (group, version, kind) the policy's resource rules name explicitly."""
        out: list[tuple[str, str, str]] = []
        for rule in (spec.get("matchConstraints") or {}).get("resourceRules") or []:
            for group in rule.get("apiGroups") or []:
                for version in rule.get("apiVersions") or []:
                    for resource in rule.get("resources") or []:
                        if "*" in (group, version) or "*" in resource or "/" in resource:
                            continue
                        store = self.registry.versions.get((group, version, resource))
                        if store is not None and (group, version, store.strategy.kind) not in out:
                            out.append((group, version, store.strategy.kind))
        return out

    def warnings(self, spec: dict[str, Any]) -> list[dict[str, str]]:
        """``status.typeChecking.expressionWarnings``: one per expression with problems."""
        kinds = self.kinds(spec)
        out: list[dict[str, str]] = []
        for field_ref, expression in _expressions(spec):
            try:
                tree = parse(expression)
            except SyntaxProblem:
                continue  # refused on write; a stored one is reported at run time
            problems = [f"{group}/{version}, Kind={kind}: {problem}" for group, version, kind in kinds
                        if (name := self.by_kind.get((group, version, kind))) is not None
                        for problem in self._problems(expression, tree, name)]
            if problems:
                out.append({"fieldRef": field_ref, "warning": "\n".join(problems)})
        return out

    def _problems(self, source: str, tree: Node, definition: str) -> list[str]:
        problems: list[str] = []
        for node in walk(tree):
            chain = _select_chain(node)
            if chain is None:
                continue
            schema: Schema | None = self.definitions.get(definition)
            for select in chain:
                schema = self._resolve(schema)
                if schema is None:
                    break
                properties = schema.get("properties")
                if properties is None or schema.get("additionalProperties") is not None or \
                        schema.get("x-kubernetes-preserve-unknown-fields"):
                    break
                if select.name not in properties:
                    problems.append(_error(source, select, f"undefined field '{select.name}'"))
                    break
                schema = properties[select.name]
        return problems

    def _resolve(self, schema: Schema | None) -> Schema | None:
        while schema is not None and "$ref" in schema:
            schema = self.definitions.get(schema["$ref"].rsplit("/", 1)[-1])
        if schema is not None and schema.get("type") not in (None, "object"):
            return None
        return schema


def _select_chain(node: Node) -> list[Node] | None:
    """The selects of a maximal chain ``object.a.b`` (outermost node given), root first; None otherwise."""
    selects: list[Node] = []
    current: Node | None = node
    while current is not None and current.kind == "select":
        selects.append(current)
        current = current.target
    if current is None or current.kind != "ident" or current.name not in ("object", "oldObject") or not selects:
        return None
    return list(reversed(selects))


def _error(source: str, select: Node, message: str) -> str:
    """cel-go's error with its position (the ``.`` of the selection) and the caret lines."""
    offset = select.end - len(select.name) - 1
    line_start = source.rfind("\n", 0, offset) + 1
    line_end = source.find("\n", offset)
    line = source[line_start:line_end if line_end >= 0 else len(source)]
    column = offset - line_start
    number = source.count("\n", 0, offset) + 1
    return f"ERROR: <input>:{number}:{column + 1}: {message}\n | {line}\n | {'.' * column}^"


class PolicyStatus(Periodic):
    """Keeps each policy's ``status.observedGeneration`` and ``status.typeChecking`` current."""

    name = "validatingadmissionpolicy-status"

    def __init__(self, registry: Registry, checker: TypeChecker, interval: float = INTERVAL) -> None:
        super().__init__(interval)
        self.registry = registry
        self.checker = checker

    async def sync(self) -> None:
        store = self.registry.stores.get((GROUP, "validatingadmissionpolicies"))
        if store is None:
            return
        for co in store.cache.list():
            policy = co.obj
            generation = policy["metadata"].get("generation")
            if (policy.get("status") or {}).get("observedGeneration") == generation:
                continue
            warnings = self.checker.warnings(policy.get("spec") or {})
            status: dict[str, Any] = {**(policy.get("status") or {}), "observedGeneration": generation,
                                      "typeChecking": {"expressionWarnings": warnings} if warnings else {}}

            def update(obj: dict[str, Any], status: dict[str, Any] = status) -> dict[str, Any]:
                obj["status"] = status
                return obj

            await store.guaranteed_update(None, policy["metadata"]["name"], update, subresource="status")
