"""``audit.k8s.io/v1`` Policy: which level and stages a request is audited at (kube's ``policy/checker.go``).

Rules are tried in order; the first whose every set selector matches decides. A rule naming ``resources`` or
``namespaces`` matches only resource requests, one naming ``nonResourceURLs`` only non-resource ones (a trailing
``*`` is a prefix match). ``resources`` entries match ``pods``, ``pods/status``, ``*``, ``*/status`` and
``pods/*`` within their group (``""`` is core), narrowed by ``resourceNames``. No matching rule: level None.
A rule's ``omitStages`` add to the policy's; its ``omitManagedFields``, when set, overrides the policy's.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from apimachinery import yamlload

__all__ = ["STAGES", "Level", "Policy", "PolicyError", "Rule", "Verdict", "load_policy", "parse_policy"]

STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
API_VERSIONS = ("audit.k8s.io/v1",)


class Level(enum.IntEnum):
    """Ordered as kube's ``Level.Less``: each level logs what the one before does, and more."""

    NONE = 0
    METADATA = 1
    REQUEST = 2
    REQUEST_RESPONSE = 3

    @property
    def wire(self) -> str:
        return ("None", "Metadata", "Request", "RequestResponse")[self]

    @classmethod
    def parse(cls, text: str) -> Level:
        names = {"None": cls.NONE, "Metadata": cls.METADATA, "Request": cls.REQUEST,
                 "RequestResponse": cls.REQUEST_RESPONSE}
        if text not in names:
            raise PolicyError(f'level: Unsupported value: "{text}": supported values: "None", "Metadata", '
                              f'"Request", "RequestResponse"')
        return names[text]


class PolicyError(ValueError):
    """An unusable policy file: the apiserver refuses to start, as kube-apiserver does."""


@dataclass(frozen=True)
class GroupResources:
    group: str
    resources: tuple[str, ...]
    resource_names: tuple[str, ...]

    def matches(self, group: str, resource: str, subresource: str, name: str) -> bool:
        if group != self.group:
            return False
        if not self.resources:
            return True
        if self.resource_names and name not in self.resource_names:
            return False
        combined = f"{resource}/{subresource}" if subresource else resource
        for res in self.resources:
            if res in ("*", combined):
                return True
            if subresource and res.startswith("*/") and res[2:] == subresource:
                return True
            if res.endswith("/*") and res[:-2] == resource:
                return True
        return False


@dataclass(frozen=True)
class Rule:
    level: Level
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: tuple[str, ...] = ()
    omit_managed_fields: bool | None = None

    def matches(self, user: str, groups: tuple[str, ...], attrs: Mapping[str, Any]) -> bool:
        if self.users and user not in self.users:
            return False
        if self.user_groups and not any(g in self.user_groups for g in groups):
            return False
        if self.verbs and attrs.get("verb") not in self.verbs:
            return False
        if "path" in attrs:  # a non-resource request
            if self.resources or self.namespaces:
                return False
            return not self.non_resource_urls or any(_url_matches(u, attrs["path"]) for u in self.non_resource_urls)
        if self.non_resource_urls:
            return False
        if self.namespaces and (attrs.get("namespace") or "") not in self.namespaces:
            return False
        return not self.resources or any(
            gr.matches(attrs.get("group") or "", attrs["resource"], attrs.get("subresource") or "",
                       attrs.get("name") or "") for gr in self.resources)


def _url_matches(pattern: str, path: str) -> bool:
    return path.startswith(pattern[:-1]) if pattern.endswith("*") else path == pattern


@dataclass(frozen=True)
class Verdict:
    """What the policy says of one request."""

    level: Level
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...] = ()
    omit_stages: tuple[str, ...] = ()
    omit_managed_fields: bool = False
    _none: Verdict = field(default=Verdict(Level.NONE), repr=False)

    def evaluate(self, user: str, groups: tuple[str, ...], attrs: Mapping[str, Any]) -> Verdict:
        for rule in self.rules:
            if rule.matches(user, groups, attrs):
                if rule.level == Level.NONE:
                    return self._none
                omit = rule.omit_managed_fields
                return Verdict(rule.level, frozenset(self.omit_stages + rule.omit_stages),
                               self.omit_managed_fields if omit is None else omit)
        return self._none


def _strings(rule: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = rule.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PolicyError(f"{where}.{key}: Invalid value: must be a list of strings")
    return tuple(value)


def _stages(doc: Mapping[str, Any], where: str) -> tuple[str, ...]:
    stages = _strings(doc, "omitStages", where)
    for stage in stages:
        if stage not in STAGES:
            raise PolicyError(f'{where}.omitStages: Unsupported value: "{stage}": supported values: '
                              + ", ".join(f'"{s}"' for s in STAGES))
    return stages


def parse_policy(doc: Any) -> Policy:
    """A Policy from its decoded YAML/JSON; raises ``PolicyError`` with kube's field paths."""
    if not isinstance(doc, dict) or doc.get("kind") != "Policy" or doc.get("apiVersion") not in API_VERSIONS:
        raise PolicyError("not an audit.k8s.io/v1 Policy (apiVersion audit.k8s.io/v1, kind Policy)")
    rules = []
    for i, raw in enumerate(doc.get("rules") or []):
        where = f"rules[{i}]"
        if not isinstance(raw, dict):
            raise PolicyError(f"{where}: Invalid value: must be a mapping")
        resources = []
        for j, gr in enumerate(raw.get("resources") or []):
            at = f"{where}.resources[{j}]"
            resources.append(GroupResources(str(gr.get("group") or ""), _strings(gr, "resources", at),
                                            _strings(gr, "resourceNames", at)))
        non_resource = _strings(raw, "nonResourceURLs", where)
        if non_resource and (resources or raw.get("namespaces")):
            raise PolicyError(f"{where}.nonResourceURLs: Invalid value: rules cannot apply to both regular resources "
                              "and non-resource URLs")
        omit = raw.get("omitManagedFields")
        rules.append(Rule(Level.parse(str(raw.get("level") or "")), _strings(raw, "users", where),
                          _strings(raw, "userGroups", where), _strings(raw, "verbs", where), tuple(resources),
                          _strings(raw, "namespaces", where), non_resource, _stages(raw, where),
                          None if omit is None else bool(omit)))
    return Policy(tuple(rules), _stages(doc, "policy"), bool(doc.get("omitManagedFields")))


def load_policy(path: str | Path) -> Policy:
    """``--audit-policy-file``: a YAML or JSON Policy."""
    try:
        doc = yamlload.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise PolicyError(f"loading audit policy file {path}: {err}") from None
    return parse_policy(doc)
