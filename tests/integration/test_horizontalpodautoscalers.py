"""HorizontalPodAutoscalers against the real apiserver: ``kubectl autoscale``, ``kubectl get hpa`` (1.32, 1.27, 1.33)
and ``kubectl describe hpa``, 422s, autoscaling/v1 and v2 views of one object through the official Python client;
then the classic walkthrough with a real controller-manager (deployment, replicaset and horizontal-pod-autoscaler
controllers, 1 s sync period) and a real kubelet whose containers are processes: a Deployment whose pod spins a
core scales up, an idle one scales down to minReplicas, and pods without cpu requests leave the HPA unable to
compute (FailedGetResourceMetric)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s

from conftest import Kubectl, kubectl_release
from kubelab.etcd import free_port
from support.controllers import ControllerManager
from support.process import ComponentProcess, kill_containers
from support.wait import wait_for

pytestmark = pytest.mark.kubectl

HPAS = "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"
SPIN = "while :; do :; done"


def deployment(name: str, command: str, *, replicas: int = 1, node: str | None = None,
               cpu: str | None = "100m") -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "busybox", "command": ["sh", "-c", command]}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 1, "containers": [container]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def hpa(name: str, *, min_replicas: int = 1, max_replicas: int = 3, behavior: dict[str, Any] | None = None
        ) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
        "minReplicas": min_replicas, "maxReplicas": max_replicas,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                                "averageUtilization": 50}}}]}
    if behavior:
        spec["behavior"] = behavior
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
            "spec": spec}


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


def test_kubectl_autoscale_get_describe_and_validation(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    # replicas 0: the HPA leaves the target alone, so what kubectl shows does not depend on a controller running
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/deployments",
                       json=deployment("web", "sleep 1000", replicas=0)).status_code == 201
    out = kubectl("-n", ns, "autoscale", "deploy", "web", "--cpu-percent=50", "--min=1", "--max=5").stdout
    assert out.strip() == "horizontalpodautoscaler.autoscaling/web autoscaled"
    table = rows(kubectl("-n", ns, "get", "hpa").stdout)
    assert table[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert table[1][:7] == ["web", "Deployment/web", "cpu:", "<unknown>/50%", "1", "5", "0"]
    for release in ("1.27", "1.33"):  # the columns come from the server's Table
        other = Kubectl(kubectl_release(release), kubectl.server, kubectl.home)
        assert rows(other("-n", ns, "get", "hpa", "web").stdout)[1][:7] == table[1][:7]
    # kubectl 1.33 posts autoscaling/v2 (as protobuf); 1.32 posted autoscaling/v1
    newer = Kubectl(kubectl_release("1.33"), kubectl.server, kubectl.home)
    newer("-n", ns, "autoscale", "deploy", "web", "--name=web2", "--cpu-percent=60", "--min=2", "--max=4")
    assert rows(kubectl("-n", ns, "get", "hpa", "web2").stdout)[1][:7] == \
        ["web2", "Deployment/web", "cpu:", "<unknown>/60%", "2", "4", "0"]
    stored = json.loads(kubectl("-n", ns, "get", "hpa", "web", "-o", "json").stdout)
    assert stored["apiVersion"] == "autoscaling/v2"
    assert stored["spec"]["minReplicas"] == 1 and stored["spec"]["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]
    v1 = client.get(f"/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers/web").json()
    assert v1["apiVersion"] == "autoscaling/v1" and v1["spec"]["targetCPUUtilizationPercentage"] == 50
    described = kubectl("-n", ns, "describe", "hpa", "web").stdout
    for line in ("Reference:", "Deployment/web", "resource cpu on pods  (as a percentage of request):  <unknown> / 50%",
                 "Min replicas:", "Max replicas:", "Deployment pods:"):
        assert line in described
    assert "horizontalpodautoscaler.autoscaling/web" in kubectl("-n", ns, "get", "all").stdout

    bad = hpa("bad", min_replicas=3, max_replicas=2)
    result = kubectl("-n", ns, "apply", "-f", "-", input=json.dumps(bad), check=False)
    assert result.returncode != 0
    assert 'The HorizontalPodAutoscaler "bad" is invalid: spec.maxReplicas: Invalid value: 2: must be greater ' \
           "than or equal to `minReplicas`" in result.stderr
    bad["spec"].update(minReplicas=0, maxReplicas=0)
    resp = client.post(HPAS.format(ns=ns), json=bad)
    assert resp.status_code == 422
    assert [(c["field"], c["message"]) for c in resp.json()["details"]["causes"]][:2] == [
        ("spec.minReplicas", "Invalid value: 0: must be greater than or equal to 1"),
        ("spec.maxReplicas", "Invalid value: 0: must be greater than 0")]


def test_python_client_sees_one_object_in_v1_and_v2(api: Any, ns: str) -> None:
    v1api, v2api = k8s.AutoscalingV1Api(api), k8s.AutoscalingV2Api(api)
    memory = k8s.V2MetricSpec(type="Resource", resource=k8s.V2ResourceMetricSource(
        name="memory", target=k8s.V2MetricTarget(type="AverageValue", average_value="64Mi")))
    body = k8s.V2HorizontalPodAutoscaler(
        metadata=k8s.V1ObjectMeta(name="mem"),
        spec=k8s.V2HorizontalPodAutoscalerSpec(
            scale_target_ref=k8s.V2CrossVersionObjectReference(api_version="apps/v1", kind="Deployment", name="web"),
            max_replicas=4, metrics=[memory],
            behavior=k8s.V2HorizontalPodAutoscalerBehavior(
                scale_down=k8s.V2HPAScalingRules(stabilization_window_seconds=30))))
    created = v2api.create_namespaced_horizontal_pod_autoscaler(ns, body)
    assert created.spec.min_replicas == 1
    assert created.spec.behavior.scale_down.policies[0].type == "Percent"
    assert created.spec.behavior.scale_up.stabilization_window_seconds == 0
    as_v1 = v1api.read_namespaced_horizontal_pod_autoscaler("mem", ns)
    assert as_v1.spec.target_cpu_utilization_percentage is None and as_v1.spec.max_replicas == 4
    assert json.loads(as_v1.metadata.annotations["autoscaling.alpha.kubernetes.io/metrics"]) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "64Mi"}}]
    as_v1.spec.max_replicas = 6  # a v1 read-modify-write keeps what only v2 can say
    v1api.replace_namespaced_horizontal_pod_autoscaler("mem", ns, as_v1)
    again = v2api.read_namespaced_horizontal_pod_autoscaler("mem", ns)
    assert again.spec.max_replicas == 6 and again.spec.metrics[0].resource.name == "memory"
    assert again.spec.behavior.scale_down.stabilization_window_seconds == 30
    assert again.metadata.annotations is None

    v1api.create_namespaced_horizontal_pod_autoscaler(ns, k8s.V1HorizontalPodAutoscaler(
        metadata=k8s.V1ObjectMeta(name="cpu"),
        spec=k8s.V1HorizontalPodAutoscalerSpec(
            scale_target_ref=k8s.V1CrossVersionObjectReference(kind="Deployment", name="web", api_version="apps/v1"),
            max_replicas=3, target_cpu_utilization_percentage=70)))
    cpu = v2api.read_namespaced_horizontal_pod_autoscaler("cpu", ns)
    assert cpu.spec.metrics[0].resource.target.average_utilization == 70 and cpu.spec.min_replicas == 1
    names = {h.metadata.name for h in v2api.list_namespaced_horizontal_pod_autoscaler(ns).items}
    assert names == {"mem", "cpu"}
    assert {h.metadata.name for h in v1api.list_namespaced_horizontal_pod_autoscaler(ns).items} == names
    v1api.delete_namespaced_horizontal_pod_autoscaler("cpu", ns)
    assert [h.metadata.name for h in v2api.list_namespaced_horizontal_pod_autoscaler(ns).items] == ["mem"]


@pytest.fixture(scope="module")
def cluster(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A namespace, a kubelet (node ``<ns>-node``) and a controller-manager reconciling HPAs every second."""
    ns = f"t-{uuid.uuid4().hex[:10]}"
    node = f"{ns}-node"
    tmp: Path = tmp_path_factory.mktemp("hpa")
    with httpx.Client(base_url=api_url, timeout=30) as client:
        assert client.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
        kubelet = ComponentProcess("kubelet", api_url, tmp / "kubelet.log", "--node-name", node,
                                   "--port", str(free_port()), "--root-dir", str(tmp / "root"), "--runtime", "process")
        manager = ControllerManager(api_url, tmp / "controller-manager.log", "--leader-elect=false",
                                    "--controllers=deployment,replicaset,horizontalpodautoscaling",
                                    "--horizontal-pod-autoscaler-sync-period=1s")
        try:
            yield ns, node
        finally:
            manager.stop()
            client.delete(f"/apis/apps/v1/namespaces/{ns}/deployments")
            client.delete(f"/api/v1/namespaces/{ns}/pods", params={"gracePeriodSeconds": "0"})
            kubelet.stop()
            kill_containers(tmp / "root")


