"""The built-in kinds beyond the workloads, through the real kubectl 1.32 and the Python client: PriorityClasses and
the Priority admission plugin, Ingresses and IngressClasses (the default class), NetworkPolicies, RuntimeClasses,
PodTemplates, events.k8s.io/v1 Events over the core/v1 ones, ComponentStatuses, and API Priority and Fairness's
bootstrap FlowSchemas and PriorityLevelConfigurations.

PriorityClasses and IngressClasses are cluster-wide and a globalDefault / default class changes every later pod or
Ingress, so the tests that make one delete it before they end."""

from __future__ import annotations

import http.server
import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import Kubectl, api_only
from kubelab.etcd import free_port
from support.wait import wait_for

pytestmark = pytest.mark.kubectl

SCHEDULING = "/apis/scheduling.k8s.io/v1/priorityclasses"
NETWORKING = "/apis/networking.k8s.io/v1"
FLOWCONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1"


def table(kubectl: Kubectl, *args: str) -> list[list[str]]:
    return [line.split() for line in kubectl("get", *args).stdout.splitlines()]


def create_pod(client: httpx.Client, ns: str, name: str, **spec: Any) -> httpx.Response:
    body = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}
    return client.post(f"/api/v1/namespaces/{ns}/pods", json=body)


# --- PriorityClasses and the Priority admission plugin -------------------------------------------------------------
def test_priority_classes(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    rows = table(kubectl, "pc")
    assert rows[0] == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    assert [(r[0], r[1], r[2], r[4]) for r in rows[1:] if r[0].startswith("system-")] == [
        ("system-cluster-critical", "2000000000", "false", "PreemptLowerPriority"),
        ("system-node-critical", "2000001000", "false", "PreemptLowerPriority")]
    gold, default = f"gold-{ns}", f"default-{ns}"
    assert kubectl("create", "priorityclass", gold, "--value=1000", "--description=gold",
                   "--preemption-policy=Never").stdout.strip() == f"priorityclass.scheduling.k8s.io/{gold} created"
    try:
        described = kubectl("describe", "pc", gold).stdout
        assert "Value:             1000" in described and "PreemptionPolicy:  Never" in described
        result = kubectl("patch", "pc", gold, "-p", '{"value": 5}', check=False)
        assert f'The PriorityClass "{gold}" is invalid: value: Forbidden: may not be changed in an update.' in \
            result.stderr
        result = kubectl("delete", "pc", "system-node-critical", check=False)
        assert 'priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority ' \
               "class and cannot be deleted" in result.stderr
        result = kubectl("create", "priorityclass", "system-mine", "--value=5", check=False)
        assert "priority class names with 'system-' prefix are reserved for system use only" in result.stderr

        # Priority admission: the class's value and policy, kube's refusals, 0 without a class.
        assert create_pod(client, ns, "gold", priorityClassName=gold).status_code == 201
        spec = client.get(f"/api/v1/namespaces/{ns}/pods/gold").json()["spec"]
        assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
        plain = create_pod(client, ns, "plain")
        assert (plain.json()["spec"]["priority"], plain.json()["spec"]["preemptionPolicy"]) == \
            (0, "PreemptLowerPriority")
        refused = create_pod(client, ns, "nope", priorityClassName="nope")
        assert (refused.status_code, refused.json()["reason"], refused.json()["message"]) == \
            (403, "Forbidden", 'pods "nope" is forbidden: no PriorityClass with name nope was found')
        refused = create_pod(client, ns, "mine", priorityClassName=gold, priority=7)
        assert refused.json()["message"] == (
            'pods "mine" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority '
            "admission controller computed 1000 from the given PriorityClass name")

        # One globalDefault: pods without a class get it; a second one is refused.
        kubectl("create", "priorityclass", default, "--value=10", "--global-default")
        assert create_pod(client, ns, "defaulted").json()["spec"]["priorityClassName"] == default
        assert client.get(f"/api/v1/namespaces/{ns}/pods/defaulted").json()["spec"]["priority"] == 10
        result = kubectl("create", "priorityclass", f"other-{ns}", "--value=11", "--global-default", check=False)
        assert f"PriorityClass {default} is already marked as default. Only one default can exist" in result.stderr
    finally:
        kubectl("delete", "pc", gold, default, "--ignore-not-found")


# --- Ingresses, IngressClasses, NetworkPolicies, RuntimeClasses, PodTemplates ---------------------------------------
def test_ingress_and_default_class(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    ic = f"nginx-{ns}"
    kubectl("apply", "-f", "-", input=f"""
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: {ic}
  annotations: {{ingressclass.kubernetes.io/is-default-class: "true"}}
spec:
  controller: k8s.io/ingress-nginx
  parameters: {{apiGroup: k8s.example.com, kind: IngressParameters, name: external-lb}}
""")
    try:
        header, row = table(kubectl, "ingressclass", ic)  # one table: a second read may be a second older
        assert header == ["NAME", "CONTROLLER", "PARAMETERS", "AGE"]
        assert row[:3] == [ic, "k8s.io/ingress-nginx", "IngressParameters.k8s.example.com/external-lb"]
        assert re.fullmatch(r"\d+s", row[3]), row
        assert kubectl("-n", ns, "create", "ingress", "simple", "--rule=foo.com/bar=svc1:8080,tls=my-cert") \
            .stdout.strip() == "ingress.networking.k8s.io/simple created"
        ingress = client.get(f"{NETWORKING}/namespaces/{ns}/ingresses/simple").json()
        assert ingress["spec"]["ingressClassName"] == ic  # DefaultIngressClass admission
        assert ingress["spec"]["rules"][0]["http"]["paths"][0]["pathType"] == "Exact"
        status = {"loadBalancer": {"ingress": [{"ip": "10.0.0.7"}]}}
        assert client.patch(f"{NETWORKING}/namespaces/{ns}/ingresses/simple/status", json={"status": status},
                            headers={"content-type": "application/merge-patch+json"}).status_code == 200
        rows = table(kubectl, "-n", ns, "ingress")
        assert rows[0] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
        assert rows[1][:5] == ["simple", ic, "foo.com", "10.0.0.7", "80,"] and rows[1][5] == "443"
        described = kubectl("-n", ns, "describe", "ingress", "simple").stdout
        assert f"Ingress Class:    {ic}" in described and "my-cert terminates foo.com" in described
        result = kubectl("-n", ns, "create", "ingress", "bad", "--rule=1.2.3.4/x=svc:80", check=False)
        assert 'spec.rules[0].host: Invalid value: "1.2.3.4": must be a DNS name, not an IP address' in result.stderr
    finally:
        kubectl("delete", "ingressclass", ic)


def test_network_policy_runtime_class_and_pod_template(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    kubectl("-n", ns, "apply", "-f", "-", input="""
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress: [{from: [{podSelector: {matchLabels: {app: web}}}], ports: [{port: 5432}]}]
  egress: [{to: [{ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}}]}]
---
apiVersion: v1
kind: PodTemplate
metadata: {name: tpl}
template:
  metadata: {labels: {app: web}}
  spec: {containers: [{name: web, image: "nginx:1.25"}]}
""")
    policy = client.get(f"{NETWORKING}/namespaces/{ns}/networkpolicies/db").json()
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["ingress"][0]["ports"][0]["protocol"] == "TCP"
    assert [r[:2] for r in table(kubectl, "-n", ns, "netpol")] == [["NAME", "POD-SELECTOR"], ["db", "app=db"]]
    bad = {"metadata": {"name": "bad"}, "spec": {"podSelector": {}, "ingress": [{"from": [{}]}]}}
    refused = client.post(f"{NETWORKING}/namespaces/{ns}/networkpolicies", json=bad).json()
    assert refused["details"]["causes"] == [{"reason": "FieldValueRequired", "message": "Required value: must "
                                             "specify a peer", "field": "spec.ingress[0].from[0]"}]
    template = client.get(f"/api/v1/namespaces/{ns}/podtemplates/tpl").json()
    assert template["template"]["spec"]["restartPolicy"] == "Always" and template["metadata"]["generation"] == 1
    assert table(kubectl, "-n", ns, "podtemplates") == [["NAME", "CONTAINERS", "IMAGES", "POD", "LABELS"],
                                                        ["tpl", "web", "nginx:1.25", "app=web"]]

    rc = f"gvisor-{ns}"
    kubectl("apply", "-f", "-", input=f"apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {{name: {rc}}}\n"
                                      "handler: runsc\noverhead: {podFixed: {cpu: 250m}}\n"
                                      "scheduling: {nodeSelector: {sandbox: gvisor}}\n")
    try:
        assert [r[:2] for r in table(kubectl, "runtimeclass", rc)] == [["NAME", "HANDLER"], [rc, "runsc"]]
        result = kubectl("patch", "runtimeclass", rc, "-p", '{"handler": "kata"}', check=False)
        assert 'handler: Invalid value: "kata": field is immutable' in result.stderr
        # RuntimeClass admission: the class must exist; its overhead and node selector go into the pod.
        sandboxed = create_pod(client, ns, "sandboxed", runtimeClassName=rc, nodeSelector={"disk": "ssd"})
        assert sandboxed.status_code == 201, sandboxed.text
        assert (sandboxed.json()["spec"]["overhead"], sandboxed.json()["spec"]["nodeSelector"]) == \
            ({"cpu": "250m"}, {"disk": "ssd", "sandbox": "gvisor"})
        refused = create_pod(client, ns, "nope", runtimeClassName="nope").json()
        assert refused["message"] == 'pods "nope" is forbidden: pod rejected: RuntimeClass "nope" not found'
        refused = create_pod(client, ns, "clash", runtimeClassName=rc, nodeSelector={"sandbox": "kata"}).json()
        assert refused["message"] == ('pods "clash" is forbidden: conflict: runtimeClass.scheduling.nodeSelector'
                                      "[sandbox] = gvisor; pod.spec.nodeSelector[sandbox] = kata")
    finally:
        kubectl("delete", "runtimeclass", rc)


# --- events.k8s.io/v1 ---------------------------------------------------------------------------------------------
def test_events_v1_are_core_events(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
             "eventTime": "2026-01-02T03:04:05.000000Z", "reportingController": "example.com/ctl",
             "reportingInstance": "ctl-1", "action": "Sync", "reason": "Synced", "type": "Normal",
             "note": "all good", "regarding": {"kind": "Pod", "namespace": ns, "name": "web", "apiVersion": "v1"}}
    created = client.post(f"/apis/events.k8s.io/v1/namespaces/{ns}/events", json=event)
    assert created.status_code == 201, created.text
    core = client.get(f"/api/v1/namespaces/{ns}/events/e1").json()
    assert (core["message"], core["involvedObject"]["name"], core["reportingComponent"]) == \
        ("all good", "web", "example.com/ctl")
    client.post(f"/api/v1/namespaces/{ns}/events", json={
        "metadata": {"name": "e2"}, "involvedObject": {"kind": "Pod", "namespace": ns, "name": "db"},
        "reason": "Started", "message": "started", "type": "Normal", "source": {"component": "kubelet"},
        "count": 3, "firstTimestamp": "2026-01-02T03:04:05Z", "lastTimestamp": "2026-01-02T03:04:06Z"})
    new = client.get(f"/apis/events.k8s.io/v1/namespaces/{ns}/events/e2").json()
    assert (new["note"], new["regarding"]["name"], new["deprecatedSource"], new["deprecatedCount"]) == \
        ("started", "db", {"component": "kubelet"}, 3)
    assert "message" not in new and "involvedObject" not in new
    strict = {**event, "metadata": {"name": "e3"}, "type": "Odd", "deprecatedCount": 2}
    causes = client.post(f"/apis/events.k8s.io/v1/namespaces/{ns}/events", json=strict).json()["details"]["causes"]
    assert [c["field"] for c in causes] == ["type", "count"]
    names = kubectl("-n", ns, "get", "events.v1.events.k8s.io", "-o", "name").stdout.split()
    assert names == ["event.events.k8s.io/e1", "event.events.k8s.io/e2"]


# --- ComponentStatuses ----------------------------------------------------------------------------------------------
class _Healthz(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture()
def cs_apiserver() -> Iterator[tuple[str, int]]:
    """An API-only cluster whose scheduler answers its healthz and whose controller-manager is not running: its
    plain URL and the controller-manager's closed port."""
    healthz = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Healthz)
    threading.Thread(target=healthz.serve_forever, daemon=True).start()
    closed = free_port()
    try:
        with api_only("--scheduler-healthz-url", f"http://127.0.0.1:{healthz.server_address[1]}/healthz",
                      "--controller-manager-healthz-url", f"http://127.0.0.1:{closed}/healthz") as cluster:
            yield cluster.api_url, closed
    finally:
        healthz.shutdown()
        healthz.server_close()


def test_component_statuses(kubectl_bin: str, cs_apiserver: tuple[str, int], tmp_path: Path) -> None:
    url, closed = cs_apiserver
    kubectl = Kubectl(kubectl_bin, url, tmp_path)
    result = kubectl("get", "cs")
    assert "Warning: v1 ComponentStatus is deprecated in v1.19+" in result.stderr
    rows = [" ".join(line.split()) for line in result.stdout.splitlines()]
    assert rows == ["NAME STATUS MESSAGE ERROR",
                    f'controller-manager Unhealthy Get "http://127.0.0.1:{closed}/healthz": dial tcp '
                    f"127.0.0.1:{closed}: connect: connection refused",
                    "etcd-0 Healthy ok",
                    "scheduler Healthy ok"]
    etcd = httpx.get(f"{url}/api/v1/componentstatuses/etcd-0").json()
    assert etcd["conditions"] == [{"type": "Healthy", "status": "True", "message": "ok"}]
    assert httpx.delete(f"{url}/api/v1/componentstatuses/etcd-0").status_code == 405
    assert httpx.get(f"{url}/api/v1/componentstatuses/nope").status_code == 404


# --- API Priority and Fairness ---------------------------------------------------------------------------------------
def test_flow_control_bootstrap(kubectl: Kubectl, client: httpx.Client) -> None:
    levels = table(kubectl, "prioritylevelconfigurations")
    assert levels[0] == ["NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"]
    assert {r[0]: r[1:6] for r in levels[1:]} == {
        "catch-all": ["Limited", "5", "<none>", "<none>", "<none>"],
        "exempt": ["Exempt", "<none>", "<none>", "<none>", "<none>"],
        "global-default": ["Limited", "20", "128", "6", "50"],
        "leader-election": ["Limited", "10", "16", "4", "50"],
        "node-high": ["Limited", "40", "64", "6", "50"],
        "system": ["Limited", "30", "64", "6", "50"],
        "workload-high": ["Limited", "40", "128", "6", "50"],
        "workload-low": ["Limited", "100", "128", "6", "50"]}
    schemas = table(kubectl, "flowschemas")
    assert schemas[0] == ["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"]
    assert {r[0]: (r[1], r[2], r[3], r[5]) for r in schemas[1:]} == {
        "exempt": ("exempt", "1", "<none>", "False"), "probes": ("exempt", "2", "<none>", "False"),
        "system-leader-election": ("leader-election", "100", "ByUser", "False"),
        "endpoint-controller": ("workload-high", "150", "ByUser", "False"),
        "workload-leader-election": ("leader-election", "200", "ByUser", "False"),
        "system-node-high": ("node-high", "400", "ByUser", "False"),
        "system-nodes": ("system", "500", "ByUser", "False"),
        "kube-controller-manager": ("workload-high", "800", "ByNamespace", "False"),
        "kube-scheduler": ("workload-high", "800", "ByNamespace", "False"),
        "kube-system-service-accounts": ("workload-high", "900", "ByNamespace", "False"),
        "service-accounts": ("workload-low", "9000", "ByUser", "False"),
        "global-default": ("global-default", "9900", "ByUser", "False"),
        "catch-all": ("catch-all", "10000", "ByUser", "False")}
    schema = client.get(f"{FLOWCONTROL}/flowschemas/service-accounts").json()
    assert schema["metadata"]["annotations"] == {"apf.kubernetes.io/autoupdate-spec": "true"}
    assert schema["status"]["conditions"][0]["message"] == \
        'This FlowSchema references the PriorityLevelConfiguration object named "workload-low" and it exists'

    # A schema whose level is gone is Dangling (MISSINGPL True); the deleted bootstrap level comes back, and a spec
    # changed under autoupdate-spec "true" is put back.
    patch = {"spec": {"matchingPrecedence": 8000}}
    headers = {"content-type": "application/merge-patch+json"}
    assert client.patch(f"{FLOWCONTROL}/flowschemas/service-accounts", json=patch, headers=headers) \
        .status_code == 200
    assert client.delete(f"{FLOWCONTROL}/prioritylevelconfigurations/workload-low").status_code == 200

    def missing_pl() -> str:
        rows = table(kubectl, "flowschemas", "service-accounts")
        return rows[1][5]

    wait_for(lambda: missing_pl() == "True", timeout=10, what="Dangling True")
    wait_for(lambda: missing_pl() == "False", timeout=30, what="workload-low back, Dangling False")
    assert client.get(f"{FLOWCONTROL}/flowschemas/service-accounts").json()["spec"]["matchingPrecedence"] == 9000
    invalid = {"metadata": {"name": f"fs-{uuid.uuid4().hex[:6]}"},
               "spec": {"priorityLevelConfiguration": {"name": "x"}, "matchingPrecedence": 20000}}
    causes = client.post(f"{FLOWCONTROL}/flowschemas", json=invalid).json()["details"]["causes"]
    assert causes[0]["field"] == "spec.matchingPrecedence"
