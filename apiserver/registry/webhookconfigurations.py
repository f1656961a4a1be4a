"""MutatingWebhookConfiguration and ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1).

Defaults and validation as kube-apiserver's (``SetDefaults_*Webhook``, ``ValidateValidatingWebhookConfiguration``):
every webhook a fully qualified name, unique in its configuration; rules with operations, groups, versions and
resources (``x/*``, ``*/x`` and ``*`` combinations checked); ``sideEffects`` None or NoneOnDryRun (v1 allows no
other); ``timeoutSeconds`` 1–30 (default 10); exactly one of ``clientConfig.url`` (https, no query, fragment or
user) and ``clientConfig.service``; ``admissionReviewVersions`` naming v1 or v1beta1; ``matchConditions`` compiled
as CEL. The admission layer (``apiserver/admission``) reads the stored objects from the watch cache.
"""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import urlsplit

from apimachinery.errors import Cause
from apimachinery.validation import (
    duplicate,
    invalid,
    is_dns1035_label,
    is_dns1123_subdomain,
    is_valid_port_num,
    not_supported,
    required,
    validate_label_selector,
)
from apiserver import cel
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

GROUP = "admissionregistration.k8s.io"
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")
OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
REINVOCATION_POLICIES = ("IfNeeded", "Never")
SCOPES = ("*", "Cluster", "Namespaced")
REVIEW_VERSIONS = ("v1", "v1beta1")
URL_FORM = "; desired format: https://host[/path]"
# The CEL variables of webhook matchConditions (kube's: no params for webhooks).
MATCH_CONDITION_VARIABLES = ("object", "oldObject", "request", "authorizer")


def cel_errors(expression: str, path: str, variables: tuple[str, ...], boolean: bool = True) -> list[Cause]:
    """An expression that does not compile: kube's ``Invalid value: "<expr>": compilation failed: …``."""
    try:
        cel.compile_cached(expression, variables, boolean)
    except cel.CompileError as err:
        return [invalid(path, expression, f"compilation failed: {err}")]
    return []

def is_fully_qualified_name(path: str, name: str) -> list[Cause]:
    """``utilvalidation.IsFullyQualifiedName``: a DNS subdomain with at least three segments."""
    if not name:
        return [required(path)]
    if errs := is_dns1123_subdomain(name):
        return [invalid(path, name, ",".join(errs))]
    if len(name.split(".")) < 3:
        return [invalid(path, name, "should be a domain with at least three segments separated by dots")]
    return []


def _has_wildcard(values: list[Any]) -> bool:
    return "*" in values


def validate_resources(resources: list[str], path: str) -> list[Cause]:
    """``validateResources``: subresource wildcards may not overlap, ``*/*`` and ``*`` stand alone."""
    causes: list[Cause] = []
    if not resources:
        causes.append(required(path))
    with_wild_sub: set[str] = set()
    wild_res_sub: set[str] = set()
    double = single = plain = False
    for i, res_sub in enumerate(resources):
        if res_sub == "":
            causes.append(required(f"{path}[{i}]"))
            continue
        double = double or res_sub == "*/*"
        single = single or res_sub == "*"
        if "/" not in res_sub:
            plain = res_sub != "*"
            continue
        res, sub = res_sub.split("/", 1)
        if res in with_wild_sub:
            causes.append(invalid(f"{path}[{i}]", res_sub, f"if '{res}/*' is present, must not specify {res_sub}"))
        if sub in wild_res_sub:
            causes.append(invalid(f"{path}[{i}]", res_sub, f"if '*/{sub}' is present, must not specify {res_sub}"))
        if sub == "*":
            with_wild_sub.add(res)
        if res == "*":
            wild_res_sub.add(sub)
    if len(resources) > 1 and double:
        causes.append(invalid(path, resources, "if '*/*' is present, must not specify other resources"))
    if single and plain:
        causes.append(invalid(path, resources, "if '*' is present, must not specify other resources without "
                                               "subresources"))
    return causes


