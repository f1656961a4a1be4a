"""Does a policy's ``matchConstraints`` (or a binding's ``matchResources``) take this request? (kube's
``matching.Matcher``): namespace and object selectors, a resource rule (with ``resourceNames``; a binding's
``matchResources`` without rules takes whatever its policy matches) and no exclude rule; with ``matchPolicy:
Equivalent`` a rule may match another served version of the resource, and the policy then sees the request in
that version."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..attributes import Attributes
from ..matching import convert, named_rule_matches, namespace_matches, object_matches
from ..sources import Sources


def matches(match: dict[str, Any] | None, attrs: Attributes, sources: Sources) -> Attributes | None:
    """``attrs`` (possibly in the matched version) when ``match`` takes the request, else None."""
    if match is None:
        return attrs
    if not namespace_matches(match.get("namespaceSelector"), attrs, sources):
        return None
    if not object_matches(match.get("objectSelector"), attrs):
        return None
    if any(named_rule_matches(rule, attrs) for rule in match.get("excludeResourceRules") or []):
        return None
    rules = match.get("resourceRules") or []
    if not rules or any(named_rule_matches(rule, attrs) for rule in rules):
        return attrs  # a binding's matchResources without rules takes whatever its policy matches
    if (match.get("matchPolicy") or "Equivalent") != "Equivalent":
        return None
    versions = sources.equivalents(attrs.group, attrs.resource)
    source = next((s for s in versions if s.version == attrs.version), None)
    for rule in rules:
        for strategy in versions:
            if strategy.version == attrs.version:
                continue
            candidate = replace(attrs, group=strategy.group, version=strategy.version, kind=strategy.kind)
            if named_rule_matches(rule, candidate):
                return replace(candidate, obj=convert(attrs.obj, source, strategy),
                               old=convert(attrs.old, source, strategy))
    return None
