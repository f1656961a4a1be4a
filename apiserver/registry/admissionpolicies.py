"""ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1, GA in 1.30).

Defaults and validation as kube-apiserver's (``SetDefaults_ValidatingAdmissionPolicySpec``, ``MatchResources``;
``ValidateValidatingAdmissionPolicy``, ``…Binding``): a failure policy, a paramKind that names a group/version and
kind, matchConstraints with at least one resource rule, matchConditions, variables and validations whose CEL
compiles (kube's ``compilation failed: …``; ``params`` is declared only with a paramKind), validation reasons
Forbidden/Invalid/RequestEntityTooLarge, messages on one line; a binding names its policy, a paramRef by name or
selector (not both) with a parameterNotFoundAction, and validation actions from Deny/Warn/Audit without both Deny
and Warn. The plugin that runs them is ``apiserver.admission.policy``.
"""

from __future__ import annotations

import re
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    duplicate,
    forbidden,
    invalid,
    is_dns1035_label,
    is_dns1123_subdomain,
    is_qualified_name,
    not_supported,
    path_segment_problems,
    required,
    validate_label_selector,
)
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since
from apiserver.registry.webhookconfigurations import (
    FAILURE_POLICIES,
    GROUP,
    MATCH_POLICIES,
    cel_errors,
    validate_match_conditions,
    validate_rule_with_operations,
)

REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge")
MAX_AUDIT_ANNOTATIONS = 20
MAX_AUDIT_VALUE_EXPRESSION = 5 * 1024
ACTIONS = ("Audit", "Deny", "Warn")
NOT_FOUND_ACTIONS = ("Deny", "Allow")
BASE_VARIABLES = ("object", "oldObject", "request", "namespaceObject", "authorizer", "variables")
_CEL_IDENT = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")
_CEL_RESERVED = frozenset({"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
                           "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
                           "void", "while"})


def policy_variables(spec: Object) -> tuple[str, ...]:
    """What a policy's expressions may name: ``params`` only when it has a paramKind."""
    return (*BASE_VARIABLES, "params") if spec.get("paramKind") else BASE_VARIABLES


def default_match_resources(match: Object) -> None:
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})
    match.setdefault("matchPolicy", "Equivalent")
    for field in ("resourceRules", "excludeResourceRules"):
        for rule in match.get(field) or []:
            rule.setdefault("scope", "*")


def validate_match_resources(match: Object | None, path: str) -> list[Cause]:
    if match is None:
        return []
    causes: list[Cause] = []
    policy = match.get("matchPolicy")
    if policy is None:
        causes.append(required(f"{path}.matchPolicy"))
    elif policy not in MATCH_POLICIES:
        causes.append(not_supported(f"{path}.matchPolicy", policy, MATCH_POLICIES))
    for field in ("namespaceSelector", "objectSelector"):
        if match.get(field) is None:
            causes.append(required(f"{path}.{field}"))
        else:
            causes.extend(validate_label_selector(match[field], f"{path}.{field}"))
    for field in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(match.get(field) or []):
            rule_path = f"{path}.{field}[{i}]"
            seen: set[str] = set()
            for j, name in enumerate(rule.get("resourceNames") or []):
                causes.extend(invalid(f"{rule_path}.resourceNames[{j}]", name, msg)
                              for msg in path_segment_problems(name))
                if name in seen:
                    causes.append(duplicate(f"{rule_path}.resourceNames[{j}]", name))
                seen.add(name)
            causes.extend(validate_rule_with_operations(rule, rule_path))
    return causes


def validate_param_kind(kind: Object, path: str) -> list[Cause]:
    causes: list[Cause] = []
    api_version = kind.get("apiVersion") or ""
    if not api_version:
        causes.append(required(f"{path}.apiVersion"))
    elif api_version.count("/") > 1:
        causes.append(invalid(f"{path}.apiVersion", api_version, f"unexpected GroupVersion string: {api_version}"))
    else:
        group, _, version = api_version.rpartition("/")
        if group and (errs := is_dns1123_subdomain(group)):
            causes.append(invalid(f"{path}.apiVersion", group, ",".join(errs)))
        if not version:
            causes.append(invalid(f"{path}.apiVersion", api_version, "version must be specified"))
        elif errs := is_dns1035_label(version):
            causes.append(invalid(f"{path}.apiVersion", version, ",".join(errs)))
    name = kind.get("kind") or ""
    if not name:
        causes.append(required(f"{path}.kind"))
    elif errs := is_dns1035_label(name.lower()):
        causes.append(invalid(f"{path}.kind", name, "may have mixed case, but should otherwise match: " +
                              ",".join(errs)))
    return causes


