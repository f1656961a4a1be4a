"""PolicyRule matching, as kube's ``rbac/v1`` helpers (``VerbMatches``, ``APIGroupMatches``, ``ResourceMatches``,
``ResourceNameMatches``, ``NonResourceURLMatches``): pure functions over rules compiled once to frozensets.

A compiled ``Rule`` keeps its wire form (``to_dict``) for the rules reviews and the escalation check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

ALL = "*"


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``PolicyRule``: either a resource rule (api groups, resources, names) or a non-resource rule (URLs)."""

    verbs: frozenset[str]
    api_groups: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()
    resource_names: frozenset[str] = frozenset()
    non_resource_urls: tuple[str, ...] = ()
    wire: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.wire) if self.wire is not None else {"verbs": sorted(self.verbs)}


def compile_rule(rule: Mapping[str, Any]) -> Rule:
    return Rule(frozenset(rule.get("verbs") or ()), frozenset(rule.get("apiGroups") or ()),
                frozenset(rule.get("resources") or ()), frozenset(rule.get("resourceNames") or ()),
                tuple(rule.get("nonResourceURLs") or ()), rule)


def compile_rules(rules: Iterable[Mapping[str, Any]] | None) -> tuple[Rule, ...]:
    return tuple(compile_rule(rule) for rule in rules or () if isinstance(rule, Mapping))


def resource_matches(rule: Rule, resource: str, subresource: str) -> bool:
    """``*``, ``resource``, ``resource/sub``, or ``*/sub`` for any resource's ``sub``."""
    if ALL in rule.resources:
        return True
    if not subresource:
        return resource in rule.resources
    return f"{resource}/{subresource}" in rule.resources or f"*/{subresource}" in rule.resources


def url_matches(patterns: Iterable[str], path: str) -> bool:
    """A non-resource URL: ``*``, the exact path, or a prefix ending in ``*``."""
    for pattern in patterns:
        if pattern in (ALL, path) or pattern.endswith(ALL) and path.startswith(pattern[:-1]):
            return True
    return False


def allows(rule: Rule, attrs: Mapping[str, Any]) -> bool:
    """``RuleAllows``: whether one rule grants the request described by authorizer ``attrs``."""
    verb = attrs.get("verb") or ""
    if verb not in rule.verbs and ALL not in rule.verbs:
        return False
    if "path" in attrs:
        return bool(rule.non_resource_urls) and url_matches(rule.non_resource_urls, attrs["path"])
    if rule.non_resource_urls and not rule.resources:
        return False
    group = attrs.get("group") or ""
    if group not in rule.api_groups and ALL not in rule.api_groups:
        return False
    if not resource_matches(rule, attrs.get("resource") or "", attrs.get("subresource") or ""):
        return False
    return not rule.resource_names or (attrs.get("name") or "") in rule.resource_names


def any_allows(rules: Iterable[Rule], attrs: Mapping[str, Any]) -> bool:
    return any(allows(rule, attrs) for rule in rules)


def covers(owner: Iterable[Rule], requested: Rule) -> bool:
    """``validation.Covers``: whether ``owner`` grants every (verb, group, resource, name) or (verb, URL) the
    requested rule names — each broken down to its smallest pieces, as kube breaks rules down."""
    owner = tuple(owner)
    verbs = requested.verbs or frozenset({""})
    if requested.non_resource_urls:
        return all(any(_covers_url(rule, verb, url) for rule in owner)
                   for verb in verbs for url in requested.non_resource_urls)
    names = requested.resource_names or frozenset({""})
    return all(any(_covers_resource(rule, verb, group, resource, name) for rule in owner)
               for verb in verbs for group in requested.api_groups or ("",) for resource in requested.resources
               for name in names)


def _covers_url(rule: Rule, verb: str, url: str) -> bool:
    if verb not in rule.verbs and ALL not in rule.verbs:
        return False
    for pattern in rule.non_resource_urls:
        if pattern in (url, ALL) or pattern.endswith(ALL) and url.startswith(pattern[:-1]):
            return True
    return False


def _covers_resource(rule: Rule, verb: str, group: str, resource: str, name: str) -> bool:
    if verb not in rule.verbs and ALL not in rule.verbs:
        return False
    if group not in rule.api_groups and ALL not in rule.api_groups:
        return False
    if resource not in rule.resources and ALL not in rule.resources:
        base, _, sub = resource.partition("/")
        if not (sub and f"*/{sub}" in rule.resources):
            return False
    return not rule.resource_names or name in rule.resource_names
