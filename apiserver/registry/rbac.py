"""rbac.authorization.k8s.io/v1: Role, ClusterRole, RoleBinding, ClusterRoleBinding (``pkg/apis/rbac/validation``).

* names are path segments (``ValidateRBACName``), roles' rules need verbs and either resources with API groups or
  (cluster roles only) non-resource URLs, never both;
* a ClusterRole's ``aggregationRule`` needs at least one selector; the aggregation controller fills its rules;
* a binding's ``roleRef`` names a Role or ClusterRole of this API group and never changes; subjects are Users,
  Groups (API group ``rbac.authorization.k8s.io``, defaulted) or ServiceAccounts (core, with a namespace);
* tables as kube's printers: roles ``NAME``, ``CREATED AT``; bindings ``NAME``, ``ROLE``, ``AGE`` and, wide,
  ``USERS``, ``GROUPS``, ``SERVICEACCOUNTS``.

Who may write which role or binding (escalation prevention) is ``apiserver.authz.escalation``'s.
"""

from __future__ import annotations

from typing import Any, ClassVar

from apimachinery.errors import Cause
from apimachinery.validation import (
    invalid,
    is_dns1123_subdomain,
    not_supported,
    path_segment_problems,
    required,
    validate_label_selector,
)
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

GROUP = "rbac.authorization.k8s.io"
CREATED_AT_COLUMN = TableColumn("Created At", type="date", description="CreationTimestamp is a timestamp "
                                "representing the server time when this object was created.")


