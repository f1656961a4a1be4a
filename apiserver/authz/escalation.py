"""Escalation prevention (kube's ``pkg/registry/rbac/*/policybased`` and ``rbac/validation.ConfirmNoEscalation``).

Nobody grants, by writing a role or a binding, what they may not do themselves:

* a Role or ClusterRole whose rules change is refused unless the writer holds every rule it lists (in the role's
  namespace; cluster-wide for a ClusterRole) or may ``escalate`` it; an ``aggregationRule`` needs full authority;
* a RoleBinding or ClusterRoleBinding is refused unless the writer holds every rule of the role it references or
  may ``bind`` that role;
* members of ``system:masters`` may do anything.

A refusal is kube's 403: ``… is forbidden: user "alice" (groups=["dev" "system:authenticated"]) is attempting to
grant RBAC permissions not currently held:`` followed by the missing rules, one per line, compacted as kube does.
Runs as a validating admission plugin, on the user the request comes as.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apimachinery import errors

from ..admission.attributes import Attributes
from ..admission.sources import Sources
from ..authentication import UserInfo, request_user
from ..authorizer import AUTHORIZER, PRIVILEGED_GROUP
from .rbac import GROUP, RBACAuthorizer
from .rules import ALL, Rule, compile_rule, compile_rules, covers

ROLE_RESOURCES = {"roles": "Role", "clusterroles": "ClusterRole"}
BINDING_RESOURCES = {"rolebindings", "clusterrolebindings"}
FULL_AUTHORITY = (compile_rule({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
                  compile_rule({"verbs": ["*"], "nonResourceURLs": ["*"]}))


def go_strings(values: Iterable[str]) -> str:
    """A ``[]string`` as Go's ``%q`` prints it: ``["a" "b"]``."""
    return "[" + " ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "]"


def compact_string(rule: Mapping[str, Any]) -> str:
    """``rbacv1helpers.CompactString``."""
    parts = [f"{label}:{go_strings(rule[key])}" for key, label in
             (("apiGroups", "APIGroups"), ("resources", "Resources"), ("nonResourceURLs", "NonResourceURLs"),
              ("resourceNames", "ResourceNames"), ("verbs", "Verbs")) if rule.get(key)]
    return "{" + ", ".join(parts) + "}"


def missing_rules(owner: tuple[Rule, ...], requested: Iterable[Rule]) -> list[dict[str, Any]]:
    """The requested rights the owner lacks, broken down to one verb each and merged back per group, resource and
    name (``Covers`` then ``CompactRules``), sorted as kube prints them."""
    missing: dict[tuple[str, ...], dict[str, Any]] = {}
    for rule in requested:
        verbs = sorted(rule.verbs) or [""]
        if rule.non_resource_urls:
            for url in rule.non_resource_urls:
                for verb in verbs:
                    piece = {"verbs": [verb], "nonResourceURLs": [url]}
                    if not covers(owner, compile_rule(piece)):
                        missing.setdefault(("url", url), {"nonResourceURLs": [url], "verbs": []})["verbs"].append(verb)
            continue
        for group in sorted(rule.api_groups) or [""]:
            for resource in sorted(rule.resources):
                for name in sorted(rule.resource_names) or [""]:
                    for verb in verbs:
                        piece = {"verbs": [verb], "apiGroups": [group], "resources": [resource],
                                 **({"resourceNames": [name]} if name else {})}
                        if not covers(owner, compile_rule(piece)):
                            entry = missing.setdefault(("res", group, resource, name),
                                                       {k: v for k, v in piece.items() if k != "verbs"} | {"verbs": []})
                            if verb not in entry["verbs"]:
                                entry["verbs"].append(verb)
    return [missing[key] for key in missing]


