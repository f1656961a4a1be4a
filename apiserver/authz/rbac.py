"""The RBAC authorizer and rule resolver (``plugin/pkg/auth/authorizer/rbac``), over this apiserver's watch caches.

The four rbac.authorization.k8s.io kinds are indexed once per change of any of them (their caches' revisions):
every binding's subjects point at the compiled rules of the role it names, cluster-wide (ClusterRoleBindings) or
per namespace (RoleBindings). A request then costs a few dictionary look-ups — one per user, group and service
account it comes as — and a scan of the rules found. Like kube's, the authorizer never denies: without a rule it
has no opinion, with a reason only when a binding names a role that does not exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..admission.sources import Sources
from ..authentication import SERVICE_ACCOUNT_PREFIX, UserInfo
from ..authorizer import Rules
from .rules import Rule, allows, compile_rules

GROUP = "rbac.authorization.k8s.io"
RESOURCES = ("roles", "clusterroles", "rolebindings", "clusterrolebindings")
# A subject as the index keys it: ("User", name), ("Group", name) or ("ServiceAccount", "ns/name").
SubjectKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Grant:
    """The rules one binding gives one subject, and how kube describes the binding in an "allowed by" reason."""

    rules: tuple[Rule, ...]
    describe: str
    missing: str = ""  # the error of a binding whose role is missing ('clusterrole… "x" not found')


@dataclass
class Index:
    revision: tuple[int, ...] = ()
    cluster: dict[SubjectKey, list[Grant]] = field(default_factory=dict)
    namespaced: dict[str, dict[SubjectKey, list[Grant]]] = field(default_factory=dict)


def subject_keys(user: UserInfo) -> list[SubjectKey]:
    """Every subject a user matches: itself, its groups, and its service account (``system:serviceaccount:ns:n``)."""
    keys: list[SubjectKey] = [("User", user.username)]
    keys.extend(("Group", group) for group in user.groups)
    if user.username.startswith(SERVICE_ACCOUNT_PREFIX):
        parts = user.username.split(":")
        if len(parts) == 4:
            keys.append(("ServiceAccount", f"{parts[2]}/{parts[3]}"))
    return keys


def describe_subject(subject: Mapping[str, Any], binding_namespace: str) -> str:
    name = subject.get("name") or ""
    if subject.get("kind") == "ServiceAccount":
        name = f"{name}/{subject.get('namespace') or binding_namespace}"
    return f'{subject.get("kind")} "{name}"'


def subject_key(subject: Mapping[str, Any], binding_namespace: str) -> SubjectKey | None:
    kind, name = subject.get("kind"), subject.get("name") or ""
    if kind == "ServiceAccount":
        return kind, f"{subject.get('namespace') or binding_namespace}/{name}"
    if kind in ("User", "Group"):
        return kind, name
    return None


class RBACAuthorizer:
    """``authorize`` and ``rules_for`` from the stored roles and bindings."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        self._index = Index()

    def index(self) -> Index:
        revision = tuple(self.sources.revision(GROUP, resource) for resource in RESOURCES)
        if revision != self._index.revision:
            self._index = self._build(revision)
        return self._index

    def _build(self, revision: tuple[int, ...]) -> Index:
        roles = {(r["metadata"].get("namespace"), r["metadata"]["name"]): compile_rules(r.get("rules"))
                 for r in self.sources.list(GROUP, "roles")}
        cluster_roles = {r["metadata"]["name"]: compile_rules(r.get("rules"))
                         for r in self.sources.list(GROUP, "clusterroles")}
        index = Index(revision)
        for binding in self.sources.list(GROUP, "clusterrolebindings"):
            self._add(index.cluster, binding, "", roles, cluster_roles)
        for binding in self.sources.list(GROUP, "rolebindings"):
            namespace = binding["metadata"].get("namespace") or ""
            self._add(index.namespaced.setdefault(namespace, {}), binding, namespace, roles, cluster_roles)
        return index

    @staticmethod
    def _add(into: dict[SubjectKey, list[Grant]], binding: Mapping[str, Any], namespace: str,
             roles: Mapping[tuple[str | None, str], tuple[Rule, ...]],
             cluster_roles: Mapping[str, tuple[Rule, ...]]) -> None:
        ref = binding.get("roleRef") or {}
        kind, role = ref.get("kind") or "", ref.get("name") or ""
        rules = cluster_roles.get(role) if kind == "ClusterRole" else roles.get((namespace, role))
        missing = ""
        if rules is None:
            resource = "clusterrole" if kind == "ClusterRole" else "role"
            missing = f'{resource}.{GROUP} "{role}" not found'
        name = binding["metadata"]["name"]
        label = f'RoleBinding "{name}/{namespace}"' if namespace else f'ClusterRoleBinding "{name}"'
        for subject in binding.get("subjects") or ():
            key = subject_key(subject, namespace)
            if key is not None:
                describe = f'{label} of {kind} "{role}" to {describe_subject(subject, namespace)}'
                into.setdefault(key, []).append(Grant(rules or (), describe, missing))

    def grants(self, user: UserInfo, namespace: str) -> Iterable[Grant]:
        """Cluster-wide grants first, then the namespace's (kube's ``VisitRulesFor`` order)."""
        index = self.index()
        keys = subject_keys(user)
        for key in keys:
            yield from index.cluster.get(key, ())
        scoped = index.namespaced.get(namespace) if namespace else None
        if scoped:
            for key in keys:
                yield from scoped.get(key, ())

    def authorize(self, user: UserInfo, attributes: Mapping[str, Any]) -> tuple[bool | None, str]:
        """(True, "RBAC: allowed by …") or (None, reason): RBAC never denies outright."""
        errors: list[str] = []
        for grant in self.grants(user, attributes.get("namespace") or ""):
            if grant.missing:
                errors.append(grant.missing)
            for rule in grant.rules:
                if allows(rule, attributes):
                    return True, f"RBAC: allowed by {grant.describe}"
        if not errors:
            return None, ""
        return None, "RBAC: " + (errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")

    def rules(self, user: UserInfo, namespace: str) -> Rules:
        """Every rule the user holds in the namespace, as a rules review lists them; a missing role makes the
        answer incomplete."""
        return rules_review([rule for grant in self.grants(user, namespace) for rule in grant.rules],
                            [grant.missing for grant in self.grants(user, namespace) if grant.missing])


def rules_review(rules: Iterable[Rule], errors: list[str]) -> Rules:
    """PolicyRules → a review's ``resourceRules`` and ``nonResourceRules`` (kube's ``ConvertToResourceRules``)."""
    resource: list[dict[str, Any]] = []
    non_resource: list[dict[str, Any]] = []
    for rule in rules:
        wire = rule.to_dict()
        if rule.resources:
            entry = {"verbs": list(wire.get("verbs") or ()), "apiGroups": list(wire.get("apiGroups") or ()),
                     "resources": list(wire.get("resources") or ())}
            if rule.resource_names:
                entry["resourceNames"] = list(wire.get("resourceNames") or ())
            resource.append(entry)
        if rule.non_resource_urls:
            non_resource.append({"verbs": list(wire.get("verbs") or ()),
                                 "nonResourceURLs": list(wire.get("nonResourceURLs") or ())})
    return Rules(resource, non_resource, bool(errors), tuple(errors))
