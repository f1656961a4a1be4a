"""Which requests a webhook or a policy is for (kube's ``rules.Matcher``, ``namespace.Matcher``, ``object.Matcher``).

Shared by webhooks (``rules``, ``namespaceSelector``, ``objectSelector``) and ValidatingAdmissionPolicies and their
bindings (``matchConstraints`` / ``matchResources``: the same plus ``excludeResourceRules`` and ``resourceNames``):

* a rule matches an operation (or ``*``), a group, a version, a resource with its subresource (``pods``,
  ``pods/status``, ``*`` = every resource without subresource, ``pods/*``, ``*/status``, ``*/*``) and a scope
  (``Namespaced``, ``Cluster``, ``*``; a Namespace object is cluster-scoped);
* the namespace selector looks at the labels of the request's namespace (a Namespace's own labels when the
  request is for one); cluster-scoped objects other than namespaces always match;
* the object selector matches when the object's or the old object's labels match.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import BadRequest
from apimachinery.labels import selector_from_label_selector

from .attributes import Attributes, Object
from .sources import Sources


def convert(obj: Object | None, source: Any, target: Any) -> Object | None:
    """An object of ``source``'s version in ``target``'s, through the stored version (matchPolicy Equivalent);
    a custom resource with a conversion webhook only changes ``apiVersion`` here (``convert_through``)."""
    if obj is None or source is None or target is None or source is target:
        return obj
    return target.from_storage(source.to_storage(obj))  # type: ignore[no-any-return]


async def convert_through(obj: Object | None, source: Any, target: Any) -> Object | None:
    """``convert``, with a custom resource's conversion webhook called where it has one (as kube converts the
    versioned attributes it sends a webhook)."""
    converter = getattr(target, "converter", None)
    if obj is None or source is None or target is None or source is target or converter is None:
        return convert(obj, source, target)
    return target.from_storage((await converter.convert([obj], target.api_version))[0])  # type: ignore[no-any-return]


def _split_resource(value: str) -> tuple[str, str]:
    res, _, sub = value.partition("/")
    return res, sub


def rule_matches(rule: Mapping[str, Any], attrs: Attributes, with_operations: bool = True) -> bool:
    """``rules.Matcher.Matches``."""
    if with_operations:
        operations = rule.get("operations") or []
        if "*" not in operations and attrs.operation not in operations:
            return False
    groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
    if "*" not in groups and attrs.group not in groups:
        return False
    if "*" not in versions and attrs.version not in versions:
        return False
    if not any((res == "*" or res == attrs.resource) and (sub == "*" or sub == attrs.subresource)
               for res, sub in map(_split_resource, rule.get("resources") or [])):
        return False
    scope = rule.get("scope") or "*"
    is_namespace = attrs.group == "" and attrs.resource == "namespaces"
    if scope == "Namespaced":
        return not is_namespace and bool(attrs.namespace)
    if scope == "Cluster":
        return is_namespace or not attrs.namespace
    return True


def named_rule_matches(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    """A ``NamedRuleWithOperations``: the rule, and the object's name among ``resourceNames`` when any."""
    names = rule.get("resourceNames") or []
    return rule_matches(rule, attrs) and (not names or attrs.name in names)


def labels_match(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """A LabelSelector over labels; a selector that does not parse matches nothing."""
    try:
        return selector_from_label_selector(selector).matches(labels or {})
    except BadRequest:
        return False


def _is_empty(selector: Mapping[str, Any] | None) -> bool:
    return not selector or (not selector.get("matchLabels") and not selector.get("matchExpressions"))


def namespace_labels(attrs: Attributes, sources: Sources) -> Mapping[str, str] | None:
    """The labels of the request's namespace; for a Namespace being created or deleted, its own."""
    if attrs.group == "" and attrs.resource == "namespaces":
        own = attrs.obj if attrs.obj is not None else attrs.old
        if own is not None:
            return (own.get("metadata") or {}).get("labels") or {}
    namespace = sources.get("", "namespaces", None, attrs.namespace)
    return None if namespace is None else (namespace["metadata"].get("labels") or {})


def namespace_matches(selector: Mapping[str, Any] | None, attrs: Attributes, sources: Sources) -> bool:
    """``namespace.Matcher.MatchNamespaceSelector``."""
    if not attrs.namespace and not (attrs.group == "" and attrs.resource == "namespaces"):
        return True
    if _is_empty(selector):
        return True
    labels = namespace_labels(attrs, sources)
    return labels_match(selector, labels or {})


def _object_labels(obj: Object | None) -> Mapping[str, str] | None:
    if obj is None:
        return None
    return (obj.get("metadata") or {}).get("labels") or {}


def object_matches(selector: Mapping[str, Any] | None, attrs: Attributes) -> bool:
    """``object.Matcher.MatchObjectSelector``: the new or the old object's labels."""
    if _is_empty(selector):
        return True
    return any(labels is not None and labels_match(selector, labels)
               for labels in (_object_labels(attrs.obj), _object_labels(attrs.old)))
