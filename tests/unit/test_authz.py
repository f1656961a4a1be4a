"""The authorizers without a server: rule matching, the RBAC index, the union and privileged group, the node
graph and Node authorizer, escalation's missing-rule text, the policy's reconciliation and the request attributes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from apimachinery import errors
from apiserver.authentication import UNSECURED, UserInfo, user_from_headers
from apiserver.authorizer import AlwaysDeny, Union, parse_modes
from apiserver.authz.escalation import compact_string, missing_rules
from apiserver.authz.filter import forbidden, request_attributes
from apiserver.authz.node import NodeAuthorizer
from apiserver.authz.nodegraph import NodeGraph
from apiserver.authz.policy import NODE_RULES, cluster_roles
from apiserver.authz.rbac import RBACAuthorizer
from apiserver.authz.reconcile import reconciled_binding, reconciled_role
from apiserver.authz.rules import allows, compile_rule, compile_rules, covers
from apiserver.storage.cacher import CachedObject
from controllers.clusterroleaggregation import aggregated_rules

ALICE = UserInfo("alice", ("dev", "system:authenticated"))
N1 = UserInfo("system:node:n1", ("system:nodes", "system:authenticated"))


class FakeSources:
    """The four RBAC resources as ``Sources`` serves them, with a revision that changes on every edit."""

    def __init__(self, **objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        self.rv = 1

    def revision(self, group: str, resource: str) -> int:
        return self.rv

    def list(self, group: str, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.objects.get(resource, [])


def role(name: str, rules: list[dict[str, Any]], namespace: str | None = None) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": meta, "rules": rules}


def binding(name: str, kind: str, role_name: str, subjects: list[dict[str, Any]],
            namespace: str | None = None) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": meta, "roleRef": {"kind": kind, "name": role_name}, "subjects": subjects}


def test_rule_matching() -> None:
    rule = compile_rule({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]})
    assert allows(rule, {"verb": "get", "group": "", "resource": "pods", "name": "x"})
    assert allows(rule, {"verb": "get", "group": "", "resource": "pods", "subresource": "log"})
    assert not allows(rule, {"verb": "get", "group": "", "resource": "pods", "subresource": "exec"})
    assert not allows(rule, {"verb": "get", "group": "apps", "resource": "pods"})
    assert not allows(rule, {"verb": "get", "path": "/api"})
    named = compile_rule({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/scale"], "resourceNames": ["a"]})
    assert allows(named, {"verb": "update", "group": "apps", "resource": "deployments", "subresource": "scale",
                          "name": "a"})
    assert not allows(named, {"verb": "update", "group": "apps", "resource": "deployments", "subresource": "scale",
                              "name": "b"})
    urls = compile_rule({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]})
    assert allows(urls, {"verb": "get", "path": "/apis/apps/v1"})
    assert not allows(urls, {"verb": "get", "path": "/healthzz"})
    assert covers(compile_rules([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]), rule)
    assert not covers([rule], compile_rule({"verbs": ["get"], "apiGroups": [""], "resources": ["*"]}))


def test_rbac_index_and_reasons() -> None:
    sources = FakeSources(
        roles=[role("reader", [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}], "dev")],
        clusterroles=[role("viewer", [{"verbs": ["list"], "apiGroups": [""], "resources": ["nodes"]}])],
        rolebindings=[binding("rb", "Role", "reader", [{"kind": "Group", "name": "dev"}], "dev"),
                      binding("sa", "ClusterRole", "viewer", [{"kind": "ServiceAccount", "name": "ci"}], "dev"),
                      binding("dangling", "ClusterRole", "gone", [{"kind": "User", "name": "alice"}], "dev")],
        clusterrolebindings=[binding("crb", "ClusterRole", "viewer", [{"kind": "User", "name": "alice"}])])
    rbac = RBACAuthorizer(sources)  # type: ignore[arg-type]
    pods = {"verb": "get", "group": "", "resource": "pods", "namespace": "dev", "name": "p"}
    assert rbac.authorize(ALICE, pods) == (True, 'RBAC: allowed by RoleBinding "rb/dev" of Role "reader" to Group '
                                                  '"dev"')
    assert rbac.authorize(ALICE, {**pods, "namespace": "prod"}) == (None, "")
    assert rbac.authorize(ALICE, {**pods, "verb": "delete"}) == (
        None, 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found')
    assert rbac.authorize(ALICE, {"verb": "list", "group": "", "resource": "nodes"})[0] is True
    sa = UserInfo("system:serviceaccount:dev:ci", ("system:serviceaccounts",))
    assert rbac.authorize(sa, {"verb": "list", "group": "", "resource": "nodes", "namespace": "dev"}) == (
        True, 'RBAC: allowed by RoleBinding "sa/dev" of ClusterRole "viewer" to ServiceAccount "ci/dev"')
    rules = rbac.rules(ALICE, "dev")
    assert rules.resource_rules == [{"verbs": ["list"], "apiGroups": [""], "resources": ["nodes"]},
                                    {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
    assert rules.incomplete


def test_union_privileged_group_and_modes() -> None:
    chain = Union([AlwaysDeny()])
    assert chain.authorize(UNSECURED, {"verb": "delete", "path": "/"}).allowed
    decision = chain.authorize(ALICE, {"verb": "get", "path": "/"})
    assert (decision.allowed, decision.reason) == (False, "Everything is forbidden.")
    assert parse_modes("Node,RBAC") == ["Node", "RBAC"]
    for bad in ("", "RBAC,RBAC", "ABAC"):
        with pytest.raises(ValueError):
            parse_modes(bad)


def test_the_node_graph_and_authorizer() -> None:
    graph = NodeGraph()
    pod = {"metadata": {"namespace": "ns", "name": "p"}, "spec": {
        "nodeName": "n1", "serviceAccountName": "builder", "imagePullSecrets": [{"name": "pull"}],
        "volumes": [{"name": "v", "projected": {"sources": [{"configMap": {"name": "cm"}}]}},
                    {"name": "c", "persistentVolumeClaim": {"claimName": "data"}}],
        "containers": [{"name": "c", "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "env"}}}]}]}}
    graph.set_pod("ns/p", pod)
    node = NodeAuthorizer(graph, compile_rules(NODE_RULES))

    def get(resource: str, name: str, user: UserInfo = N1) -> tuple[bool | None, str]:
        return node.authorize(user, {"verb": "get", "group": "", "resource": resource, "namespace": "ns",
                                     "name": name})

    for resource, name in (("secrets", "pull"), ("secrets", "env"), ("configmaps", "cm"),
                           ("persistentvolumeclaims", "data")):
        assert get(resource, name)[0] is True, (resource, name)
    token = {"verb": "create", "group": "", "resource": "serviceaccounts", "subresource": "token", "namespace": "ns"}
    assert node.authorize(N1, {**token, "name": "builder"})[0] is True
    assert node.authorize(N1, {**token, "name": "default"})[0] is None
    assert get("secrets", "other") == (None, "no relationship found between node 'n1' and this object")
    assert get("secrets", "pull", UserInfo("system:node:n2", ("system:nodes",)))[0] is None
    assert get("secrets", "pull", ALICE) == (None, "")

    def get_volume(user: UserInfo = N1) -> bool | None:
        return node.authorize(user, {"verb": "get", "group": "", "resource": "persistentvolumes", "name": "pv-1"})[0]

    assert get_volume() is None  # the claim is not bound yet
    graph.set_claim("ns/data", {"metadata": {"namespace": "ns", "name": "data"}, "spec": {"volumeName": "pv-1"}})
    assert get_volume() is True  # node → pod → claim → volume
    assert get_volume(UserInfo("system:node:n2", ("system:nodes",))) is None
    graph.set_claim("ns/data", None)
    assert get_volume() is None
    graph.set_pod("ns/p", {**pod, "spec": {**pod["spec"], "nodeName": "n2"}})
    assert get("secrets", "pull")[0] is None
    graph.set_pod("ns/p", None)
    assert not graph._edges
    lease = {"verb": "update", "group": "coordination.k8s.io", "resource": "leases", "namespace": "kube-node-lease"}
    assert node.authorize(N1, {**lease, "name": "n1"})[0] is True
    assert node.authorize(N1, {**lease, "name": "n2"})[1] == ("can only access node lease with the same name as "
                                                              "the requesting node")
    assert node.authorize(N1, {"verb": "patch", "group": "", "resource": "nodes", "subresource": "status"})[0]


def test_the_node_graph_looks_only_at_pod_events_that_may_change_its_edges() -> None:
    """kube's graph populator: a pod without a node, or still on the node it had, keeps its edges, unless an
    ephemeral container (which may reference more) is there; the graph decodes only the pods it must."""
    graph = NodeGraph()

    def cached(pod: dict[str, Any]) -> CachedObject:
        return CachedObject("ns/p", None, orjson.dumps(pod), 1, {},
                            {"spec.nodeName": pod["spec"].get("nodeName") or ""})

    secret_env = [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "env"}}}]
    pod: dict[str, Any] = {"metadata": {"namespace": "ns", "name": "p"},
                           "spec": {"containers": [{"name": "c", "env": secret_env}]}}
    assert not graph.pod_may_change(cached(pod))  # created, not scheduled: nothing to link
    bound = {**pod, "spec": {**pod["spec"], "nodeName": "n1"}}
    assert graph.pod_may_change(cached(bound))  # the binding
    graph.set_pod("ns/p", bound)
    running = {**bound, "status": {"phase": "Running"}}
    assert not graph.pod_may_change(cached(running))  # a status update
    debug = {**running, "spec": {**bound["spec"], "ephemeralContainers": [{"name": "d", "env": [
        {"name": "Y", "valueFrom": {"secretKeyRef": {"name": "debug"}}}]}]}}
    assert graph.pod_may_change(cached(debug))
    graph.set_pod("ns/p", debug)
    assert graph.has_edge(("secrets", "ns", "debug"), "n1")
    assert graph.pod_may_change(cached({**bound, "spec": {**bound["spec"], "nodeName": "n2"}}))


def test_missing_rules_are_worded_as_kube() -> None:
    owner = compile_rules([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}])
    requested = compile_rules([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "secrets"]},
                               {"verbs": ["get"], "nonResourceURLs": ["/metrics"]}])
    missing = missing_rules(owner, requested)
    assert sorted(compact_string(rule) for rule in missing) == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["list"]}',
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}',
        '{NonResourceURLs:["/metrics"], Verbs:["get"]}']


def test_reconciliation_adds_what_is_missing_and_keeps_the_rest() -> None:
    expected = next(r for r in cluster_roles() if r["metadata"]["name"] == "system:basic-user")
    current = {**expected, "metadata": {"name": "system:basic-user", "labels": {"mine": "yes"}},
               "rules": [{"verbs": ["get"], "apiGroups": ["x"], "resources": ["y"]}, expected["rules"][0]]}
    fixed = reconciled_role(current, expected)
    assert fixed["rules"] == [*current["rules"], expected["rules"][1]]
    assert fixed["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults", "mine": "yes"}
    assert reconciled_role(fixed, expected) == fixed
    crb = {"metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "me"}]}
    assert reconciled_binding(crb, {"metadata": {}, "subjects": [{"kind": "Group", "name": "g"}]})["subjects"] == [
        {"kind": "User", "name": "me"}, {"kind": "Group", "name": "g"}]


def test_aggregation_collects_selected_rules_once() -> None:
    view = {"metadata": {"name": "view"}, "aggregationRule": {"clusterRoleSelectors": [
        {"matchLabels": {"agg": "view"}}]}}
    rule = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
    roles = [view, {"metadata": {"name": "b", "labels": {"agg": "view"}}, "rules": [rule]},
             {"metadata": {"name": "a", "labels": {"agg": "view"}}, "rules": [rule, {**rule, "verbs": ["list"]}]},
             {"metadata": {"name": "c"}, "rules": [{**rule, "verbs": ["delete"]}]}]
    assert aggregated_rules(view, roles) == [rule, {**rule, "verbs": ["list"]}]


def test_request_attributes_and_forbidden_text() -> None:
    def attrs(method: str, path: str, query: bytes = b"") -> dict[str, Any]:
        return request_attributes({"type": "http", "method": method, "path": path, "query_string": query})

    assert attrs("GET", "/api/v1/namespaces/dev/pods") == {
        "verb": "list", "group": "", "version": "v1", "resource": "pods", "subresource": "", "namespace": "dev",
        "name": ""}
    assert attrs("GET", "/api/v1/pods", b"watch=1")["verb"] == "watch"
    assert attrs("GET", "/api/v1/watch/namespaces/dev/pods/x")["verb"] == "watch"
    assert attrs("DELETE", "/apis/apps/v1/namespaces/dev/deployments")["verb"] == "deletecollection"
    assert attrs("POST", "/api/v1/namespaces/dev/pods/x/eviction")["subresource"] == "eviction"
    assert attrs("GET", "/api/v1/namespaces/dev")["namespace"] == "dev"
    assert attrs("GET", "/apis/apps/v1") == {"verb": "get", "path": "/apis/apps/v1"}
    err = forbidden(ALICE, attrs("PATCH", "/api/v1/nodes/n1/status"), "")
    assert err.message == ('nodes "n1" is forbidden: User "alice" cannot patch resource "nodes/status" in API group '
                           '"" at the cluster scope')
    assert forbidden(ALICE, {"verb": "get", "path": "/x"}, "why").message == (
        'forbidden: User "alice" cannot get path "/x": why')


def test_impersonation_is_checked_part_by_part() -> None:
    asked: list[dict[str, Any]] = []

    def record(user: UserInfo, attributes: dict[str, Any]) -> None:
        asked.append(attributes)
        if attributes["resource"] == "groups":
            raise forbidden(user, attributes, "")

    user_from_headers([(b"impersonate-user", b"system:serviceaccount:ci:b"), (b"impersonate-uid", b"1"),
                       (b"impersonate-extra-scopes", b"s")], ALICE, record)
    assert [(a["resource"], a.get("subresource", ""), a.get("namespace", ""), a["name"]) for a in asked] == [
        ("serviceaccounts", "", "ci", "b"), ("userextras", "scopes", "", "s"), ("uids", "", "", "1")]
    with pytest.raises(errors.Forbidden) as err:
        user_from_headers([(b"impersonate-user", b"bob"), (b"impersonate-group", b"admins")], ALICE, record)
    assert err.value.message == ('groups "admins" is forbidden: User "alice" cannot impersonate resource "groups" in '
                                 'API group "" at the cluster scope')
