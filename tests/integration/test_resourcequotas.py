"""ResourceQuotas and LimitRanges with the real apiserver and etcd, a real controller-manager running the
resourcequota controller, and kubectl 1.32: a quota refuses the pod over its limit with kube's text and gets the
usage back when a pod goes; a LimitRange fills in default requests and limits and refuses what is over its max."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from conftest import Kubectl
from support.controllers import ControllerManager, controller_manager_fixture
from support.crds import create_crd, crontab_crd, new_group
from support.wait import wait_for

pytestmark = pytest.mark.kubectl

manager = controller_manager_fixture("resourcequota")


def pod(name: str, **resources: dict[str, str]) -> str:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": resources}]}}
    return json.dumps(body)


def quota_status(client: httpx.Client, ns: str, name: str = "q") -> dict[str, Any]:
    return client.get(f"/api/v1/namespaces/{ns}/resourcequotas/{name}").json().get("status") or {}


def test_quota_refuses_the_third_pod_and_gives_usage_back(manager: ControllerManager, kubectl: Kubectl,
                                                          client: httpx.Client, ns: str) -> None:
    out = kubectl("-n", ns, "create", "quota", "q", "--hard=pods=2,requests.cpu=1").stdout
    assert out.strip() == "resourcequota/q created"
    wait_for(lambda: quota_status(client, ns).get("used") == {"pods": "0", "requests.cpu": "0"},
             what="the controller to fill the quota's status")
    for name in ("a", "b"):
        kubectl("-n", ns, "create", "-f", "-", input=pod(name, requests={"cpu": "100m"}))
    assert quota_status(client, ns)["used"] == {"pods": "2", "requests.cpu": "200m"}  # charged by admission
    third = kubectl("-n", ns, "create", "-f", "-", input=pod("c", requests={"cpu": "100m"}), check=False)
    assert third.returncode != 0
    assert ('Error from server (Forbidden): error when creating "STDIN": pods "c" is forbidden: exceeded quota: q, '
            "requested: pods=1, used: pods=2, limited: pods=2") in third.stderr
    described = kubectl("-n", ns, "describe", "quota", "q").stdout
    assert [line.split() for line in described.splitlines()[-3:]] == [
        ["--------", "----", "----"], ["pods", "2", "2"], ["requests.cpu", "200m", "1"]]

    kubectl("-n", ns, "delete", "pod", "a", "--grace-period=0", "--force", "--wait=false")
    wait_for(lambda: quota_status(client, ns)["used"] == {"pods": "1", "requests.cpu": "100m"},
             what="the controller to release the deleted pod's usage")
    kubectl("-n", ns, "create", "-f", "-", input=pod("c", requests={"cpu": "100m"}))
    table = kubectl("-n", ns, "get", "quota").stdout.splitlines()
    assert table[0].split() == ["NAME", "AGE", "REQUEST", "LIMIT"]
    assert "pods: 2/2, requests.cpu: 200m/1" in table[1]


def test_quota_on_limits_needs_every_container_to_say_it(manager: ControllerManager, kubectl: Kubectl,
                                                         client: httpx.Client, ns: str) -> None:
    kubectl("-n", ns, "create", "quota", "q", "--hard=limits.cpu=1,count/configmaps=1")
    wait_for(lambda: "used" in quota_status(client, ns), what="the quota's status")
    bare = kubectl("-n", ns, "create", "-f", "-", input=pod("bare"), check=False)
    assert 'pods "bare" is forbidden: failed quota: q: must specify limits.cpu for: c' in bare.stderr
    over = kubectl("-n", ns, "create", "-f", "-", input=pod("big", limits={"cpu": "2"}), check=False)
    assert ('pods "big" is forbidden: exceeded quota: q, requested: limits.cpu=2, used: limits.cpu=0, '
            "limited: limits.cpu=1") in over.stderr
    kubectl("-n", ns, "create", "configmap", "one")
    second = kubectl("-n", ns, "create", "configmap", "two", check=False)
    assert ('configmaps "two" is forbidden: exceeded quota: q, requested: count/configmaps=1, '
            "used: count/configmaps=1, limited: count/configmaps=1") in second.stderr


LIMIT_RANGE = """
apiVersion: v1
kind: LimitRange
metadata: {name: limits}
spec:
  limits:
  - type: Container
    default: {cpu: 300m, memory: 128Mi}
    defaultRequest: {cpu: 100m}
    max: {cpu: 500m}