def validate_validation(validation: Object, path: str, variables: tuple[str, ...]) -> list[Cause]:
    causes: list[Cause] = []
    expression = validation.get("expression") or ""
    if not expression.strip():
        causes.append(required(f"{path}.expression", "expression is not specified"))
    else:
        causes.extend(cel_errors(expression, f"{path}.expression", variables))
    message_expression = validation.get("messageExpression")
    if message_expression is not None and message_expression != "" and not message_expression.strip():
        causes.append(invalid(f"{path}.messageExpression", message_expression, "must be non-empty if specified"))
    elif message_expression and message_expression.strip():
        causes.extend(cel_errors(message_expression, f"{path}.messageExpression",
                                 tuple(v for v in variables if v != "authorizer"), boolean=False))
    message = validation.get("message")
    if message and not message.strip():
        causes.append(invalid(f"{path}.message", message, "message must be non-empty if specified"))
    elif message and re.search(r"[\n\r]", message.strip()):
        causes.append(invalid(f"{path}.message", message, "message must not contain line breaks"))
    reason = validation.get("reason")
    if reason is not None and reason not in REASONS:
        causes.append(not_supported(f"{path}.reason", reason, REASONS))
    return causes


def validate_audit_annotations(annotations: list[Object], policy: str, variables: tuple[str, ...]) -> list[Cause]:
    """``validateAuditAnnotation``: at most 20, unique keys that make a qualified name with the policy's, value
    expressions of at most 5 KiB that compile."""
    causes: list[Cause] = []
    if len(annotations) > MAX_AUDIT_ANNOTATIONS:
        causes.append(invalid("spec.auditAnnotations", annotations,
                              f"must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"))
    keys: set[str] = set()
    for i, annotation in enumerate(annotations):
        path = f"spec.auditAnnotations[{i}]"
        key = annotation.get("key") or ""
        if policy:
            causes.extend(invalid(f"{path}.key", key, msg) for msg in is_qualified_name(f"{policy}/{key}"))
        else:
            causes.append(invalid(f"{path}.key", key, "requires metadata.name be non-empty"))
        if key in keys:
            causes.append(duplicate(f"{path}.key", key))
        keys.add(key)
        value = (annotation.get("valueExpression") or "").strip()
        if not value:
            causes.append(required(f"{path}.valueExpression", "valueExpression is not specified"))
        elif len(value) > MAX_AUDIT_VALUE_EXPRESSION:
            causes.append(required(f"{path}.valueExpression",
                                   f"must not exceed {MAX_AUDIT_VALUE_EXPRESSION} bytes in length"))
        else:
            causes.extend(cel_errors(value, f"{path}.valueExpression", variables, boolean=False))
    return causes


class ValidatingAdmissionPolicyStrategy(Strategy):
    group = GROUP
    kind = "ValidatingAdmissionPolicy"
    resource = "validatingadmissionpolicies"
    singular = "validatingadmissionpolicy"
    namespaced = False
    categories = ("api-extensions",)
    subresources = ("status",)

    def prepare_for_create(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        spec.setdefault("failurePolicy", "Fail")
        if isinstance(spec.get("matchConstraints"), dict):
            default_match_resources(spec["matchConstraints"])
        obj.pop("status", None)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        super().prepare_for_update(new, old)
        status = new.pop("status", None)
        self.prepare_for_create(new)
        if status is not None:
            new["status"] = status

    def validate(self, obj: Object) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        policy = spec.get("failurePolicy")
        if policy is None:
            causes.append(required("spec.failurePolicy"))
        elif policy not in FAILURE_POLICIES:
            causes.append(not_supported("spec.failurePolicy", policy, FAILURE_POLICIES))
        if spec.get("paramKind") is not None:
            causes.extend(validate_param_kind(spec["paramKind"], "spec.paramKind"))
        match = spec.get("matchConstraints")
        if match is None:
            causes.append(required("spec.matchConstraints"))
        else:
            causes.extend(validate_match_resources(match, "spec.matchConstraints"))
            if not match.get("resourceRules"):
                causes.append(required("spec.matchConstraints.resourceRules"))
        variables = policy_variables(spec)
        causes.extend(validate_match_conditions(spec.get("matchConditions") or [], "spec.matchConditions",
                                                variables))
        for i, variable in enumerate(spec.get("variables") or []):
            path = f"spec.variables[{i}]"
            name = variable.get("name") or ""
            if not name.strip():
                causes.append(required(f"{path}.name", "name is not specified"))
            elif not _CEL_IDENT.match(name) or name in _CEL_RESERVED:
                causes.append(invalid(f"{path}.name", name, "name is not a valid CEL identifier"))
            expression = variable.get("expression") or ""
            if not expression.strip():
                causes.append(required(f"{path}.expression", "expression is not specified"))
            else:
                causes.extend(cel_errors(expression, f"{path}.expression", variables, boolean=False))
        validations = spec.get("validations") or []
        if not validations and not spec.get("auditAnnotations"):
            detail = "validations or auditAnnotations must contain at least one item"
            causes += [required("spec.validations", detail), required("spec.auditAnnotations", detail)]
        for i, validation in enumerate(validations):
            causes.extend(validate_validation(validation, f"spec.validations[{i}]", variables))
        causes.extend(validate_audit_annotations(spec.get("auditAnnotations") or [],
                                                 (obj.get("metadata") or {}).get("name") or "", variables))
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Validations", "integer", description="Validations indicates the number of validation "
                                                                  "rules defined in this configuration"),
                TableColumn("ParamKind", description="ParamKind specifies the kind of resources used to "
                                                     "parameterize this policy"),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        spec = obj.get("spec") or {}
        kind = spec.get("paramKind")
        param = f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}" if kind else "<unset>"
        meta = obj.get("metadata") or {}
        return [meta.get("name", ""), len(spec.get("validations") or []), param, since(meta.get("creationTimestamp"))]


