"""Admission webhooks against the real apiserver: a test's own HTTPS webhook (a CA and certificate made here),
registered by ``url`` and by ``service`` (a selector-less Service with hand-written Endpoints pointing at it),
mutating pods with a JSONPatch and refusing them, as kubectl and the Python client see it. Every configuration is
limited to the test's namespace by a namespaceSelector, so tests sharing the apiserver never meet them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s

from conftest import Kubectl, api_only
from support.builders import make_pod
from support.wait import wait_for
from support.webhook import CertificateAuthority, WebhookServer, allow, deny, json_patch

ADMISSION = "/apis/admissionregistration.k8s.io/v1"


def answer(path: str, review: dict[str, Any]) -> dict[str, Any]:
    """The test webhook: /mutate labels pods ``admitted-by=webhook``; /validate refuses pods labelled deny=yes."""
    request = review["request"]
    uid = request["uid"]
    obj = request.get("object") or {}
    labels = (obj.get("metadata") or {}).get("labels")
    if path == "/mutate":
        if labels and labels.get("admitted-by") == "webhook":
            return allow(uid)
        ops = [] if labels else [{"op": "add", "path": "/metadata/labels", "value": {}}]
        ops.append({"op": "add", "path": "/metadata/labels/admitted-by", "value": "webhook"})
        return json_patch(uid, ops, warnings=["labelled by the test webhook"])
    if path == "/validate" and (labels or {}).get("deny") == "yes":
        return deny(uid, "pods labelled deny=yes are not allowed")
    if path == "/deny-all":
        return deny(uid, f"no {request['resource']['resource']}/{request.get('subResource', '')} today")
    return allow(uid)


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority()


@pytest.fixture()
def server(ca: CertificateAuthority, ns: str) -> Iterator[WebhookServer]:
    with WebhookServer(answer, ca, [f"hooks.{ns}.svc"]) as s:
        yield s


def webhook(name: str, client_config: dict[str, Any], ns: str, **extra: Any) -> dict[str, Any]:
    hook = {"name": name, "clientConfig": client_config, "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["pods"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}
    hook.update(extra)
    return hook


def configure(client: httpx.Client, kind: str, webhooks: list[dict[str, Any]]) -> str:
    """Create a webhook configuration of ``kind`` (``mutating`` or ``validating``); its name."""
    name = f"test-{uuid.uuid4().hex[:8]}"
    resp = client.post(f"{ADMISSION}/{kind}webhookconfigurations",
                       json={"metadata": {"name": name}, "webhooks": webhooks})
    assert resp.status_code == 201, resp.text
    return name


@pytest.fixture()
def configs(client: httpx.Client) -> Iterator[list[tuple[str, str]]]:
    """(kind, name) of the configurations a test made: deleted afterwards, so no test's webhook outlives it."""
    made: list[tuple[str, str]] = []
    yield made
    for kind, name in made:
        client.delete(f"{ADMISSION}/{kind}webhookconfigurations/{name}")


def register(client: httpx.Client, configs: list[tuple[str, str]], kind: str,
             webhooks: list[dict[str, Any]]) -> str:
    name = configure(client, kind, webhooks)
    configs.append((kind, name))
    return name


def create_pod(client: httpx.Client, ns: str, pod: dict[str, Any], dry_run: bool = False) -> httpx.Response:
    return client.post(f"/api/v1/namespaces/{ns}/pods", params={"dryRun": "All"} if dry_run else None, json=pod)


def until_labelled(client: httpx.Client, ns: str) -> dict[str, Any]:
    """Dry-run pod creates until the mutating webhook's label shows (the configuration reached the cache)."""
    def labelled() -> dict[str, Any] | None:
        resp = create_pod(client, ns, make_pod("probe").build(), dry_run=True)
        assert resp.status_code == 201, resp.text
        body: dict[str, Any] = resp.json()
        return body if (body["metadata"].get("labels") or {}).get("admitted-by") == "webhook" else None
    return wait_for(labelled, timeout=10, what="the mutating webhook to take effect")