def validate_rule(rule: Any, path: str, namespaced: bool) -> list[Cause]:
    """``ValidatePolicyRule``."""
    rule = rule if isinstance(rule, dict) else {}
    causes: list[Cause] = []
    if not rule.get("verbs"):
        causes.append(required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        if namespaced:
            causes.append(invalid(f"{path}.nonResourceURLs", urls,
                                  "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources"):
            causes.append(invalid(f"{path}.nonResourceURLs", urls,
                                  "rules cannot apply to both regular resources and non-resource URLs"))
        return causes
    if not rule.get("apiGroups"):
        causes.append(required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        causes.append(required(f"{path}.resources", "resource rules must supply at least one resource"))
    return causes


def validate_subject(subject: Any, path: str, namespaced: bool) -> list[Cause]:
    """``ValidateRoleBindingSubject``."""
    subject = subject if isinstance(subject, dict) else {}
    causes: list[Cause] = []
    name, kind, group = subject.get("name") or "", subject.get("kind") or "", subject.get("apiGroup") or ""
    if not name:
        causes.append(required(f"{path}.name"))
    if kind == "ServiceAccount":
        if name:
            causes.extend(invalid(f"{path}.name", name, msg) for msg in is_dns1123_subdomain(name))
        if group:
            causes.append(not_supported(f"{path}.apiGroup", group, [""]))
        if not namespaced and not subject.get("namespace"):
            causes.append(required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if group != GROUP:
            causes.append(not_supported(f"{path}.apiGroup", group, [GROUP]))
    else:
        causes.append(not_supported(f"{path}.kind", kind, ["ServiceAccount", "User", "Group"]))
    return causes


class RBACStrategy(Strategy):
    group = GROUP
    bumps_generation = False

    def name_validator(self, name: str) -> list[str]:
        return path_segment_problems(name)

    def spec_changed(self, new: Object, old: Object) -> bool:
        return False


class RoleStrategy(RBACStrategy):
    kind = "Role"
    resource = "roles"
    singular = "role"

    def validate(self, obj: Object) -> list[Cause]:
        rules = obj.get("rules")
        return [cause for i, rule in enumerate(rules if isinstance(rules, list) else [])
                for cause in validate_rule(rule, f"rules[{i}]", self.namespaced)]

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, CREATED_AT_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        return [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp")]


class ClusterRoleStrategy(RoleStrategy):
    kind = "ClusterRole"
    resource = "clusterroles"
    singular = "clusterrole"
    namespaced = False

    def validate(self, obj: Object) -> list[Cause]:
        causes = super().validate(obj)
        aggregation = obj.get("aggregationRule")
        if isinstance(aggregation, dict):
            selectors = aggregation.get("clusterRoleSelectors") or []
            if not selectors:
                causes.append(required("aggregationRule.clusterRoleSelectors",
                                       "at least one clusterRoleSelector required if aggregationRule is non-nil"))
            for i, selector in enumerate(selectors):
                causes.extend(validate_label_selector(selector, f"aggregationRule.clusterRoleSelectors[{i}]"))
        return causes


class RoleBindingStrategy(RBACStrategy):
    kind = "RoleBinding"
    resource = "rolebindings"
    singular = "rolebinding"
    role_kinds: ClassVar[tuple[str, ...]] = ("Role", "ClusterRole")

    def prepare_for_create(self, obj: Object) -> None:
        """``SetDefaults_RoleBinding`` / ``SetDefaults_Subject``: the API groups left out."""
        ref = obj.get("roleRef")
        if isinstance(ref, dict) and not ref.get("apiGroup"):
            ref["apiGroup"] = GROUP
        for subject in obj.get("subjects") or []:
            if isinstance(subject, dict) and not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
                subject["apiGroup"] = GROUP

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.prepare_for_create(new)

    def validate(self, obj: Object) -> list[Cause]:
        ref: Object = obj["roleRef"] if isinstance(obj.get("roleRef"), dict) else {}
        causes: list[Cause] = []
        if (ref.get("apiGroup") or "") != GROUP:
            causes.append(not_supported("roleRef.apiGroup", ref.get("apiGroup") or "", [GROUP]))
        if (ref.get("kind") or "") not in self.role_kinds:
            causes.append(not_supported("roleRef.kind", ref.get("kind") or "", list(self.role_kinds)))
        name = ref.get("name") or ""
        if not name:
            causes.append(required("roleRef.name"))
        causes.extend(invalid("roleRef.name", name, msg) for msg in path_segment_problems(name) if name)
        subjects = obj.get("subjects")
        for i, subject in enumerate(subjects if isinstance(subjects, list) else []):
            causes.extend(validate_subject(subject, f"subjects[{i}]", self.namespaced))
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        causes = self.validate(new)
        if new.get("roleRef") != old.get("roleRef"):
            causes.append(invalid("roleRef", new.get("roleRef"), "cannot change roleRef"))
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("Role", description="RoleRef can reference a Role in the current "
                                         "namespace or a ClusterRole in the global namespace. If the RoleRef "
                                         "cannot be resolved, the Authorizer must return an error. This field "
                                         "is immutable."),
                AGE_COLUMN,
                TableColumn("Users", priority=1, description="Users in the roleBinding"),
                TableColumn("Groups", priority=1, description="Groups in the roleBinding"),
                TableColumn("ServiceAccounts", priority=1, description="ServiceAccounts in the roleBinding")]

    def row(self, obj: Object) -> list[Any]:
        ref = obj.get("roleRef") or {}
        subjects = obj.get("subjects") or []

        def named(kind: str) -> str:
            return ", ".join(s.get("name", "") for s in subjects if s.get("kind") == kind)

        accounts = ", ".join(f"{s.get('namespace', '')}/{s.get('name', '')}" for s in subjects
                             if s.get("kind") == "ServiceAccount")
        return [obj["metadata"]["name"], f"{ref.get('kind', '')}/{ref.get('name', '')}",
                since(obj["metadata"].get("creationTimestamp")), named("User"), named("Group"), accounts]


class ClusterRoleBindingStrategy(RoleBindingStrategy):
    kind = "ClusterRoleBinding"
    resource = "clusterrolebindings"
    singular = "clusterrolebinding"
    namespaced = False
    role_kinds = ("ClusterRole",)
