"""What kube-apiserver keeps in place by itself, checked with the real kubectl and the Python client: the system
namespaces cannot be deleted (NamespaceLifecycle), and a deleted ``default/kubernetes`` Service comes back (the
bootstrap controller checks every 10 s)."""

from __future__ import annotations

import httpx
import pytest
from kubernetes import client as k8s

from conftest import Kubectl
from support.wait import wait_for


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_system_namespaces_may_not_be_deleted(kubectl: Kubectl, client: httpx.Client, name: str) -> None:
    result = kubectl("delete", "namespace", name, check=False)
    assert result.returncode == 1
    assert f'Error from server (Forbidden): namespaces "{name}" is forbidden: this namespace may not be deleted' \
        in result.stderr
    namespace = client.get(f"/api/v1/namespaces/{name}").json()
    assert namespace["status"]["phase"] == "Active" and "deletionTimestamp" not in namespace["metadata"]


def test_python_client_gets_403(api: k8s.ApiClient) -> None:
    with pytest.raises(k8s.ApiException) as raised:
        k8s.CoreV1Api(api).delete_namespace("kube-system")
    assert raised.value.status == 403 and "this namespace may not be deleted" in str(raised.value.body)


def test_a_deleted_kubernetes_service_comes_back(kubectl: Kubectl, client: httpx.Client) -> None:
    before = client.get("/api/v1/namespaces/default/services/kubernetes").json()
    assert 'service "kubernetes" deleted' in kubectl("delete", "service", "kubernetes", "-n", "default").stdout
    again = wait_for(lambda: client.get("/api/v1/namespaces/default/services/kubernetes").status_code == 200,
                     what="default/kubernetes re-created")
    assert again
    after = client.get("/api/v1/namespaces/default/services/kubernetes").json()
    assert after["metadata"]["uid"] != before["metadata"]["uid"]
    assert after["spec"]["clusterIP"] == before["spec"]["clusterIP"] == "10.96.0.1"
    assert after["spec"]["ports"] == before["spec"]["ports"]