class EscalationCheck:
    """A validating admission plugin over the rbac.authorization.k8s.io writes."""

    def __init__(self, sources: Sources, rbac: RBACAuthorizer) -> None:
        self.sources = sources
        self.rbac = rbac

    def configured(self) -> bool:
        """Asked per request: only a user outside ``system:masters`` can be refused (the plain port's user, the
        components', never are — their writes skip admission's work when nothing else is configured)."""
        return PRIVILEGED_GROUP not in request_user().groups

    def concerns(self, group: str, resource: str) -> bool:
        return group == GROUP

    def handles(self, attrs: Attributes) -> bool:
        return (attrs.group == GROUP and not attrs.subresource and attrs.operation in ("CREATE", "UPDATE")
                and attrs.obj is not None and PRIVILEGED_GROUP not in attrs.user.groups)

    async def validate(self, attrs: Attributes) -> None:
        obj = attrs.obj or {}
        namespace = attrs.namespace if attrs.namespaced else ""
        if attrs.resource in ROLE_RESOURCES:
            old = attrs.old or {}
            if attrs.operation == "UPDATE" and (old.get("rules"), old.get("aggregationRule")) == \
                    (obj.get("rules"), obj.get("aggregationRule")):
                return
            if self._allowed(attrs.user, "escalate", attrs.resource, attrs.name, namespace):
                return
            self._confirm(attrs, compile_rules(obj.get("rules")), namespace)
            if obj.get("aggregationRule") and not self._holds(attrs.user, "", FULL_AUTHORITY):
                raise errors.forbidden(attrs.resource, attrs.name,
                                       "must have cluster-admin privileges to use the aggregationRule", GROUP)
        elif attrs.resource in BINDING_RESOURCES:
            old = attrs.old or {}
            if attrs.operation == "UPDATE" and (old.get("roleRef"), old.get("subjects")) == \
                    (obj.get("roleRef"), obj.get("subjects")):
                return
            ref = obj.get("roleRef") or {}
            kind, role = ref.get("kind") or "", ref.get("name") or ""
            resource = "clusterroles" if kind == "ClusterRole" else "roles"
            if self._allowed(attrs.user, "bind", resource, role, namespace):
                return
            self._confirm(attrs, self._role_rules(resource, role, namespace), namespace)

    @staticmethod
    def _allowed(user: UserInfo, verb: str, resource: str, name: str, namespace: str) -> bool:
        return AUTHORIZER.authorize(user, {"verb": verb, "group": GROUP, "resource": resource, "name": name,
                                           "namespace": namespace}).allowed

    def _role_rules(self, resource: str, name: str, namespace: str) -> tuple[Rule, ...]:
        role = self.sources.get(GROUP, resource, namespace if resource == "roles" else None, name)
        if role is None:
            raise errors.NotFound(f'{resource}.{GROUP} "{name}" not found', name=name, group=GROUP, kind=resource)
        return compile_rules(role.get("rules"))

    def _holds(self, user: UserInfo, namespace: str, rules: Iterable[Rule]) -> bool:
        owner = tuple(rule for grant in self.rbac.grants(user, namespace) for rule in grant.rules)
        return all(covers(owner, rule) for rule in rules)

    def _confirm(self, attrs: Attributes, requested: tuple[Rule, ...], namespace: str) -> None:
        grants = list(self.rbac.grants(attrs.user, namespace))
        owner = tuple(rule for grant in grants for rule in grant.rules)
        if (any(ALL in rule.verbs and ALL in rule.api_groups and ALL in rule.resources for rule in owner)
                and not any(rule.non_resource_urls for rule in requested)):
            return
        missing = missing_rules(owner, requested)
        if not missing:
            return
        user = attrs.user
        lines = sorted(compact_string(rule) for rule in missing)
        message = (f'user "{user.username}" (groups={go_strings(user.groups)}) is attempting to grant RBAC '
                   f"permissions not currently held:\n" + "\n".join(lines))
        errs = sorted({grant.missing for grant in grants if grant.missing})
        if errs:
            message += f"; resolution errors: [{', '.join(errs)}]"
        raise errors.forbidden(attrs.resource, attrs.name, message, GROUP)