def validate_rule(rule: dict[str, Any], path: str, allow_subresources: bool = True) -> list[Cause]:
    """``validateRule``: groups, versions, resources and scope."""
    causes: list[Cause] = []
    groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
    if not groups:
        causes.append(required(f"{path}.apiGroups"))
    if len(groups) > 1 and _has_wildcard(groups):
        causes.append(invalid(f"{path}.apiGroups", groups, "if '*' is present, must not specify other API groups"))
    if not versions:
        causes.append(required(f"{path}.apiVersions"))
    if len(versions) > 1 and _has_wildcard(versions):
        causes.append(invalid(f"{path}.apiVersions", versions,
                              "if '*' is present, must not specify other API versions"))
    causes.extend(required(f"{path}.apiVersions[{i}]") for i, v in enumerate(versions) if v == "")
    resources = rule.get("resources") or []
    if allow_subresources:
        causes.extend(validate_resources(resources, f"{path}.resources"))
    else:
        if not resources:
            causes.append(required(f"{path}.resources"))
        for i, resource in enumerate(resources):
            if resource == "":
                causes.append(required(f"{path}.resources[{i}]"))
            if "/" in resource:
                causes.append(invalid(f"{path}.resources[{i}]", resource, "must not specify subresources"))
        if len(resources) > 1 and _has_wildcard(resources):
            causes.append(invalid(f"{path}.resources", resources, "if '*' is present, must not specify other "
                                                                  "resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in SCOPES:
        causes.append(not_supported(f"{path}.scope", scope, SCOPES))
    return causes


def validate_rule_with_operations(rule: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    operations = rule.get("operations") or []
    if not operations:
        causes.append(required(f"{path}.operations"))
    if len(operations) > 1 and _has_wildcard(operations):
        causes.append(invalid(f"{path}.operations", operations, "if '*' is present, must not specify other "
                                                                "operations"))
    causes.extend(not_supported(f"{path}.operations[{i}]", op, OPERATIONS)
                  for i, op in enumerate(operations) if op not in OPERATIONS)
    return causes + validate_rule(rule, path)


def validate_webhook_url(path: str, url: str) -> list[Cause]:
    """``webhook.ValidateWebhookURL`` with https forced."""
    try:
        parts = urlsplit(url)
    except ValueError as err:
        return [required(path, f"url must be a valid URL: {err}{URL_FORM}")]
    causes: list[Cause] = []
    if parts.scheme != "https":
        causes.append(invalid(path, parts.scheme, f"'https' is the only allowed URL scheme{URL_FORM}"))
    if not parts.netloc.rsplit("@", 1)[-1]:
        causes.append(invalid(path, "", f"host must be specified{URL_FORM}"))
    if "@" in parts.netloc:
        causes.append(invalid(path, parts.netloc.rsplit("@", 1)[0], "user information is not permitted in the URL"))
    if parts.fragment:
        causes.append(invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        causes.append(invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return causes


def validate_webhook_service(path: str, service: dict[str, Any]) -> list[Cause]:
    """``webhook.ValidateWebhookService``: name, namespace, a valid port, a path of DNS-subdomain segments."""
    causes: list[Cause] = []
    if not service.get("name"):
        causes.append(required(f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        causes.append(required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if errs := is_valid_port_num(port):
        causes.append(invalid(f"{path}.port", port, "port is not valid: " + ", ".join(errs)))
    url_path = service.get("path")
    if url_path in (None, "", "/"):
        return causes
    if url_path == "//":
        return causes + [invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        causes.append(invalid(f"{path}.path", url_path, "must start with a '/'"))
    segments = url_path.lstrip("/").split("/")
    if segments and segments[-1] == "":
        segments = segments[:-1]
    for i, segment in enumerate(segments):
        if segment == "":
            causes.append(invalid(f"{path}.path", url_path, f"segment[{i}] may not be empty"))
        elif errs := is_dns1123_subdomain(segment):
            causes.append(invalid(f"{path}.path", url_path, f"segment[{i}]: {', '.join(errs)}"))
    return causes


def validate_review_versions(versions: list[str], path: str, required_detail: str | None = None) -> list[Cause]:
    """``admissionReviewVersions`` and a CRD's ``conversionReviewVersions`` (v1 and v1beta1 in both): unique DNS
    labels, one of them spoken here; none is required (with ``required_detail``: the CRD's empty detail)."""
    if not versions:
        return [required(path, f"must specify one of {', '.join(REVIEW_VERSIONS)}" if required_detail is None
                         else required_detail)]
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        if version in seen:
            causes.append(invalid(f"{path}[{i}]", version, "duplicate version"))
            continue
        seen.add(version)
        causes.extend(invalid(f"{path}[{i}]", version, msg) for msg in is_dns1035_label(version))
    if not any(v in REVIEW_VERSIONS for v in versions):
        causes.append(invalid(path, versions, f"must include at least one of {', '.join(REVIEW_VERSIONS)}"))
    return causes


def validate_match_conditions(conditions: list[dict[str, Any]], path: str,
                              variables: tuple[str, ...] = MATCH_CONDITION_VARIABLES) -> list[Cause]:
    """``validateMatchConditions``: at most 64, unique qualified names, expressions that compile to bool."""
    from apimachinery.validation import is_qualified_name, too_many

    causes: list[Cause] = []
    if len(conditions) > 64:
        causes.append(too_many(path, len(conditions), 64))
    names: set[str] = set()
    for i, condition in enumerate(conditions):
        name = condition.get("name") or ""
        if not name:
            causes.append(required(f"{path}[{i}].name"))
        else:
            causes.extend(invalid(f"{path}[{i}].name", name, msg) for msg in is_qualified_name(name))
            if name in names:
                causes.append(duplicate(f"{path}[{i}].name", name))
            names.add(name)
        expression = condition.get("expression") or ""
        if not expression.strip():
            causes.append(required(f"{path}[{i}].expression"))
        else:
            causes.extend(cel_errors(expression.strip(), f"{path}[{i}].expression", variables))
    return causes


def validate_webhook(hook: dict[str, Any], path: str, mutating: bool) -> list[Cause]:
    """``validateValidatingWebhook`` / ``validateMutatingWebhook``."""
    causes = is_fully_qualified_name(f"{path}.name", hook.get("name") or "")
    for i, rule in enumerate(hook.get("rules") or []):
        causes.extend(validate_rule_with_operations(rule, f"{path}.rules[{i}]"))
    for field, allowed in (("failurePolicy", FAILURE_POLICIES), ("matchPolicy", MATCH_POLICIES)):
        value = hook.get(field)
        if value is not None and value not in allowed:
            causes.append(not_supported(f"{path}.{field}", value, allowed))
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        causes.append(required(f"{path}.sideEffects", f"must specify one of {', '.join(NO_SIDE_EFFECTS)}"))
    elif side_effects not in NO_SIDE_EFFECTS:
        causes.append(not_supported(f"{path}.sideEffects", side_effects, NO_SIDE_EFFECTS))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and not 1 <= timeout <= 30:
        causes.append(invalid(f"{path}.timeoutSeconds", timeout, "the timeout value must be between 1 and 30 "
                                                                  "seconds"))
    for field in ("namespaceSelector", "objectSelector"):
        causes.extend(validate_label_selector(hook.get(field), f"{path}.{field}"))
    if mutating:
        policy = hook.get("reinvocationPolicy")
        if policy is not None and policy not in REINVOCATION_POLICIES:
            causes.append(not_supported(f"{path}.reinvocationPolicy", policy, REINVOCATION_POLICIES))
    config = hook.get("clientConfig") or {}
    if ("url" in config) == ("service" in config):
        causes.append(required(f"{path}.clientConfig", "exactly one of url or service is required"))
    elif "url" in config:
        causes.extend(validate_webhook_url(f"{path}.clientConfig.url", config["url"]))
    else:
        causes.extend(validate_webhook_service(f"{path}.clientConfig.service", config["service"] or {}))
    causes.extend(validate_match_conditions(hook.get("matchConditions") or [], f"{path}.matchConditions"))
    return causes


def default_webhook(hook: dict[str, Any], mutating: bool) -> None:
    """``SetDefaults_ValidatingWebhook`` / ``SetDefaults_MutatingWebhook`` and their rules' and service's."""
    hook.setdefault("failurePolicy", "Fail")
    hook.setdefault("matchPolicy", "Equivalent")
    hook.setdefault("namespaceSelector", {})
    hook.setdefault("objectSelector", {})
    hook.setdefault("timeoutSeconds", 10)
    if mutating:
        hook.setdefault("reinvocationPolicy", "Never")
    for rule in hook.get("rules") or []:
        rule.setdefault("scope", "*")
    service = (hook.get("clientConfig") or {}).get("service")
    if isinstance(service, dict):
        service.setdefault("port", 443)


class WebhookConfigurationStrategy(Strategy):
    """What the two kinds share; ``mutating`` tells them apart."""

    group = GROUP
    namespaced = False
    bumps_generation = False
    mutating: ClassVar[bool] = False

    def prepare_for_create(self, obj: Object) -> None:
        for hook in obj.get("webhooks") or []:
            default_webhook(hook, self.mutating)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.prepare_for_create(new)

    def spec_changed(self, new: Object, old: Object) -> bool:
        return new.get("webhooks") != old.get("webhooks")

    def validate(self, obj: Object) -> list[Cause]:
        causes: list[Cause] = []
        names: set[str] = set()
        for i, hook in enumerate(obj.get("webhooks") or []):
            path = f"webhooks[{i}]"
            causes.extend(validate_webhook(hook, path, self.mutating))
            causes.extend(validate_review_versions(hook.get("admissionReviewVersions") or [],
                                                   f"{path}.admissionReviewVersions"))
            name = hook.get("name") or ""
            if name:
                if name in names:
                    causes.append(duplicate(f"{path}.name", name))
                names.add(name)
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("Webhooks", "integer", description="Webhooks indicates the number of "
                                                                            "webhooks registered in this "
                                                                            "configuration."), AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        meta = obj.get("metadata") or {}
        return [meta.get("name", ""), len(obj.get("webhooks") or []), since(meta.get("creationTimestamp"))]


class MutatingWebhookConfigurationStrategy(WebhookConfigurationStrategy):
    kind = "MutatingWebhookConfiguration"
    resource = "mutatingwebhookconfigurations"
    singular = "mutatingwebhookconfiguration"
    categories = ("api-extensions",)
    mutating = True


class ValidatingWebhookConfigurationStrategy(WebhookConfigurationStrategy):
    kind = "ValidatingWebhookConfiguration"
    resource = "validatingwebhookconfigurations"
    singular = "validatingwebhookconfiguration"
    categories = ("api-extensions",)

