"""Authorization under ``--authorization-mode=Node,RBAC`` (the session apiserver runs it, as ``kubelab up`` does):
kubectl 1.32 as ``alice`` (``--as``, checked against the ``impersonate`` verb: the plain port's user is
``system:masters``) can do exactly what a Role grants and reads kube's 403 text for the rest; ``auth can-i`` and
``--list`` answer truly; escalation through roles and bindings is refused; the clusterrole-aggregation controller
fills aggregated roles; the bootstrap policy is there; a node's identity reads only what its pods use and changes
only its own Node and pods; ``kubectl auth reconcile`` works."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from kubernetes import client as k8s

from conftest import Kubectl, kubectl_release
from support.controllers import MERGE, controller_manager_fixture
from support.wait import wait_for

RBAC = "/apis/rbac.authorization.k8s.io/v1"
ALICE = ("--as", "alice", "--as-group", "dev")
NODE1 = ("--as", "system:node:rbac-n1", "--as-group", "system:nodes")

manager = controller_manager_fixture("clusterrole-aggregation")


def forbidden(kubectl: Kubectl, *args: str) -> str:
    result = kubectl(*args, check=False)
    assert result.returncode != 0, result.stdout
    return result.stderr.strip()


@pytest.fixture()
def reader(kubectl: Kubectl, ns: str) -> str:
    """alice may get and list pods in ``ns`` (a Role and a RoleBinding made with kubectl)."""
    kubectl("-n", ns, "create", "role", "pod-reader", "--verb=get,list", "--resource=pods")
    kubectl("-n", ns, "create", "rolebinding", "alice-reads", "--role=pod-reader", "--user=alice")
    return ns


def test_a_role_grants_exactly_what_it_says(kubectl: Kubectl, reader: str) -> None:
    ns = reader
    kubectl("-n", ns, "run", "web", "--image=busybox")
    assert kubectl("-n", ns, "get", "pods", "-o", "name", *ALICE).stdout == "pod/web\n"
    assert kubectl("-n", ns, "get", "pod", "web", "-o", "name", *ALICE).stdout == "pod/web\n"
    assert forbidden(kubectl, "-n", ns, "get", "secrets", *ALICE) == (
        f'Error from server (Forbidden): secrets is forbidden: User "alice" cannot list resource "secrets" in API '
        f'group "" in the namespace "{ns}"')
    assert forbidden(kubectl, "-n", ns, "delete", "pod", "web", *ALICE) == (
        f'Error from server (Forbidden): pods "web" is forbidden: User "alice" cannot delete resource "pods" in API '
        f'group "" in the namespace "{ns}"')
    assert forbidden(kubectl, "-n", ns, "logs", "web", *ALICE).endswith(
        f'User "alice" cannot get resource "pods/log" in API group "" in the namespace "{ns}"')
    assert forbidden(kubectl, "get", "--raw", "/api/v1/namespaces/default/pods?watch=true", *ALICE).endswith(
        'User "alice" cannot watch resource "pods" in API group "" in the namespace "default"')
    assert forbidden(kubectl, "get", "nodes", *ALICE) == (
        'Error from server (Forbidden): nodes is forbidden: User "alice" cannot list resource "nodes" in API group '
        '"" at the cluster scope')
    assert forbidden(kubectl, "get", "--raw", "/metrics", *ALICE) == (
        'Error from server (Forbidden): forbidden: User "alice" cannot get path "/metrics"')
    assert kubectl("get", "--raw", "/version", *ALICE).stdout  # system:public-info-viewer


def test_forbidden_is_a_kube_status(client: httpx.Client, reader: str) -> None:
    resp = client.delete(f"/api/v1/namespaces/{reader}/pods", headers={"Impersonate-User": "alice"})
    assert resp.status_code == 403
    assert resp.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'pods is forbidden: User "alice" cannot deletecollection resource "pods" in API group "" in the '
                   f'namespace "{reader}"',
        "reason": "Forbidden", "details": {"kind": "pods"}, "code": 403}


def test_can_i_answers_truly(kubectl: Kubectl, reader: str) -> None:
    ns = reader
    assert kubectl("-n", ns, "auth", "can-i", "list", "pods", *ALICE).stdout == "yes\n"
    for args in (["create", "pods"], ["get", "secrets"], ["list", "pods", "-n", "default"], ["get", "nodes"]):
        result = kubectl("-n", ns, "auth", "can-i", *args, *ALICE, check=False)
        assert (result.returncode, result.stdout) == (1, "no\n"), args
    lines = [line.split() for line in kubectl("-n", ns, "auth", "can-i", "--list", *ALICE).stdout.splitlines()]
    assert ["pods", "[]", "[]", "[get", "list]"] in lines
    assert ["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"] in lines
    assert ["[/api/*]", "[]", "[get]"] in lines
    assert not any(line[0].startswith("secrets") for line in lines)


def test_subject_access_reviews_name_the_binding(api: k8s.ApiClient, reader: str) -> None:
    authz = k8s.AuthorizationV1Api(api)
    review = authz.create_namespaced_local_subject_access_review(reader, k8s.V1LocalSubjectAccessReview(
        spec=k8s.V1SubjectAccessReviewSpec(user="alice", resource_attributes=k8s.V1ResourceAttributes(
            namespace=reader, verb="list", resource="pods"))))
    assert review.status.allowed is True
    assert review.status.reason == (f'RBAC: allowed by RoleBinding "alice-reads/{reader}" of Role "pod-reader" to '
                                    f'User "alice"')
    review = authz.create_subject_access_review(k8s.V1SubjectAccessReview(spec=k8s.V1SubjectAccessReviewSpec(
        user="alice", resource_attributes=k8s.V1ResourceAttributes(namespace=reader, verb="create", resource="pods"))))
    assert (review.status.allowed, review.status.denied) == (False, None)


def test_a_binding_to_a_missing_role_says_so(kubectl: Kubectl, ns: str) -> None:
    kubectl("-n", ns, "create", "rolebinding", "dangling", "--clusterrole=no-such-role", "--user=carol")
    assert forbidden(kubectl, "-n", ns, "get", "pods", "--as", "carol").endswith(
        f'in the namespace "{ns}": RBAC: clusterrole.rbac.authorization.k8s.io "no-such-role" not found')


def test_escalation_is_refused(kubectl: Kubectl, ns: str) -> None:
    kubectl("-n", ns, "create", "role", "rbac-writer", "--verb=create,get,list",
            "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io,pods")
    kubectl("-n", ns, "create", "rolebinding", "alice-writes", "--role=rbac-writer", "--user=alice")
    kubectl("-n", ns, "create", "role", "pods-only", "--verb=get,list", "--resource=pods", *ALICE)
    message = forbidden(kubectl, "-n", ns, "create", "role", "secrets", "--verb=get,list", "--resource=secrets,pods",
                        *ALICE)
    assert ('roles.rbac.authorization.k8s.io "secrets" is forbidden: user "alice" (groups=["dev" '
            '"system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
            '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}') in message
    kubectl("-n", ns, "create", "rolebinding", "bob-pods", "--role=pods-only", "--user=bob", *ALICE)
    message = forbidden(kubectl, "-n", ns, "create", "rolebinding", "bob-admin", "--clusterrole=cluster-admin",
                        "--user=bob", *ALICE)
    assert 'rolebindings.rbac.authorization.k8s.io "bob-admin" is forbidden: user "alice"' in message
    assert "{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}" in message
    # The bind verb lets alice hand out a role she does not hold.
    kubectl("-n", ns, "create", "role", "binder", "--verb=bind", "--resource=clusterroles.rbac.authorization.k8s.io",
            "--resource-name=view")
    kubectl("-n", ns, "create", "rolebinding", "alice-binds", "--role=binder", "--user=alice")
    kubectl("-n", ns, "create", "rolebinding", "bob-views", "--clusterrole=view", "--user=bob", *ALICE)


def test_aggregation_fills_cluster_roles(kubectl: Kubectl, client: httpx.Client, manager: object) -> None:
    def view_rules() -> list[dict[str, object]]:
        return client.get(f"{RBAC}/clusterroles/view").json().get("rules") or []

    wait_for(lambda: any("pods" in r.get("resources", []) for r in view_rules()), what="view aggregated")
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "widget-viewer", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}]}
    assert client.post(f"{RBAC}/clusterroles", json=role).status_code == 201
    try:
        for name in ("view", "edit", "admin"):  # edit aggregates view, admin aggregates edit
            wait_for(lambda name=name: "widgets" in {res for r in client.get(f"{RBAC}/clusterroles/{name}").json().get(
                "rules") or [] for res in r.get("resources", [])}, what=f"{name} to gain widgets")
    finally:
        client.delete(f"{RBAC}/clusterroles/widget-viewer")
    wait_for(lambda: not any("widgets" in r.get("resources", []) for r in view_rules()), what="widgets gone")


def test_the_bootstrap_policy(kubectl: Kubectl, client: httpx.Client) -> None:
    roles = kubectl("get", "clusterroles", "-o", "name").stdout.split()
    for name in ("admin", "cluster-admin", "edit", "view", "system:basic-user", "system:discovery",
                 "system:public-info-viewer", "system:kube-scheduler", "system:kube-controller-manager",
                 "system:node", "system:node-proxier", "system:monitoring", "system:aggregate-to-view",
                 "system:controller:replicaset-controller", "system:controller:clusterrole-aggregation-controller"):
        assert f"clusterrole.rbac.authorization.k8s.io/{name}" in roles
    out = kubectl("get", "clusterrolebinding", "cluster-admin", "-o", "wide").stdout.splitlines()
    assert out[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert out[1].split()[:2] == ["cluster-admin", "ClusterRole/cluster-admin"]
    assert out[1].split()[-1] == "system:masters"
    admin = client.get(f"{RBAC}/clusterroles/cluster-admin").json()
    assert admin["metadata"]["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
    assert admin["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    assert admin["rules"] == [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                              {"verbs": ["*"], "nonResourceURLs": ["*"]}]
    assert kubectl("get", "roles", "-n", "kube-system", "-o", "name").stdout.split()[0] == \
        "role.rbac.authorization.k8s.io/extension-apiserver-authentication-reader"


def test_validation_is_kubes(client: httpx.Client, ns: str) -> None:
    resp = client.post(f"{RBAC}/namespaces/{ns}/roles", json={"metadata": {"name": "bad"}, "rules": [
        {"verbs": [], "apiGroups": [""], "resources": ["pods"]}, {"verbs": ["get"], "nonResourceURLs": ["/x"]}]})
    assert resp.status_code == 422
    assert [(c["field"], c["message"]) for c in resp.json()["details"]["causes"]] == [
        ("rules[0].verbs", "Required value: verbs must contain at least one value"),
        ("rules[1].nonResourceURLs", 'Invalid value: []string{"/x"}: namespaced rules cannot apply to non-resource '
                                     "URLs")]
    resp = client.post(f"{RBAC}/namespaces/{ns}/rolebindings", json={
        "metadata": {"name": "bad"}, "roleRef": {"kind": "Deployment", "name": "x"},
        "subjects": [{"kind": "Robot", "name": "r2"}, {"kind": "User"}]})
    assert resp.status_code == 422
    assert [(c["field"], c["message"]) for c in resp.json()["details"]["causes"]] == [
        ("roleRef.kind", 'Unsupported value: "Deployment": supported values: "Role", "ClusterRole"'),
        ("subjects[0].kind", 'Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"'),
        ("subjects[1].name", "Required value")]
    good = {"metadata": {"name": "ok"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "zed"}]}
    created = client.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=good).json()
    assert created["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert created["subjects"] == [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "zed"}]
    resp = client.patch(f"{RBAC}/namespaces/{ns}/rolebindings/ok", json={"roleRef": {"name": "edit"}},
                        headers=MERGE)
    assert resp.status_code == 422 and resp.json()["details"]["causes"][-1]["message"].endswith("cannot change roleRef")


def test_a_node_reads_only_what_its_pods_use(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    for node in ("rbac-n1", "rbac-n2"):
        client.post("/api/v1/nodes", json={"metadata": {"name": node}})
    for name in ("used", "unused"):
        kubectl("-n", ns, "create", "secret", "generic", name, "--from-literal=k=v")
    pod = {"metadata": {"name": "p1"}, "spec": {"nodeName": "rbac-n1", "containers": [{"name": "c", "image": "i",
           "envFrom": [{"secretRef": {"name": "used"}}]}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=pod).status_code == 201
    pod2 = {"metadata": {"name": "p2"}, "spec": {"nodeName": "rbac-n2", "containers": [{"name": "c", "image": "i"}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=pod2).status_code == 201
    wait_for(lambda: kubectl("-n", ns, "get", "secret", "used", *NODE1, check=False).returncode == 0,
             what="the node graph to link rbac-n1 to its pod's secret")
    assert forbidden(kubectl, "-n", ns, "get", "secret", "unused", *NODE1).endswith(
        "no relationship found between node 'rbac-n1' and this object")
    assert forbidden(kubectl, "-n", ns, "get", "secrets", *NODE1).endswith(
        "can only get individual resources of this type")
    client.delete(f"/api/v1/namespaces/{ns}/pods/p1", params={"gracePeriodSeconds": "0"})
    wait_for(lambda: kubectl("-n", ns, "get", "secret", "used", *NODE1, check=False).returncode != 0,
             what="the edge to go with the pod")
    # NodeRestriction: its own Node and pods only.
    kubectl("label", "node", "rbac-n1", "a=b", "topology.kubernetes.io/zone=z1", *NODE1)
    assert forbidden(kubectl, "label", "node", "rbac-n1", "node-restriction.kubernetes.io/trusted=yes", *NODE1) == (
        'Error from server (Forbidden): nodes "rbac-n1" is forbidden: is not allowed to modify labels: '
        "node-restriction.kubernetes.io/trusted")
    assert forbidden(kubectl, "taint", "node", "rbac-n1", "k=v:NoSchedule", *NODE1).endswith(
        'node "rbac-n1" is not allowed to modify taints')
    assert forbidden(kubectl, "label", "node", "rbac-n2", "a=b", *NODE1) == (
        'Error from server (Forbidden): nodes "rbac-n2" is forbidden: node "rbac-n1" is not allowed to modify node '
        '"rbac-n2"')
    status = {"status": {"phase": "Failed"}}
    resp = client.patch(f"/api/v1/namespaces/{ns}/pods/p2/status", json=status,
                        headers={**MERGE, "Impersonate-User": "system:node:rbac-n1",
                                 "Impersonate-Group": "system:nodes"})
    assert (resp.status_code, resp.json()["message"]) == (403, 'pods "p2" is forbidden: node "rbac-n1" can only '
                                                               "update pod status for pods with spec.nodeName set "
                                                               "to itself")
    assert forbidden(kubectl, "-n", ns, "delete", "pod", "p2", *NODE1).endswith(
        'node "rbac-n1" can only delete pods with spec.nodeName set to itself')
    assert forbidden(kubectl, "-n", "kube-node-lease", "get", "lease", "rbac-n2", *NODE1).endswith(
        "can only access node lease with the same name as the requesting node")


def test_auth_reconcile(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "rbac.yaml"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r", "namespace": ns},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "rb", "namespace": ns}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                                  "kind": "Role", "name": "r"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dave"}]}]}))
    reconciled = "role.rbac.authorization.k8s.io/r reconciled\nrolebinding.rbac.authorization.k8s.io/rb reconciled\n"
    assert kubectl("auth", "reconcile", "-f", str(manifest)).stdout == reconciled
    assert kubectl("-n", ns, "auth", "can-i", "get", "configmaps", "--as", "dave").stdout == "yes\n"
    version = kubectl("-n", ns, "get", "role", "r", "-o", "jsonpath={.metadata.resourceVersion}").stdout
    assert kubectl("auth", "reconcile", "-f", str(manifest)).stdout == reconciled
    assert kubectl("-n", ns, "get", "role", "r", "-o", "jsonpath={.metadata.resourceVersion}").stdout == version


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_other_kubectl_versions(api_url: str, tmp_path: Path, reader: str, version: str) -> None:
    k = Kubectl(kubectl_release(version), api_url, tmp_path)
    assert k("-n", reader, "auth", "can-i", "list", "pods", *ALICE).stdout == "yes\n"
    assert forbidden(k, "-n", reader, "get", "secrets", *ALICE).endswith(
        f'User "alice" cannot list resource "secrets" in API group "" in the namespace "{reader}"')
    assert "pod-reader" in k("-n", reader, "get", "roles").stdout


def test_a_policy_asks_the_authorizer(client: httpx.Client, ns: str) -> None:
    """A ValidatingAdmissionPolicy's ``authorizer`` answers for the requesting user: only those who may read
    secrets in the namespace may create config maps named ``secret-*`` (a made-up rule)."""
    admission = "/apis/admissionregistration.k8s.io/v1"
    name = f"authz-{ns}"
    policy = {"metadata": {"name": name}, "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                                "resources": ["configmaps"]}],
                             "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}},
        "validations": [{"expression": "!object.metadata.name.startsWith('secret-') || authorizer.group('')"
                                       ".resource('secrets').namespace(request.namespace).check('get').allowed()",
                         "message": "may not read secrets"}]}}
    binding = {"metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}
    role = {"metadata": {"name": "cm-writer"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]}
    rb = {"metadata": {"name": "alice-cm"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                        "name": "cm-writer"},
          "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}
    assert client.post(f"{RBAC}/namespaces/{ns}/roles", json=role).status_code == 201
    assert client.post(f"{RBAC}/namespaces/{ns}/rolebindings", json=rb).status_code == 201
    assert client.post(f"{admission}/validatingadmissionpolicies", json=policy).status_code == 201
    assert client.post(f"{admission}/validatingadmissionpolicybindings", json=binding).status_code == 201
    try:
        as_alice = {"Impersonate-User": "alice"}

        def refused() -> httpx.Response | None:
            resp = client.post(f"/api/v1/namespaces/{ns}/configmaps", params={"dryRun": "All"}, headers=as_alice,
                               json={"metadata": {"name": "secret-x"}})
            return resp if resp.status_code == 422 else None

        assert "may not read secrets" in wait_for(refused, timeout=10, what="the policy to refuse").json()["message"]
        assert client.post(f"/api/v1/namespaces/{ns}/configmaps", headers=as_alice,
                           json={"metadata": {"name": "plain"}}).status_code == 201
        assert client.post(f"/api/v1/namespaces/{ns}/configmaps",
                           json={"metadata": {"name": "secret-y"}}).status_code == 201  # system:masters may
    finally:
        client.delete(f"{admission}/validatingadmissionpolicybindings/{name}")
        client.delete(f"{admission}/validatingadmissionpolicies/{name}")


def test_python_client(api: k8s.ApiClient, ns: str) -> None:
    rbac = k8s.RbacAuthorizationV1Api(api)
    assert rbac.read_cluster_role("admin").aggregation_rule.cluster_role_selectors[0].match_labels == {
        "rbac.authorization.k8s.io/aggregate-to-admin": "true"}
    rbac.create_namespaced_role(ns, k8s.V1Role(metadata=k8s.V1ObjectMeta(name="py"), rules=[
        k8s.V1PolicyRule(api_groups=[""], resources=["services"], verbs=["list"])]))
    made = rbac.create_namespaced_role_binding(ns, k8s.V1RoleBinding(
        metadata=k8s.V1ObjectMeta(name="py"), role_ref=k8s.V1RoleRef(api_group="rbac.authorization.k8s.io",
                                                                      kind="Role", name="py"),
        subjects=[k8s.RbacV1Subject(kind="ServiceAccount", name="builder", namespace=ns)]))
    assert made.subjects[0].api_group is None
    review = k8s.AuthorizationV1Api(api).create_subject_access_review(k8s.V1SubjectAccessReview(
        spec=k8s.V1SubjectAccessReviewSpec(user=f"system:serviceaccount:{ns}:builder", resource_attributes=
                                           k8s.V1ResourceAttributes(namespace=ns, verb="list", resource="services"))))
    assert review.status.allowed and review.status.reason.endswith(f'to ServiceAccount "builder/{ns}"')
