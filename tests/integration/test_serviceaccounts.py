"""ServiceAccounts with the real apiserver, etcd and a real controller-manager running the serviceaccount (and
namespace) controllers: ``default`` appears in every new namespace and comes back when deleted, a deleted
namespace is emptied without the account being re-created, and the real kubectl 1.32 and the official Python
client read and write them."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import yaml
from kubernetes import client as k8s

from conftest import Kubectl
from support.controllers import controller_manager_fixture
from support.wait import wait_for

manager = controller_manager_fixture("serviceaccount,namespace")


def default_account(client: httpx.Client, ns: str) -> dict[str, Any] | None:
    resp = client.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default")
    return resp.json() if resp.status_code == 200 else None


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.strip()]


def test_new_namespace_gets_default_and_gets_it_back(client: httpx.Client, ns: str, manager: None) -> None:
    first = wait_for(lambda: default_account(client, ns), what="the default ServiceAccount")
    assert first["kind"] == "ServiceAccount" and first["metadata"]["namespace"] == ns
    assert client.delete(f"/api/v1/namespaces/{ns}/serviceaccounts/default").status_code == 200
    again = wait_for(lambda: (sa := default_account(client, ns)) and sa["metadata"]["uid"] != first["metadata"]["uid"]
                     and sa, what="the default ServiceAccount re-created")
    assert again["metadata"]["name"] == "default"


def test_deleted_namespace_is_emptied_not_refilled(client: httpx.Client, manager: None) -> None:
    name = f"t-{uuid.uuid4().hex[:10]}"
    assert client.post("/api/v1/namespaces", json={"metadata": {"name": name}}).status_code == 201
    wait_for(lambda: default_account(client, name), what="the default ServiceAccount")
    assert client.delete(f"/api/v1/namespaces/{name}").status_code == 200
    wait_for(lambda: client.get(f"/api/v1/namespaces/{name}").status_code == 404, what="the namespace gone")
    assert client.get(f"/api/v1/namespaces/{name}/serviceaccounts").json()["items"] == []


def test_kubectl_get_and_create(kubectl: Kubectl, client: httpx.Client, ns: str, manager: None) -> None:
    wait_for(lambda: default_account(client, ns), what="the default ServiceAccount")
    assert kubectl("-n", ns, "create", "serviceaccount", "builder").stdout.strip() == "serviceaccount/builder created"
    client.patch(f"/api/v1/namespaces/{ns}/serviceaccounts/builder", json={"secrets": [{"name": "tok"}]},
                 headers={"Content-Type": "application/strategic-merge-patch+json"})
    table = rows(kubectl("get", "sa", "-n", ns).stdout)
    assert table[0] == ["NAME", "SECRETS", "AGE"]
    assert {row[0]: row[1] for row in table[1:]} == {"builder": "1", "default": "0"}
    obj = yaml.safe_load(kubectl("-n", ns, "get", "serviceaccount", "builder", "-o", "yaml").stdout)
    assert obj["kind"] == "ServiceAccount" and obj["secrets"] == [{"name": "tok"}]
    assert kubectl("-n", ns, "delete", "sa", "builder").stdout.strip() == 'serviceaccount "builder" deleted'
    bad = kubectl("-n", ns, "create", "serviceaccount", "Not_Valid", check=False)
    assert bad.returncode != 0 and "a lowercase RFC 1123 subdomain" in bad.stderr


def test_python_client_lists_and_creates(api_url: str, client: httpx.Client, ns: str, manager: None) -> None:
    wait_for(lambda: default_account(client, ns), what="the default ServiceAccount")
    cfg = k8s.Configuration()
    cfg.host = api_url
    with k8s.ApiClient(cfg) as api:
        core = k8s.CoreV1Api(api)
        created = core.create_namespaced_service_account(ns, k8s.V1ServiceAccount(
            metadata=k8s.V1ObjectMeta(name="robot"), automount_service_account_token=False,
            image_pull_secrets=[k8s.V1LocalObjectReference(name="registry")]))
        assert isinstance(created, k8s.V1ServiceAccount) and created.automount_service_account_token is False
        listed = core.list_namespaced_service_account(ns)
        assert sorted(sa.metadata.name for sa in listed.items) == ["default", "robot"]
        assert ns in {sa.metadata.namespace for sa in core.list_service_account_for_all_namespaces().items}
