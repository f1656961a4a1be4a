"""ValidatingAdmissionPolicy and its bindings against the real apiserver: CEL validations refusing Deployments
with too many replicas (a fixed limit, then one read from a ConfigMap named by the binding's paramRef), Warn
bindings that only warn, and the policies' own validation — as kubectl and the Python client see it. Every policy
matches only the test's namespace, so tests sharing the apiserver never meet it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s

from conftest import Kubectl
from support.wait import wait_for

ADMISSION = "/apis/admissionregistration.k8s.io/v1"


def deployment(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}}


def policy(name: str, ns: str, validations: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}],
                             "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}},
        "validations": validations, **spec}}


def binding(name: str, policy_name: str, actions: list[str], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"policyName": policy_name, "validationActions": actions, **spec}}


@pytest.fixture()
def made(client: httpx.Client) -> Iterator[list[str]]:
    """Paths of the policies and bindings a test created, deleted afterwards."""
    paths: list[str] = []
    yield paths
    for path in reversed(paths):
        client.delete(path)


def create(client: httpx.Client, made: list[str], resource: str, body: dict[str, Any]) -> dict[str, Any]:
    resp = client.post(f"{ADMISSION}/{resource}", json=body)
    assert resp.status_code == 201, resp.text
    made.append(f"{ADMISSION}/{resource}/{body['metadata']['name']}")
    return resp.json()  # type: ignore[no-any-return]


def create_deployment(client: httpx.Client, ns: str, body: dict[str, Any], dry_run: bool = False) -> httpx.Response:
    return client.post(f"/apis/apps/v1/namespaces/{ns}/deployments", json=body,
                       params={"dryRun": "All"} if dry_run else None)


def until_refused(client: httpx.Client, ns: str, body: dict[str, Any]) -> httpx.Response:
    """Dry-run creates until the policy refuses ``body`` (its binding reached the watch cache)."""
    return wait_for(lambda: (r := create_deployment(client, ns, body, dry_run=True)).status_code >= 400 and r,
                    timeout=10, what="the policy to take effect")


def test_policy_refuses_too_many_replicas(client: httpx.Client, ns: str, made: list[str], kubectl: Kubectl) -> None:
    name = f"max-replicas-{uuid.uuid4().hex[:6]}"
    created = create(client, made, "validatingadmissionpolicies",
                     policy(name, ns, [{"expression": "object.spec.replicas <= 5"}]))
    assert created["spec"]["failurePolicy"] == "Fail"  # defaulted
    assert created["spec"]["matchConstraints"]["matchPolicy"] == "Equivalent"
    create(client, made, "validatingadmissionpolicybindings", binding(name, name, ["Deny"]))
    resp = until_refused(client, ns, deployment("web", 10))
    status = resp.json()
    message = (f"ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: failed expression: "
               f"object.spec.replicas <= 5")
    assert resp.status_code == 422 and status["reason"] == "Invalid"
    assert status["message"] == f'deployments.apps "web" is forbidden: {message}'
    assert status["details"] == {"name": "web", "group": "apps", "kind": "deployments",
                                 "causes": [{"message": message}]}
    assert create_deployment(client, ns, deployment("small", 3)).status_code == 201

    result = kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(deployment("big", 7)), check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == f'The deployments "big" is invalid: : {message}'
    result = kubectl("create", "deployment", "big", "-n", ns, "--image=busybox", "--replicas=7", check=False)
    assert result.stderr.strip() == \
        f'error: failed to create deployment: deployments.apps "big" is forbidden: {message}'
    # An update past the limit is refused too; scaling within it is not.
    resp = client.patch(f"/apis/apps/v1/namespaces/{ns}/deployments/small", json={"spec": {"replicas": 6}},
                        headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 422 and message in resp.json()["message"]


def test_policy_with_a_configmap_param(client: httpx.Client, ns: str, made: list[str], kubectl: Kubectl) -> None:
    name = f"param-replicas-{uuid.uuid4().hex[:6]}"
    create(client, made, "validatingadmissionpolicies", policy(
        name, ns, [{"expression": "object.spec.replicas <= int(params.data.maxReplicas)",
                    "messageExpression": "'replicas ' + string(object.spec.replicas) + ' is more than ' + "
                                         "params.data.maxReplicas",
                    "reason": "Forbidden"}],
        paramKind={"apiVersion": "v1", "kind": "ConfigMap"}))
    create(client, made, "validatingadmissionpolicybindings", binding(
        name, name, ["Deny"], paramRef={"name": "limits", "namespace": ns, "parameterNotFoundAction": "Deny"}))
    # No ConfigMap yet: the binding cannot be configured, and Fail refuses.
    resp = until_refused(client, ns, deployment("web", 2))
    assert resp.json()["message"].endswith(
        f"ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: failed to configure binding: "
        f"no params found for policy binding with `Deny` parameterNotFoundAction")
    assert client.post(f"/api/v1/namespaces/{ns}/configmaps",
                       json={"metadata": {"name": "limits"}, "data": {"maxReplicas": "3"}}).status_code == 201
    wait_for(lambda: create_deployment(client, ns, deployment("web", 2), dry_run=True).status_code == 201,
             timeout=10, what="the ConfigMap to reach the cache")
    resp = create_deployment(client, ns, deployment("web", 4))
    assert resp.status_code == 403 and resp.json()["reason"] == "Forbidden"
    assert resp.json()["message"] == (f"deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy '{name}' "
                                      f"with binding '{name}' denied request: replicas 4 is more than 3")
    result = kubectl("create", "deployment", "web", "-n", ns, "--image=busybox", "--replicas=5", check=False)
    assert result.returncode == 1
    assert "denied request: replicas 5 is more than 3" in result.stderr


def test_warn_action_only_warns(client: httpx.Client, ns: str, made: list[str], kubectl: Kubectl) -> None:
    name = f"warn-replicas-{uuid.uuid4().hex[:6]}"
    create(client, made, "validatingadmissionpolicies",
           policy(name, ns, [{"expression": "object.spec.replicas <= 2", "message": "more than 2 replicas"}]))
    create(client, made, "validatingadmissionpolicybindings", binding(name, name, ["Warn", "Audit"]))
    expected = f"Validation failed for ValidatingAdmissionPolicy '{name}' with binding '{name}': more than 2 replicas"
    wait_for(lambda: expected in create_deployment(client, ns, deployment("w", 3), dry_run=True)
             .headers.get("warning", ""), timeout=10, what="the Warn binding to take effect")
    result = kubectl("create", "deployment", "web", "-n", ns, "--image=busybox", "--replicas=4")
    assert f"Warning: {expected}" in result.stderr
    assert "deployment.apps/web created" in result.stdout


def test_policy_validation(client: httpx.Client, ns: str) -> None:
    bad = policy("bad-policy", ns, [{"expression": "object.spec.replicas <", "reason": "Teapot"},
                                    {"expression": "params.max > 1"}])
    resp = client.post(f"{ADMISSION}/validatingadmissionpolicies", json=bad)
    assert resp.status_code == 422
    causes = {c["field"]: c["message"] for c in resp.json()["details"]["causes"]}
    assert causes["spec.validations[0].expression"].startswith(
        'Invalid value: "object.spec.replicas <": compilation failed: ERROR: <input>:1:23: Syntax error:')
    assert causes["spec.validations[0].reason"] == ('Unsupported value: "Teapot": supported values: "Forbidden", '
                                                    '"Invalid", "RequestEntityTooLarge"')
    assert causes["spec.validations[1].expression"] == (
        "Invalid value: \"params.max > 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to "
        "'params' (in container '')")
    resp = client.post(f"{ADMISSION}/validatingadmissionpolicybindings", json=binding(
        "bad-binding", "p", ["Deny", "Warn"], paramRef={"name": "x", "selector": {}}))
    assert resp.status_code == 422
    causes = {c["field"]: c["message"] for c in resp.json()["details"]["causes"]}
    assert causes == {
        "spec.paramRef.name": "Forbidden: name and selector are mutually exclusive",
        "spec.paramRef.selector": "Forbidden: name and selector are mutually exclusive",
        "spec.paramRef.parameterNotFoundAction": "Required value",
        "spec.validationActions": 'Invalid value: []string{"Deny", "Warn"}: must not contain both Deny and Warn '
                                  '(repeating the same validation failure information in the API response and '
                                  'headers serves no purpose)'}


def test_python_client_and_tables(api: Any, ns: str, made: list[str], kubectl: Kubectl) -> None:
    v1 = k8s.AdmissionregistrationV1Api(api)
    name = f"py-policy-{uuid.uuid4().hex[:6]}"
    body = k8s.V1ValidatingAdmissionPolicy(
        metadata=k8s.V1ObjectMeta(name=name),
        spec=k8s.V1ValidatingAdmissionPolicySpec(
            match_constraints=k8s.V1MatchResources(resource_rules=[k8s.V1NamedRuleWithOperations(
                api_groups=["apps"], api_versions=["v1"], operations=["CREATE"], resources=["deployments"])]),
            validations=[k8s.V1Validation(expression="object.spec.replicas < 100")]))
    v1.create_validating_admission_policy(body)
    made.append(f"{ADMISSION}/validatingadmissionpolicies/{name}")
    v1.create_validating_admission_policy_binding(k8s.V1ValidatingAdmissionPolicyBinding(
        metadata=k8s.V1ObjectMeta(name=name), spec=k8s.V1ValidatingAdmissionPolicyBindingSpec(
            policy_name=name, validation_actions=["Audit"])))
    made.append(f"{ADMISSION}/validatingadmissionpolicybindings/{name}")
    read = v1.read_validating_admission_policy(name)
    assert read.spec.failure_policy == "Fail" and read.spec.validations[0].expression == "object.spec.replicas < 100"
    assert [b.spec.policy_name for b in v1.list_validating_admission_policy_binding().items
            if b.metadata.name == name] == [name]
    out = kubectl("get", "validatingadmissionpolicies", name).stdout.splitlines()
    assert out[0].split() == ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]
    assert out[1].split()[:3] == [name, "1", "<unset>"]
    out = kubectl("get", "validatingadmissionpolicybindings", name).stdout.splitlines()
    assert out[0].split() == ["NAME", "POLICYNAME", "PARAMREF", "AGE"] and out[1].split()[:3] == [name, name, "<unset>"]


def test_policy_on_the_scale_subresource(client: httpx.Client, ns: str, made: list[str], kubectl: Kubectl) -> None:
    name = f"scale-limit-{uuid.uuid4().hex[:6]}"
    body = policy(name, ns, [{"expression": "object.spec.replicas <= 5", "message": "at most 5 replicas"}])
    body["spec"]["matchConstraints"]["resourceRules"][0].update(operations=["UPDATE"],
                                                                resources=["deployments/scale"])
    create(client, made, "validatingadmissionpolicies", body)
    create(client, made, "validatingadmissionpolicybindings", binding(name, name, ["Deny"]))
    assert create_deployment(client, ns, deployment("web", 10)).status_code == 201  # creates are not scale writes
    scale = f"/apis/apps/v1/namespaces/{ns}/deployments/web/scale"

    def refused() -> httpx.Response | None:
        resp = client.patch(scale, json={"spec": {"replicas": 8}},
                            headers={"Content-Type": "application/merge-patch+json"})
        return resp if resp.status_code == 422 else None

    resp = wait_for(refused, timeout=10, what="the scale policy to take effect")
    assert resp.json()["message"].endswith(f"with binding '{name}' denied request: at most 5 replicas")
    result = kubectl("scale", "deployment", "web", "-n", ns, "--replicas=9", check=False)
    assert result.returncode == 1 and "denied request: at most 5 replicas" in result.stderr
    kubectl("scale", "deployment", "web", "-n", ns, "--replicas=4")
    assert client.get(scale).json()["spec"]["replicas"] == 4


def test_the_documentation_example(client: httpx.Client, ns: str, made: list[str], kubectl: Kubectl) -> None:
    """kubernetes.io's ValidatingAdmissionPolicy example: the binding selects namespaces (``environment: test``)
    through matchResources without resource rules, and kubectl apply prints kube's message."""
    suffix = uuid.uuid4().hex[:6]
    name, binding_name = f"demo-policy-{suffix}.example.com", f"demo-binding-{suffix}.example.com"
    body = policy(name, ns, [{"expression": "object.spec.replicas <= 5"}])
    del body["spec"]["matchConstraints"]["namespaceSelector"]
    create(client, made, "validatingadmissionpolicies", body)
    create(client, made, "validatingadmissionpolicybindings", binding(
        binding_name, name, ["Deny"],
        matchResources={"namespaceSelector": {"matchLabels": {"environment": f"test-{suffix}"}}}))
    kubectl("label", "namespace", ns, f"environment=test-{suffix}")
    until_refused(client, ns, deployment("web", 6))
    result = kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(deployment("web", 6)), check=False)
    assert result.stderr.strip() == (f"The deployments \"web\" is invalid: : ValidatingAdmissionPolicy '{name}' with "
                                     f"binding '{binding_name}' denied request: failed expression: "
                                     f"object.spec.replicas <= 5")


def test_policy_status_reports_type_checking(client: httpx.Client, ns: str, made: list[str]) -> None:
    name = f"typo-{uuid.uuid4().hex[:6]}"
    create(client, made, "validatingadmissionpolicies",
           policy(name, ns, [{"expression": "object.spec.replicas <= 5"}, {"expression": "object.spec.replica < 9"}]))
    path = f"{ADMISSION}/validatingadmissionpolicies/{name}"
    status = wait_for(lambda: (s := client.get(path).json().get("status") or {}).get("observedGeneration") == 1
                      and s, timeout=10, what="the policy's status")
    assert status["typeChecking"] == {"expressionWarnings": [{
        "fieldRef": "spec.validations[1].expression",
        "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'\n"
                   " | object.spec.replica < 9\n | ...........^"}]}
    fixed = client.get(path).json()
    fixed["spec"]["validations"] = [{"expression": "object.spec.replicas <= 5"}]
    assert client.put(path, json=fixed).status_code == 200
    status = wait_for(lambda: (s := client.get(path).json()["status"]).get("observedGeneration") == 2 and s,
                      timeout=10, what="the policy's status for generation 2")
    assert status["typeChecking"] == {}