class ValidatingAdmissionPolicyBindingStrategy(Strategy):
    group = GROUP
    kind = "ValidatingAdmissionPolicyBinding"
    resource = "validatingadmissionpolicybindings"
    singular = "validatingadmissionpolicybinding"
    namespaced = False
    categories = ("api-extensions",)

    def prepare_for_create(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec.get("matchResources"), dict):
            default_match_resources(spec["matchResources"])

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.prepare_for_create(new)

    def validate(self, obj: Object) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        policy = spec.get("policyName") or ""
        if not policy:
            causes.append(required("spec.policyName"))
        else:
            causes.extend(invalid("spec.policyName", policy, msg) for msg in is_dns1123_subdomain(policy))
        ref = spec.get("paramRef")
        if ref is not None:
            name, selector = ref.get("name") or "", ref.get("selector")
            if name and selector is not None:
                causes.append(forbidden("spec.paramRef.name", "name and selector are mutually exclusive"))
            if selector is not None:
                causes.extend(validate_label_selector(selector, "spec.paramRef.selector"))
                if name:
                    causes.append(forbidden("spec.paramRef.selector", "name and selector are mutually exclusive"))
            if not name and selector is None:
                causes.append(required("spec.paramRef", "one of name or selector must be specified"))
            action = ref.get("parameterNotFoundAction")
            if not action:
                causes.append(required("spec.paramRef.parameterNotFoundAction"))
            elif action not in NOT_FOUND_ACTIONS:
                causes.append(not_supported("spec.paramRef.parameterNotFoundAction", action, NOT_FOUND_ACTIONS))
        causes.extend(validate_match_resources(spec.get("matchResources"), "spec.matchResources"))
        actions = spec.get("validationActions") or []
        seen: set[str] = set()
        for i, action in enumerate(actions):
            if action not in ACTIONS:
                causes.append(not_supported(f"spec.validationActions[{i}]", action, ACTIONS))
            if action in seen:
                causes.append(duplicate(f"spec.validationActions[{i}]", action))
            seen.add(action)
        if "Deny" in seen and "Warn" in seen:
            causes.append(invalid("spec.validationActions", actions, "must not contain both Deny and Warn (repeating "
                                  "the same validation failure information in the API response and headers serves "
                                  "no purpose)"))
        if not seen:
            causes.append(required("spec.validationActions", "at least one validation action is required"))
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("PolicyName", description="PolicyName references a ValidatingAdmissionPolicy name "
                                                      "which the ValidatingAdmissionPolicyBinding binds to"),
                TableColumn("ParamRef", description="ParamRef specifies the parameter resource used to configure "
                                                    "the admission control policy"),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        spec = obj.get("spec") or {}
        ref = spec.get("paramRef")
        if not ref:
            param = "<unset>"
        elif ref.get("name"):
            param = f"{ref['namespace']}/{ref['name']}" if ref.get("namespace") else f"*/{ref['name']}"
        else:
            param = "*/*" if not ref.get("namespace") else f"{ref['namespace']}/*"
        meta = obj.get("metadata") or {}
        return [meta.get("name", ""), spec.get("policyName", ""), param, since(meta.get("creationTimestamp"))]