def test_mutating_webhook_by_url_labels_pods(client: httpx.Client, ns: str, server: WebhookServer,
                                             ca: CertificateAuthority, configs: list[tuple[str, str]]) -> None:
    register(client, configs, "mutating", [webhook("label.kubelab.io", {"url": server.url("/mutate"),
                                                                         "caBundle": ca.bundle}, ns)])
    until_labelled(client, ns)
    resp = create_pod(client, ns, make_pod("web").label(app="web").build())
    assert resp.status_code == 201, resp.text
    assert resp.json()["metadata"]["labels"] == {"app": "web", "admitted-by": "webhook"}
    assert 'labelled by the test webhook' in resp.headers.get("warning", "")
    stored = client.get(f"/api/v1/namespaces/{ns}/pods/web").json()
    assert stored["metadata"]["labels"]["admitted-by"] == "webhook"
    review = [r for r in server.received("/mutate") if (r["request"].get("name") == "web")][-1]
    request = review["request"]
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    assert request["operation"] == "CREATE" and request["namespace"] == ns and request["dryRun"] is False
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["requestKind"] == request["kind"] and request["requestResource"] == request["resource"]
    assert request["userInfo"]["username"] == "system:unsecured"
    assert request["options"]["kind"] == "CreateOptions" and request["oldObject"] is None
    assert request["object"]["metadata"]["labels"] == {"app": "web"}

    # An update is sent with the stored object as oldObject (the label is already there: no patch).
    resp = client.patch(f"/api/v1/namespaces/{ns}/pods/web", json={"metadata": {"annotations": {"a": "b"}}},
                        headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 200, resp.text
    update = [r for r in server.received("/mutate") if r["request"]["operation"] == "UPDATE"][-1]["request"]
    assert update["oldObject"]["metadata"]["labels"]["admitted-by"] == "webhook"
    assert update["object"]["metadata"]["annotations"] == {"a": "b"}
    assert update["options"]["kind"] == "PatchOptions"


def test_validating_webhook_refuses_pods(client: httpx.Client, ns: str, server: WebhookServer,
                                         ca: CertificateAuthority, configs: list[tuple[str, str]],
                                         kubectl: Kubectl) -> None:
    register(client, configs, "validating", [webhook("deny.kubelab.io", {"url": server.url("/validate"),
                                                                          "caBundle": ca.bundle}, ns)])
    denied = make_pod("bad").label(deny="yes").build()
    wait_for(lambda: create_pod(client, ns, denied, dry_run=True).status_code == 403, timeout=10,
             what="the validating webhook to take effect")
    resp = create_pod(client, ns, denied)
    assert resp.status_code == 403
    status = resp.json()
    assert status["message"] == ('admission webhook "deny.kubelab.io" denied the request: pods labelled deny=yes '
                                 'are not allowed')
    assert "reason" not in status and status["code"] == 403
    assert client.get(f"/api/v1/namespaces/{ns}/pods/bad").status_code == 404
    assert create_pod(client, ns, make_pod("good").build()).status_code == 201

    result = kubectl("run", "bad2", "-n", ns, "--image=busybox", "--labels=deny=yes", check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == ('Error from server: admission webhook "deny.kubelab.io" denied the request: '
                                     'pods labelled deny=yes are not allowed')


def test_webhook_by_service_through_endpoints(client: httpx.Client, ns: str, server: WebhookServer,
                                              ca: CertificateAuthority, configs: list[tuple[str, str]],
                                              kubectl: Kubectl) -> None:
    service = {"metadata": {"name": "hooks"}, "spec": {"ports": [{"name": "https", "port": 443,
                                                                  "targetPort": 9443}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/services", json=service).status_code == 201
    endpoints = {"metadata": {"name": "hooks"},
                 "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": server.port}]}]}
    assert client.post(f"/api/v1/namespaces/{ns}/endpoints", json=endpoints).status_code == 201
    by_service = {"service": {"namespace": ns, "name": "hooks", "path": "/mutate"}, "caBundle": ca.bundle}
    register(client, configs, "mutating", [webhook("svc.label.kubelab.io", by_service, ns)])
    stored = client.get(f"{ADMISSION}/mutatingwebhookconfigurations/{configs[-1][1]}").json()
    assert stored["webhooks"][0]["clientConfig"]["service"]["port"] == 443  # defaulted
    until_labelled(client, ns)
    kubectl("run", "viasvc", "-n", ns, "--image=busybox")
    labels = client.get(f"/api/v1/namespaces/{ns}/pods/viasvc").json()["metadata"]["labels"]
    assert labels == {"run": "viasvc", "admitted-by": "webhook"}


def test_failure_policy_with_a_webhook_that_is_down(client: httpx.Client, ns: str, server: WebhookServer,
                                                    ca: CertificateAuthority,
                                                    configs: list[tuple[str, str]]) -> None:
    from kubelab.etcd import free_port

    down = f"https://127.0.0.1:{free_port()}/down"
    # Ignore: the unreachable webhook is skipped; the one after it still labels.
    register(client, configs, "mutating", [
        webhook("down.kubelab.io", {"url": down, "caBundle": ca.bundle}, ns, failurePolicy="Ignore",
                timeoutSeconds=2),
        webhook("label.kubelab.io", {"url": server.url("/mutate"), "caBundle": ca.bundle}, ns)])
    until_labelled(client, ns)
    # Fail: the request is refused with kube's message.
    register(client, configs, "validating", [
        webhook("down.kubelab.io", {"url": down, "caBundle": ca.bundle}, ns, timeoutSeconds=2)])
    resp = wait_for(lambda: (r := create_pod(client, ns, make_pod("x").build())).status_code == 500 and r,
                    timeout=10, what="the failing webhook to take effect")
    assert resp.json()["reason"] == "InternalError"
    assert resp.json()["message"] == (f'Internal error occurred: failed calling webhook "down.kubelab.io": failed to '
                                      f'call webhook: Post "{down}?timeout=2s": dial tcp {down[8:].split("/")[0]}: '
                                      f'connect: connection refused')


def test_untrusted_certificate_is_a_failed_call(client: httpx.Client, ns: str, server: WebhookServer,
                                                configs: list[tuple[str, str]]) -> None:
    other = CertificateAuthority()
    register(client, configs, "validating", [webhook("tls.kubelab.io", {"url": server.url("/validate"),
                                                                         "caBundle": other.bundle}, ns)])
    resp = wait_for(lambda: (r := create_pod(client, ns, make_pod("x").build())).status_code == 500 and r,
                    timeout=10, what="the webhook to take effect")
    assert "x509: certificate signed by unknown authority" in resp.json()["message"]
    assert not server.received("/validate")


def test_dry_run_is_sent_to_side_effect_free_webhooks(client: httpx.Client, ns: str, server: WebhookServer,
                                                      ca: CertificateAuthority,
                                                      configs: list[tuple[str, str]]) -> None:
    register(client, configs, "mutating", [webhook("label.kubelab.io", {"url": server.url("/mutate"),
                                                                         "caBundle": ca.bundle}, ns,
                                                   sideEffects="NoneOnDryRun")])
    body = until_labelled(client, ns)
    assert body["metadata"]["labels"]["admitted-by"] == "webhook"
    assert client.get(f"/api/v1/namespaces/{ns}/pods/probe").status_code == 404  # dry run: nothing stored
    last = server.received("/mutate")[-1]["request"]
    assert last["dryRun"] is True and last["options"]["dryRun"] == ["All"]
    # v1 stores only webhooks without side effects (or none on dry run): the others are refused.
    resp = client.post(f"{ADMISSION}/validatingwebhookconfigurations", json={
        "metadata": {"name": f"t-{uuid.uuid4().hex[:6]}"},
        "webhooks": [webhook("some.kubelab.io", {"url": server.url("/validate")}, ns, sideEffects="Some")]})
    assert resp.status_code == 422
    assert ('webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"'
            in resp.json()["message"])


def test_configuration_validation(client: httpx.Client, ns: str) -> None:
    bad = {"metadata": {"name": "bad"}, "webhooks": [
        {"name": "short", "clientConfig": {"url": "http://example.com/x?y=1"}, "admissionReviewVersions": [],
         "timeoutSeconds": 31, "sideEffects": "None",
         "rules": [{"operations": ["GET"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]},
        {"name": "dup.kubelab.io", "clientConfig": {}, "admissionReviewVersions": ["v1"], "sideEffects": "None"},
        {"name": "dup.kubelab.io", "clientConfig": {"url": "https://a.b"}, "admissionReviewVersions": ["v1"],
         "sideEffects": "None"}]}
    resp = client.post(f"{ADMISSION}/validatingwebhookconfigurations", json=bad)
    assert resp.status_code == 422
    causes = {(c["field"], c["message"]) for c in resp.json()["details"]["causes"]}
    assert causes == {
        ("webhooks[0].name", 'Invalid value: "short": should be a domain with at least three segments separated by '
                             'dots'),
        ("webhooks[0].rules[0].operations[0]", 'Unsupported value: "GET": supported values: "*", "CONNECT", '
                                               '"CREATE", "DELETE", "UPDATE"'),
        ("webhooks[0].timeoutSeconds", "Invalid value: 31: the timeout value must be between 1 and 30 seconds"),
        ("webhooks[0].clientConfig.url", 'Invalid value: "http": \'https\' is the only allowed URL scheme; desired '
                                         'format: https://host[/path]'),
        ("webhooks[0].clientConfig.url", 'Invalid value: "y=1": query parameters are not permitted in the URL'),
        ("webhooks[0].admissionReviewVersions", "Required value: must specify one of v1, v1beta1"),
        ("webhooks[1].clientConfig", "Required value: exactly one of url or service is required"),
        ("webhooks[2].name", 'Duplicate value: "dup.kubelab.io"'),
    }


def test_python_client_and_kubectl_tables(api: Any, ns: str, kubectl: Kubectl, client: httpx.Client,
                                          configs: list[tuple[str, str]]) -> None:
    v1 = k8s.AdmissionregistrationV1Api(api)
    name = f"py-{uuid.uuid4().hex[:6]}"
    body = k8s.V1ValidatingWebhookConfiguration(metadata=k8s.V1ObjectMeta(name=name), webhooks=[
        k8s.V1ValidatingWebhook(name="py.kubelab.io", side_effects="None", admission_review_versions=["v1"],
                                client_config=k8s.AdmissionregistrationV1WebhookClientConfig(
                                    url="https://127.0.0.1:1/x"),
                                namespace_selector=k8s.V1LabelSelector(
                                    match_labels={"kubernetes.io/metadata.name": ns}),
                                rules=[k8s.V1RuleWithOperations(operations=["DELETE"], api_groups=["apps"],
                                                                api_versions=["v1"], resources=["deployments"])])])
    created = v1.create_validating_webhook_configuration(body)
    configs.append(("validating", name))
    hook = created.webhooks[0]
    assert (hook.failure_policy, hook.match_policy, hook.timeout_seconds) == ("Fail", "Equivalent", 10)
    assert hook.rules[0].scope == "*"
    assert name in [c.metadata.name for c in v1.list_validating_webhook_configuration().items]
    out = kubectl("get", "validatingwebhookconfigurations", name).stdout.split("\n")
    assert out[0].split() == ["NAME", "WEBHOOKS", "AGE"] and out[1].split()[:2] == [name, "1"]
    names = kubectl("api-resources", "--api-group=admissionregistration.k8s.io", "--no-headers").stdout
    assert "mutatingwebhookconfigurations" in names and "validatingwebhookconfigurations" in names


def test_match_conditions_decide_last(client: httpx.Client, ns: str, server: WebhookServer,
                                      ca: CertificateAuthority, configs: list[tuple[str, str]]) -> None:
    conditions = [{"name": "not-skipped", "expression": "object.metadata.name != 'skip-me'"},
                  {"name": "creates", "expression": "request.operation == 'CREATE'"}]
    register(client, configs, "mutating", [webhook("label.kubelab.io", {"url": server.url("/mutate"),
                                                                         "caBundle": ca.bundle}, ns,
                                                   matchConditions=conditions)])
    until_labelled(client, ns)
    skipped = create_pod(client, ns, make_pod("skip-me").build())
    assert skipped.status_code == 201 and "admitted-by" not in (skipped.json()["metadata"].get("labels") or {})
    assert not [r for r in server.received("/mutate") if r["request"].get("name") == "skip-me"]
    resp = client.post(f"{ADMISSION}/mutatingwebhookconfigurations", json={
        "metadata": {"name": f"t-{uuid.uuid4().hex[:6]}"},
        "webhooks": [webhook("bad.kubelab.io", {"url": server.url("/mutate")}, ns,
                             matchConditions=[{"name": "typo", "expression": "objekt.metadata.name == 'x'"}])]})
    assert resp.status_code == 422
    assert resp.json()["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "webhooks[0].matchConditions[0].expression",
        "message": "Invalid value: \"objekt.metadata.name == 'x'\": compilation failed: ERROR: <input>:1:1: "
                   "undeclared reference to 'objekt' (in container '')"}]


def reinvoking_answer(path: str, review: dict[str, Any]) -> dict[str, Any]:
    """/first labels ``first`` with whether it saw /second's label; /second adds ``second=yes``."""
    request = review["request"]
    labels = (request["object"].get("metadata") or {}).get("labels") or {}
    ops: list[dict[str, Any]] = [] if labels else [{"op": "add", "path": "/metadata/labels", "value": {}}]
    if path == "/first":
        seen = "saw-second" if "second" in labels else "alone"
        if labels.get("first") == seen:
            return allow(request["uid"])
        ops.append({"op": "add", "path": "/metadata/labels/first", "value": seen})
    elif "second" not in labels:
        ops.append({"op": "add", "path": "/metadata/labels/second", "value": "yes"})
    else:
        return allow(request["uid"])
    return json_patch(request["uid"], ops)


def test_reinvocation_if_needed(client: httpx.Client, ns: str, ca: CertificateAuthority,
                                configs: list[tuple[str, str]]) -> None:
    with WebhookServer(reinvoking_answer, ca, []) as hooks:
        register(client, configs, "mutating", [
            webhook("first.kubelab.io", {"url": hooks.url("/first"), "caBundle": ca.bundle}, ns,
                    reinvocationPolicy="IfNeeded"),
            webhook("second.kubelab.io", {"url": hooks.url("/second"), "caBundle": ca.bundle}, ns)])
        labels = wait_for(lambda: (create_pod(client, ns, make_pod("p").build(), dry_run=True).json()["metadata"]
                                   .get("labels")), timeout=10, what="the webhooks to take effect")
        # /first ran again after /second changed the pod, and saw its label.
        assert labels == {"first": "saw-second", "second": "yes"}
        assert [p for p, _ in hooks.reviews][-3:] == ["/first?timeout=10s", "/second?timeout=10s",
                                                      "/first?timeout=10s"]


def test_equivalent_match_policy_sends_the_matched_version(client: httpx.Client, ns: str, server: WebhookServer,
                                                           ca: CertificateAuthority,
                                                           configs: list[tuple[str, str]]) -> None:
    rules = [{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v1"],
              "resources": ["horizontalpodautoscalers"]}]
    register(client, configs, "mutating", [webhook("hpa.kubelab.io", {"url": server.url("/mutate"),
                                                                       "caBundle": ca.bundle}, ns, rules=rules)])
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 1, "maxReplicas": 3,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                        "type": "Utilization", "averageUtilization": 50}}}]}}
    url = f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"
    created = wait_for(lambda: (r := client.post(url, json=hpa, params={"dryRun": "All"}).json())["metadata"]
                       .get("labels") and r, timeout=10, what="the webhook to take effect")
    assert created["metadata"]["labels"] == {"admitted-by": "webhook"} and created["apiVersion"] == "autoscaling/v2"
    request = server.received("/mutate")[-1]["request"]
    assert request["kind"] == {"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"}
    assert request["requestKind"] == {"group": "autoscaling", "version": "v2", "kind": "HorizontalPodAutoscaler"}
    assert request["resource"]["version"] == "v1" and request["requestResource"]["version"] == "v2"
    assert request["object"]["apiVersion"] == "autoscaling/v1"
    assert request["object"]["spec"]["targetCPUUtilizationPercentage"] == 50


