"""``kubectl auth can-i`` and ``kubectl auth whoami`` against the real apiserver: the access reviews
(authorization.k8s.io/v1) and SelfSubjectReview (authentication.k8s.io/v1) are virtual create-only resources —
answered by the apiserver's authorizer (Node,RBAC) for the plain port's user (``system:unsecured`` in
``system:masters``) or the impersonated one, listed in discovery and OpenAPI with the verb ``create`` only, never
stored. kubectl sends them as protobuf; the Python client as JSON. RBAC itself: ``test_rbac``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest
from kubernetes import client as k8s

from conftest import Kubectl

AUTHZ = "/apis/authorization.k8s.io/v1"
REVIEWS = ["localsubjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews",
           "subjectaccessreviews"]


def test_can_i_says_yes(kubectl: Kubectl) -> None:
    for args in (["create", "pods"], ["delete", "nodes"], ["get", "pods", "--subresource=log"],
                 ["create", "deployments.apps", "-n", "kube-system"], ["get", "/logs"],
                 ["list", "secrets", "--all-namespaces"], ["impersonate", "users"]):
        result = kubectl("auth", "can-i", *args)
        assert (result.returncode, result.stdout) == (0, "yes\n"), args


def test_can_i_sends_a_self_subject_access_review(kubectl: Kubectl) -> None:
    log = kubectl("auth", "can-i", "get", "pods", "--subresource=log", "-n", "kube-system", "-v=8").stderr
    assert f"POST {kubectl.server}{AUTHZ}/selfsubjectaccessreviews" in log
    assert "Content-Type: application/vnd.kubernetes.protobuf" in log and "201 Created" in log
    assert '\\"subresource\\":\\"log\\"' in log and '\\"namespace\\":\\"kube-system\\"' in log
    assert '\\"allowed\\":true' in log


def test_can_i_list_shows_rules_that_allow_everything(kubectl: Kubectl) -> None:
    out = kubectl("auth", "can-i", "--list", "-n", "kube-system").stdout
    lines = [line.split() for line in out.splitlines()]
    assert lines[:2] == [["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"],
                         ["*.*", "[]", "[]", "[*]"]]
    assert ["[*]", "[]", "[*]"] in lines  # cluster-admin's, through system:masters


def test_whoami(kubectl: Kubectl) -> None:
    out = kubectl("auth", "whoami").stdout
    assert [line.split() for line in out.splitlines()] == [
        ["ATTRIBUTE", "VALUE"], ["Username", "system:unsecured"],
        ["Groups", "[system:masters", "system:authenticated]"]]
    review = json.loads(kubectl("auth", "whoami", "-o", "json").stdout)
    assert review["apiVersion"] == "authentication.k8s.io/v1" and review["kind"] == "SelfSubjectReview"
    assert review["status"] == {"userInfo": {"username": "system:unsecured",
                                             "groups": ["system:masters", "system:authenticated"]}}
    impersonated = json.loads(kubectl("auth", "whoami", "-o", "json", "--as", "alice", "--as-group", "dev").stdout)
    assert impersonated["status"]["userInfo"] == {"username": "alice", "groups": ["dev", "system:authenticated"]}


@pytest.mark.parametrize("version", ["1.33"])
def test_other_kubectl_versions(api_url: str, tmp_path: Path, version: str) -> None:
    binary = f"/usr/lib/google-cloud-sdk/bin/kubectl.{version}"
    if not os.path.exists(binary):
        pytest.skip(f"{binary} not installed")
    k = Kubectl(binary, api_url, tmp_path)
    assert k("auth", "can-i", "create", "pods").stdout == "yes\n"
    assert "system:unsecured" in k("auth", "whoami").stdout


def test_discovery_lists_them_create_only(kubectl: Kubectl, client: httpx.Client) -> None:
    resources = client.get(AUTHZ).json()["resources"]
    assert [(r["name"], r["namespaced"], r["verbs"]) for r in resources] == [
        (name, name == "localsubjectaccessreviews", ["create"]) for name in REVIEWS]
    authn = client.get("/apis/authentication.k8s.io/v1").json()["resources"]
    assert [(r["name"], r["kind"], r["verbs"]) for r in authn] == [
        ("selfsubjectreviews", "SelfSubjectReview", ["create"]), ("tokenreviews", "TokenReview", ["create"])]
    out = kubectl("api-resources", "--api-group=authorization.k8s.io", "-o", "wide").stdout
    assert [line.split()[0] for line in out.splitlines()[1:]] == REVIEWS
    assert all(line.split()[-1] == "create" for line in out.splitlines()[1:])
    v3 = client.get("/openapi/v3").json()["paths"]
    assert {"apis/authorization.k8s.io/v1", "apis/authentication.k8s.io/v1"} <= set(v3)
    paths = client.get(v3["apis/authorization.k8s.io/v1"]["serverRelativeURL"]).json()["paths"]
    assert set(paths[f"{AUTHZ}/selfsubjectaccessreviews"]) == {"parameters", "post"}
    assert f"{AUTHZ}/namespaces/{{namespace}}/localsubjectaccessreviews" in paths
    v2 = client.get("/openapi/v2").json()
    assert "io.k8s.api.authentication.v1.SelfSubjectReview" in v2["definitions"]


def test_python_client(api: k8s.ApiClient, ns: str) -> None:
    authz = k8s.AuthorizationV1Api(api)
    attributes = k8s.V1ResourceAttributes(verb="create", resource="pods", namespace=ns)
    ssar = authz.create_self_subject_access_review(
        k8s.V1SelfSubjectAccessReview(spec=k8s.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes)))
    assert ssar.status.allowed is True and ssar.spec.resource_attributes.namespace == ns
    lsar = authz.create_namespaced_local_subject_access_review(ns, k8s.V1LocalSubjectAccessReview(
        spec=k8s.V1SubjectAccessReviewSpec(user="bob", resource_attributes=attributes)))
    assert lsar.status.allowed is False and lsar.metadata.namespace == ns
    sar = authz.create_subject_access_review(k8s.V1SubjectAccessReview(spec=k8s.V1SubjectAccessReviewSpec(
        groups=["system:authenticated"],
        non_resource_attributes=k8s.V1NonResourceAttributes(path="/healthz", verb="get"))))
    assert sar.status.allowed is True
    assert sar.status.reason == ('RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole '
                                 '"system:discovery" to Group "system:authenticated"')
    rules = authz.create_self_subject_rules_review(
        k8s.V1SelfSubjectRulesReview(spec=k8s.V1SelfSubjectRulesReviewSpec(namespace=ns)))
    assert rules.status.incomplete is False and rules.status.resource_rules[0].verbs == ["*"]
    me = k8s.AuthenticationV1Api(api).create_self_subject_review(k8s.V1SelfSubjectReview())
    assert (me.status.user_info.username, me.status.user_info.groups) == ("system:unsecured",
                                                                          ["system:masters", "system:authenticated"])


def test_bad_reviews_are_422_or_400(api: k8s.ApiClient, client: httpx.Client, ns: str) -> None:
    with pytest.raises(k8s.ApiException) as err:
        k8s.AuthorizationV1Api(api).create_subject_access_review(k8s.V1SubjectAccessReview(
            spec=k8s.V1SubjectAccessReviewSpec(resource_attributes=k8s.V1ResourceAttributes(verb="get"))))
    status = json.loads(err.value.body)
    assert (err.value.status, status["reason"]) == (422, "Invalid")
    assert status["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.user", "message":
                                            'Invalid value: "": at least one of user or group must be specified'}]
    resp = client.post(f"{AUTHZ}/selfsubjectaccessreviews", json={"spec": {}})
    assert resp.status_code == 422 and resp.json()["details"]["causes"][0]["field"] == "spec.resourceAttributes"
    body = {"spec": {"user": "bob", "resourceAttributes": {"namespace": "elsewhere", "verb": "get"}}}
    resp = client.post(f"{AUTHZ}/namespaces/{ns}/localsubjectaccessreviews", json=body)
    assert resp.status_code == 422
    assert resp.json()["details"]["causes"][0]["field"] == "spec.resourceAttributes.namespace"
    resp = client.post(f"{AUTHZ}/namespaces/{ns}/localsubjectaccessreviews",
                       json={**body, "metadata": {"namespace": "elsewhere"}})
    assert (resp.status_code, resp.json()["reason"]) == (400, "BadRequest")
    resp = client.post(f"{AUTHZ}/selfsubjectrulesreviews", json={"spec": {}})
    assert (resp.status_code, resp.json()["message"]) == (400, "no namespace on request")
    resp = client.post("/apis/authentication.k8s.io/v1/selfsubjectreviews", json={},
                       headers={"Impersonate-Group": "dev"})
    assert (resp.status_code, resp.json()["reason"]) == (500, "InternalError")


def test_get_is_not_allowed_and_nothing_is_stored(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    for path in [f"{AUTHZ}/{r}" for r in REVIEWS if r != "localsubjectaccessreviews"] + [
            f"{AUTHZ}/namespaces/{ns}/localsubjectaccessreviews", "/apis/authentication.k8s.io/v1/selfsubjectreviews"]:
        for resp in (client.get(path), client.get(path, params={"watch": "true"}), client.delete(path)):
            assert (resp.status_code, resp.json()["reason"]) == (405, "MethodNotAllowed"), path
        assert client.get(f"{path}/anything").status_code == 404
    result = kubectl("get", "selfsubjectaccessreviews", check=False)
    assert result.returncode == 1 and "Error from server (MethodNotAllowed)" in result.stderr