def replicas(client: httpx.Client, ns: str, name: str) -> int:
    return int(client.get(f"/apis/apps/v1/namespaces/{ns}/deployments/{name}").json()["spec"].get("replicas") or 0)


def hpa_status(client: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    return client.get(f"{HPAS.format(ns=ns)}/{name}").json().get("status") or {}


def condition(client: httpx.Client, ns: str, name: str, kind: str) -> dict[str, Any]:
    return next((c for c in hpa_status(client, ns, name).get("conditions") or [] if c["type"] == kind), {})


def event_messages(client: httpx.Client, ns: str, name: str, reason: str) -> list[str]:
    events = client.get(f"/api/v1/namespaces/{ns}/events",
                        params={"fieldSelector": f"involvedObject.name={name},reason={reason}"}).json()["items"]
    return [e["message"] for e in events]


def test_busy_deployment_scales_up_and_idle_one_down_to_min(cluster: tuple[str, str], client: httpx.Client,
                                                           kubectl: Kubectl) -> None:
    ns, node = cluster
    quick_down = {"scaleDown": {"stabilizationWindowSeconds": 0,
                                "policies": [{"type": "Percent", "value": 100, "periodSeconds": 1}]}}
    for obj in (deployment("busy", SPIN, node=node), deployment("idle", "sleep 100000", replicas=3, node=node)):
        assert client.post(f"/apis/apps/v1/namespaces/{ns}/deployments", json=obj).status_code == 201
    for obj in (hpa("busy", max_replicas=2), hpa("idle", max_replicas=5, behavior=quick_down)):
        assert client.post(HPAS.format(ns=ns), json=obj).status_code == 201

    wait_for(lambda: replicas(client, ns, "busy") == 2, timeout=120, what="the busy Deployment scaled up to 2")
    assert "New size: 2; reason: cpu resource utilization (percentage of request) above target" in \
        wait_for(lambda: event_messages(client, ns, "busy", "SuccessfulRescale"), what="the rescale event")
    status = wait_for(lambda: (s := hpa_status(client, ns, "busy")).get("lastScaleTime") and s, what="busy status")
    assert status["desiredReplicas"] == 2 and status["currentMetrics"][0]["resource"]["name"] == "cpu"
    wait_for(lambda: condition(client, ns, "busy", "ScalingLimited").get("reason") == "TooManyReplicas",
             timeout=60, what="ScalingLimited TooManyReplicas")
    client.delete(f"/apis/apps/v1/namespaces/{ns}/deployments/busy")  # two spinning cores are enough
    client.delete(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": "app=busy", "gracePeriodSeconds": "0"})

    wait_for(lambda: replicas(client, ns, "idle") == 1, timeout=120, what="the idle Deployment scaled down to 1")
    assert "New size: 1; reason: All metrics below target" in \
        wait_for(lambda: event_messages(client, ns, "idle", "SuccessfulRescale"), what="the scale-down event")
    wait_for(lambda: condition(client, ns, "idle", "ScalingLimited").get("reason") == "TooFewReplicas",
             timeout=60, what="ScalingLimited TooFewReplicas")
    table = wait_for(lambda: (r := rows(kubectl("-n", ns, "get", "hpa", "idle").stdout)[1])[6] == "1" and r,
                     timeout=60, what="REPLICAS 1 in kubectl get hpa")
    assert table[1:3] == ["Deployment/idle", "cpu:"] and table[3].endswith("%/50%") and table[4:6] == ["1", "5"]
    described = kubectl("-n", ns, "describe", "hpa", "idle").stdout
    assert "ScalingActive   True    ValidMetricFound" in described
    assert "SuccessfulRescale" in described


def test_pods_without_cpu_requests_fail_to_get_the_resource_metric(cluster: tuple[str, str],
                                                                  client: httpx.Client) -> None:
    ns, node = cluster
    obj = deployment("norequests", "sleep 100000", node=node, cpu=None)
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/deployments", json=obj).status_code == 201
    assert client.post(HPAS.format(ns=ns), json=hpa("norequests")).status_code == 201
    active = wait_for(lambda: "missing request" in (c := condition(client, ns, "norequests", "ScalingActive"))
                      .get("message", "") and c, timeout=120, what="ScalingActive False FailedGetResourceMetric")
    assert active["status"] == "False" and active["reason"] == "FailedGetResourceMetric"
    assert active["message"].startswith("the HPA was unable to compute the replica count: failed to get cpu "
                                        "utilization: missing request for cpu in container norequests of Pod "
                                        "norequests-")
    assert wait_for(lambda: event_messages(client, ns, "norequests", "FailedGetResourceMetric"),
                    what="the FailedGetResourceMetric event")
    assert replicas(client, ns, "norequests") == 1
