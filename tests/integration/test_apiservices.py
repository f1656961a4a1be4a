"""APIService objects (apiregistration.k8s.io/v1): every served group/version listed as a Local APIService with
Available=True, as ``kubectl get apiservices`` shows them on kube; one that names a Service reports why it is not
available."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from kubernetes import client as k8s

from conftest import Kubectl
from support.wait import wait_for

APIREG = "/apis/apiregistration.k8s.io/v1"


def served(client: httpx.Client) -> set[str]:
    groups = client.get("/apis").json()["groups"]
    return {"v1."} | {f"{v['version']}.{g['name']}" for g in groups for v in g["versions"]}


def test_kubectl_lists_the_local_apiservices(client: httpx.Client, kubectl: Kubectl) -> None:
    expected = served(client)
    assert {"v1.apps", "v1.admissionregistration.k8s.io", "v1.apiregistration.k8s.io", "v2.autoscaling",
            "v1beta1.metrics.k8s.io"} <= expected

    def listed() -> dict[str, list[str]] | None:
        lines = kubectl("get", "apiservices").stdout.splitlines()
        rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
        return rows if expected <= set(rows) else None

    rows = wait_for(listed, timeout=15, what="an APIService for every served group/version")
    assert kubectl("get", "apiservices").stdout.splitlines()[0].split() == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    assert rows["v1."][:2] == ["Local", "True"] and rows["v1.apps"][:2] == ["Local", "True"]
    obj = client.get(f"{APIREG}/apiservices/v1.apps").json()
    assert obj["spec"] == {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}
    assert obj["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "onstart"}
    [condition] = obj["status"]["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "Available", "status": "True", "reason": "Local", "message": "Local APIServices are always available"}
    assert client.get(f"{APIREG}/apiservices/v1.").json()["spec"]["group"] == ""


def test_an_apiservice_backed_by_a_missing_service(client: httpx.Client, ns: str, kubectl: Kubectl,
                                                   api: Any) -> None:
    group = f"g{uuid.uuid4().hex[:6]}.kubelab.io"
    name = f"v1alpha1.{group}"
    body = {"metadata": {"name": name}, "spec": {"group": group, "version": "v1alpha1", "groupPriorityMinimum": 100,
                                                 "versionPriority": 10, "insecureSkipTLSVerify": True,
                                                 "service": {"namespace": ns, "name": "api", "port": 443}}}
    assert client.post(f"{APIREG}/apiservices", json=body).status_code == 201
    try:
        row = wait_for(lambda: (r := kubectl("get", "apiservice", name, "--no-headers").stdout.split())[2:3] ==
                       ["False"] and r, timeout=15, what="the APIService's availability")
        assert row[:4] == [name, f"{ns}/api", "False", "(ServiceNotFound)"]
        listed = k8s.ApiregistrationV1Api(api).read_api_service(name)
        assert listed.status.conditions[0].message == f'service/api in "{ns}" is not present'
    finally:
        client.delete(f"{APIREG}/apiservices/{name}")
    bad = {"metadata": {"name": "wrong.name"}, "spec": {"group": group, "version": "v1", "groupPriorityMinimum": 0,
                                                        "versionPriority": 10}}
    resp = client.post(f"{APIREG}/apiservices", json=bad)
    assert resp.status_code == 422
    causes = {c["field"]: c["message"] for c in resp.json()["details"]["causes"]}
    assert causes == {"metadata.name": f'Invalid value: "wrong.name": must be `spec.version+"."+spec.group`: '
                                       f'"v1.{group}"',
                      "spec.groupPriorityMinimum": "Invalid value: 0: must be positive and less than 20000"}