"""


def test_limit_range_defaults_and_max(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    assert kubectl("-n", ns, "create", "-f", "-", input=LIMIT_RANGE).stdout.strip() == "limitrange/limits created"
    stored = client.get(f"/api/v1/namespaces/{ns}/limitranges/limits").json()["spec"]["limits"][0]
    assert stored["defaultRequest"] == {"cpu": "100m", "memory": "128Mi"}  # defaulted from default
    kubectl("-n", ns, "create", "-f", "-", input=pod("plain"))
    created = client.get(f"/api/v1/namespaces/{ns}/pods/plain").json()
    assert created["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "300m", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}}
    assert created["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == \
        "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"
    big = kubectl("-n", ns, "create", "-f", "-", input=pod("big", limits={"cpu": "1"}), check=False)
    assert big.returncode != 0
    assert ('pods "big" is forbidden: maximum cpu usage per Container is 500m, but limit is 1'
            in big.stderr)
    described = kubectl("-n", ns, "describe", "limits", "limits").stdout
    assert any(line.split()[:6] == ["Container", "cpu", "-", "500m", "100m", "300m"]
               for line in described.splitlines() if line.strip())


def test_object_count_of_any_resource(manager: ControllerManager, kubectl: Kubectl, client: httpx.Client,
                                      ns: str) -> None:
    kubectl("-n", ns, "create", "quota", "q", "--hard=count/deployments.apps=1")
    wait_for(lambda: quota_status(client, ns).get("used") == {"count/deployments.apps": "0"},
             what="the quota's status")
    kubectl("-n", ns, "create", "deployment", "one", "--image=busybox")
    second = kubectl("-n", ns, "create", "deployment", "two", "--image=busybox", check=False)
    assert ('deployments.apps "two" is forbidden: exceeded quota: q, requested: count/deployments.apps=1, '
            "used: count/deployments.apps=1, limited: count/deployments.apps=1") in second.stderr
    kubectl("-n", ns, "delete", "deployment", "one")
    wait_for(lambda: quota_status(client, ns)["used"] == {"count/deployments.apps": "0"},
             what="the deployment's count to be given back")
    kubectl("-n", ns, "create", "deployment", "two", "--image=busybox")


def test_an_update_that_raises_usage_is_charged(manager: ControllerManager, kubectl: Kubectl, client: httpx.Client,
                                                ns: str) -> None:
    kubectl("-n", ns, "create", "quota", "q", "--hard=services=2,services.nodeports=1")
    wait_for(lambda: "used" in quota_status(client, ns), what="the quota's status")
    kubectl("-n", ns, "create", "service", "clusterip", "web", "--tcp=80:80,443:443")
    refused = kubectl("-n", ns, "patch", "service", "web", "-p", '{"spec":{"type":"NodePort"}}', check=False)
    assert ('services "web" is forbidden: exceeded quota: q, requested: services.nodeports=2, '
            "used: services.nodeports=0, limited: services.nodeports=1") in refused.stderr
    assert quota_status(client, ns)["used"] == {"services": "1", "services.nodeports": "0"}
    kubectl("-n", ns, "create", "service", "nodeport", "one", "--tcp=80:80")
    assert quota_status(client, ns)["used"] == {"services": "2", "services.nodeports": "1"}
    kubectl("-n", ns, "patch", "service", "one", "-p", '{"spec":{"type":"ClusterIP"}}')
    wait_for(lambda: quota_status(client, ns)["used"] == {"services": "2", "services.nodeports": "0"},
             what="the controller to give the node port back")


def test_the_python_client_reads_and_is_refused(manager: ControllerManager, api: Any, client: httpx.Client,
                                                ns: str) -> None:
    core = k8s.CoreV1Api(api)
    core.create_namespaced_resource_quota(ns, k8s.V1ResourceQuota(
        metadata=k8s.V1ObjectMeta(name="q"), spec=k8s.V1ResourceQuotaSpec(hard={"count/secrets": "1"})))
    wait_for(lambda: getattr(core.read_namespaced_resource_quota("q", ns).status, "used", None) ==
             {"count/secrets": "0"},
             what="the quota's status through the client")
    core.create_namespaced_secret(ns, k8s.V1Secret(metadata=k8s.V1ObjectMeta(name="one")))
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_secret(ns, k8s.V1Secret(metadata=k8s.V1ObjectMeta(name="two")))
    assert refused.value.status == 403
    assert "exceeded quota: q, requested: count/secrets=1" in refused.value.body
    core.create_namespaced_limit_range(ns, k8s.V1LimitRange(
        metadata=k8s.V1ObjectMeta(name="l"), spec=k8s.V1LimitRangeSpec(limits=[k8s.V1LimitRangeItem(
            type="Container", max={"memory": "1Gi"})])))
    item = core.read_namespaced_limit_range("l", ns).spec.limits[0]
    assert (item.default, item.default_request) == ({"memory": "1Gi"}, {"memory": "1Gi"})


def test_object_count_of_a_custom_resource(manager: ControllerManager, kubectl: Kubectl, client: httpx.Client,
                                           ns: str) -> None:
    group = new_group()
    create_crd(client, crontab_crd(group))
    try:
        kubectl("-n", ns, "create", "quota", "q", f"--hard=count/crontabs.{group}=1")
        wait_for(lambda: quota_status(client, ns).get("used") == {f"count/crontabs.{group}": "0"},
                 what="the quota's status, counted through discovery")
        tab = {"apiVersion": f"{group}/v1", "kind": "CronTab", "spec": {"cronSpec": "* * * * *"}}
        kubectl("-n", ns, "create", "-f", "-", input=json.dumps({**tab, "metadata": {"name": "one"}}))
        second = kubectl("-n", ns, "create", "-f", "-", input=json.dumps({**tab, "metadata": {"name": "two"}}),
                         check=False)
        assert (f'crontabs.{group} "two" is forbidden: exceeded quota: q, requested: count/crontabs.{group}=1, '
                f"used: count/crontabs.{group}=1, limited: count/crontabs.{group}=1") in second.stderr
        kubectl("-n", ns, "delete", f"crontabs.{group}", "one")
        wait_for(lambda: quota_status(client, ns)["used"] == {f"count/crontabs.{group}": "0"},
                 what="the custom resource's count to be given back")
    finally:
        client.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.{group}")
