"""Each controller of ``--use-service-account-credentials`` writes as a service account that kube's bootstrap policy
gives a role (``system:controller:<name>``): a name without one would be refused every write under RBAC. Most are
ClusterRoles; the bootstrap signer and the token cleaner have Roles in the namespaces they write (kube-system,
kube-public), as in kube's ``namespace_policy.go``."""

from __future__ import annotations

from apiserver.authz.policy import cluster_role_bindings, controller_rules, namespaced_objects
from controllers.manager import CONTROLLERS
from controllers.support.credentials import CLIENT_NAMES


def test_every_controller_writes_as_an_account_the_bootstrap_policy_binds() -> None:
    roles = set(controller_rules())
    bound = {s["name"] for b in cluster_role_bindings() for s in b.get("subjects", [])
             if s["kind"] == "ServiceAccount" and s.get("namespace") == "kube-system"}
    namespaced = namespaced_objects()
    roles |= {o["metadata"]["name"].removeprefix("system:controller:") for o in namespaced if o["kind"] == "Role"}
    bound |= {s["name"] for o in namespaced if o["kind"] == "RoleBinding" for s in o.get("subjects", [])
              if s["kind"] == "ServiceAccount" and s.get("namespace") == "kube-system"}
    for controller in CONTROLLERS:
        account = CLIENT_NAMES.get(controller, controller)
        assert account in roles, f"{controller} writes as {account}, which has no system:controller role"
        assert account in bound, f"{controller} writes as {account}, which no binding names"