def connect_answer(path: str, review: dict[str, Any]) -> dict[str, Any]:
    request = review["request"]
    command = (request.get("object") or {}).get("command") or []
    if request["operation"] == "CONNECT" and "rm" in command:
        return deny(request["uid"], "no rm in exec")
    return allow(request["uid"])


def test_exec_is_admitted_as_connect(client: httpx.Client, ns: str, ca: CertificateAuthority,
                                     configs: list[tuple[str, str]], kubectl: Kubectl) -> None:
    rules = [{"operations": ["CONNECT"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/exec"]}]
    with WebhookServer(connect_answer, ca, []) as hooks:
        register(client, configs, "validating", [webhook("exec.kubelab.io", {"url": hooks.url("/connect"),
                                                                              "caBundle": ca.bundle}, ns,
                                                         rules=rules)])
        assert create_pod(client, ns, make_pod("target").build()).status_code == 201

        def refused() -> str | None:
            result = kubectl("exec", "target", "-n", ns, "--", "rm", "-rf", "/x", check=False, timeout=30)
            return result.stderr if "denied the request" in result.stderr else None

        stderr = wait_for(refused, timeout=20, what="the exec webhook to take effect")
        assert stderr == 'Error from server: admission webhook "exec.kubelab.io" denied the request: no rm in exec\n'
        request = [r for p, r in hooks.reviews][-1]["request"]
        assert request["operation"] == "CONNECT" and request["subResource"] == "exec"
        assert request["kind"] == {"group": "", "version": "v1", "kind": "PodExecOptions"}
        assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
        assert request["object"]["command"] == ["rm", "-rf", "/x"] and request["object"]["stdout"] is True
        assert request["oldObject"] is None and request["name"] == "target"


def test_binding_and_eviction_are_admitted_with_their_kinds(client: httpx.Client, ns: str, server: WebhookServer,
                                                            ca: CertificateAuthority,
                                                            configs: list[tuple[str, str]]) -> None:
    rules = [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
              "resources": ["pods/binding", "pods/eviction"]}]
    register(client, configs, "validating", [webhook("sub.kubelab.io", {"url": server.url("/deny-all"),
                                                                         "caBundle": ca.bundle}, ns, rules=rules)])
    assert create_pod(client, ns, make_pod("p").build()).status_code == 201
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-x"}}
    resp = wait_for(lambda: (r := client.post(f"/api/v1/namespaces/{ns}/pods/p/binding", json=binding))
                    .status_code == 403 and r, timeout=10, what="the webhook to take effect")
    assert resp.json()["message"] == 'admission webhook "sub.kubelab.io" denied the request: no pods/binding today'
    assert client.get(f"/api/v1/namespaces/{ns}/pods/p").json()["spec"].get("nodeName") is None
    request = server.received("/deny-all")[-1]["request"]
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Binding"} and request["name"] == "p"
    assert request["object"]["target"]["name"] == "node-x"
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": ns}}
    resp = client.post(f"/api/v1/namespaces/{ns}/pods/p/eviction", json=eviction)
    assert resp.status_code == 403
    assert resp.json()["message"] == 'admission webhook "sub.kubelab.io" denied the request: no pods/eviction today'
    assert server.received("/deny-all")[-1]["request"]["kind"] == {"group": "policy", "version": "v1",
                                                                   "kind": "Eviction"}
    assert client.get(f"/api/v1/namespaces/{ns}/pods/p").status_code == 200


def test_webhook_by_service_through_endpoint_slices(client: httpx.Client, ns: str, server: WebhookServer,
                                                    ca: CertificateAuthority,
                                                    configs: list[tuple[str, str]]) -> None:
    """A Service with only an EndpointSlice (no Endpoints object) resolves through the slice's ready endpoint."""
    service = {"metadata": {"name": "hooks"}, "spec": {"ports": [{"name": "https", "port": 8443}]}}
    assert client.post(f"/api/v1/namespaces/{ns}/services", json=service).status_code == 201
    endpoint_slice = {"metadata": {"name": "hooks-1", "labels": {"kubernetes.io/service-name": "hooks"}},
                      "addressType": "IPv4", "ports": [{"name": "https", "port": server.port, "protocol": "TCP"}],
                      "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]}
    resp = client.post(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", json=endpoint_slice)
    assert resp.status_code == 201, resp.text
    by_service = {"service": {"namespace": ns, "name": "hooks", "path": "/mutate", "port": 8443},
                  "caBundle": ca.bundle}
    register(client, configs, "mutating", [webhook("slice.label.kubelab.io", by_service, ns)])
    until_labelled(client, ns)
    assert server.received("/mutate")


def test_every_apiserver_calls_the_webhooks(ns: str, server: WebhookServer, ca: CertificateAuthority) -> None:
    """A configuration written through one apiserver reaches the others through their own etcd watches (an
    API-only cluster of two apiservers on one etcd; the namespace has the session's ``ns`` name, which the webhook
    server's certificate names)."""
    with api_only(apiservers=2) as cluster, httpx.Client(base_url=cluster.api_urls[0], timeout=30) as first, \
            httpx.Client(base_url=cluster.api_urls[1], timeout=30) as second:
        assert first.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
        configure(first, "mutating", [webhook("label.kubelab.io", {"url": server.url("/mutate"),
                                                                    "caBundle": ca.bundle}, ns)])
        until_labelled(second, ns)
        resp = create_pod(second, ns, make_pod("via-second").build())
        assert resp.status_code == 201 and resp.json()["metadata"]["labels"] == {"admitted-by": "webhook"}
