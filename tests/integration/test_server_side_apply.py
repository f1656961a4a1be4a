"""Server-side apply and managedFields as users see them: the real kubectl (1.32, spot checks of 1.27 and 1.33),
the official Python client and plain HTTP against the real apiserver."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import dynamic
from kubernetes.client.rest import ApiException

from conftest import Kubectl, kubectl_release

APPLY = "application/apply-patch+yaml"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
"""


def configmap(**data: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": data})


def managers(kubectl: Kubectl, ns: str, kind: str, name: str) -> dict[tuple[str, str], dict[str, Any]]:
    obj = yaml.safe_load(kubectl("get", kind, name, "-n", ns, "-o", "yaml", "--show-managed-fields").stdout)
    return {(e["manager"], e["operation"]): e for e in obj["metadata"]["managedFields"]}


def kubectl_manager(kubectl: Kubectl) -> str:
    """kubectl's User-Agent starts with its binary's name, which kube takes as the manager of plain writes."""
    return os.path.basename(kubectl.binary)


def test_apply_creates_updates_and_removes_fields(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(configmap(a="1", b="2"))
    assert kubectl("apply", "--server-side", "-f", str(manifest), "-n", ns).stdout.strip() == \
        "configmap/cfg serverside-applied"
    plain = yaml.safe_load(kubectl("get", "cm", "cfg", "-n", ns, "-o", "yaml").stdout)
    assert "managedFields" not in plain["metadata"]  # kubectl hides them unless asked
    entry = managers(kubectl, ns, "cm", "cfg")[("kubectl", "Apply")]
    assert entry["apiVersion"] == "v1" and entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"] == {"f:data": {"f:a": {}, "f:b": {}}}

    manifest.write_text(configmap(a="9"))
    kubectl("apply", "--server-side", "-f", str(manifest), "-n", ns)
    data = yaml.safe_load(kubectl("get", "cm", "cfg", "-n", ns, "-o", "yaml").stdout)["data"]
    assert data == {"a": "9"}  # b was only the applier's: removed with it


def test_conflict_after_scale_and_force(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(DEPLOYMENT.format(replicas=2))
    kubectl("apply", "--server-side", "-f", str(manifest), "-n", ns)
    kubectl("scale", "deployment", "web", "--replicas=5", "-n", ns)
    scale = managers(kubectl, ns, "deploy", "web")[(kubectl_manager(kubectl), "Update")]
    assert scale["subresource"] == "scale" and scale["fieldsV1"] == {"f:spec": {"f:replicas": {}}}

    manifest.write_text(DEPLOYMENT.format(replicas=3))
    refused = kubectl("apply", "--server-side", "-f", str(manifest), "-n", ns, check=False)
    assert refused.returncode == 1
    assert (f'Apply failed with 1 conflict: conflict with "{kubectl_manager(kubectl)}" with subresource "scale" '
            f"using apps/v1: .spec.replicas") in refused.stderr
    replicas = kubectl("get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}").stdout
    assert replicas == "5"

    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(manifest), "-n", ns)
    assert kubectl("get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}").stdout == "3"
    owners = managers(kubectl, ns, "deploy", "web")
    assert (kubectl_manager(kubectl), "Update") not in owners  # it owned nothing else
    assert owners[("kubectl", "Apply")]["fieldsV1"]["f:spec"]["f:replicas"] == {}


def test_dry_run_and_diff(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(configmap(a="1"))
    kubectl("apply", "--server-side", "-f", str(manifest), "-n", ns)
    manifest.write_text(configmap(a="2"))
    out = kubectl("apply", "--server-side", "--dry-run=server", "-f", str(manifest), "-n", ns).stdout
    assert out.strip() == "configmap/cfg serverside-applied (server dry run)"
    assert kubectl("get", "cm", "cfg", "-n", ns, "-o", "jsonpath={.data.a}").stdout == "1"
    diff = kubectl("diff", "--server-side", "-f", str(manifest), "-n", ns, check=False)
    assert diff.returncode == 1
    assert '-  a: "1"' in diff.stdout and '+  a: "2"' in diff.stdout


def test_migration_from_client_side_apply(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(configmap(a="1", b="2"))
    kubectl("apply", "-f", str(manifest), "-n", ns)
    assert ("kubectl-client-side-apply", "Update") in managers(kubectl, ns, "cm", "cfg")

    manifest.write_text(configmap(a="2", b="2"))
    kubectl("apply", "--server-side", "-f", str(manifest), "-n", ns)  # no conflict with its own past
    owners = managers(kubectl, ns, "cm", "cfg")
    assert ("kubectl-client-side-apply", "Update") not in owners  # kubectl moved its fields to the applier
    assert owners[("kubectl", "Apply")]["fieldsV1"]["f:data"] == {"f:a": {}, "f:b": {}}

    manifest.write_text(configmap(a="2"))
    kubectl("apply", "--server-side", "-f", str(manifest), "-n", ns)
    assert yaml.safe_load(kubectl("get", "cm", "cfg", "-n", ns, "-o", "yaml").stdout)["data"] == {"a": "2"}


def test_writers_are_named_as_kube_names_them(kubectl: Kubectl, ns: str, api: k8s.ApiClient) -> None:
    kubectl("create", "configmap", "cfg", "--from-literal=a=1", "-n", ns)
    kubectl("label", "configmap", "cfg", "team=x", "-n", ns)
    owners = managers(kubectl, ns, "cm", "cfg")
    assert owners[("kubectl-create", "Update")]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    assert owners[("kubectl-label", "Update")]["fieldsV1"] == {"f:metadata": {"f:labels": {".": {}, "f:team": {}}}}

    core = k8s.CoreV1Api(api)
    core.create_namespaced_config_map(ns, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="py"), data={"a": "1"}))
    entry = core.read_namespaced_config_map("py", ns).metadata.managed_fields[0]
    assert (entry.manager, entry.operation) == ("OpenAPI-Generator", "Update")


def test_python_client_applies(api: k8s.ApiClient, ns: str) -> None:
    core = k8s.CoreV1Api(api)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}}
    created = core.patch_namespaced_config_map("cfg", ns, body, field_manager="mine", _content_type=APPLY)
    assert created.data == {"a": "1"}
    assert created.metadata.managed_fields[0].operation == "Apply"

    resources = dynamic.DynamicClient(api).resources.get(api_version="v1", kind="ConfigMap")
    theirs = {**body, "data": {"a": "2"}}
    with pytest.raises(dynamic.exceptions.ConflictError):
        dynamic.DynamicClient(api).server_side_apply(resources, theirs, namespace=ns, field_manager="theirs")
    forced = dynamic.DynamicClient(api).server_side_apply(resources, theirs, namespace=ns, field_manager="theirs",
                                                          force_conflicts=True)
    assert forced.data.a == "2"
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("cfg", ns, body, _content_type=APPLY)
    assert err.value.status == 422


def test_apply_errors_are_kube_statuses(client: httpx.Client, ns: str) -> None:
    url = f"/api/v1/namespaces/{ns}/configmaps/cfg"
    headers = {"Content-Type": APPLY}
    body = configmap(a="1")
    missing = client.patch(url, content=body, headers=headers)
    assert missing.status_code == 422
    assert missing.json()["message"] == ('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                                         "is required for apply patch")
    wrong_kind = client.patch(url, params={"fieldManager": "m"}, headers=headers,
                              content=body.replace("ConfigMap", "Secret"))
    assert (wrong_kind.status_code, wrong_kind.json()["message"]) == (400, "invalid object type: /v1, Kind=Secret")
    wrong_name = client.patch(f"/api/v1/namespaces/{ns}/configmaps/other", params={"fieldManager": "m"},
                              headers=headers, content=body)
    assert wrong_name.json()["message"] == "the name of the object (cfg) does not match the name on the URL (other)"
    no_ns = client.patch("/api/v1/namespaces/missing-ns/configmaps/cfg", params={"fieldManager": "m"},
                         headers=headers, content=body)
    assert (no_ns.status_code, no_ns.json()["message"]) == (404, 'namespaces "missing-ns" not found')

    created = client.patch(url, params={"fieldManager": "m"}, headers=headers, content=body)
    assert created.status_code == 201
    again = client.patch(url, params={"fieldManager": "m"}, headers=headers, content=body)
    assert again.status_code == 200 and again.json()["metadata"]["resourceVersion"] == \
        created.json()["metadata"]["resourceVersion"]  # a no-op apply writes nothing
    conflict = client.patch(url, params={"fieldManager": "other"}, headers=headers, content=configmap(a="2"))
    status = conflict.json()
    assert (conflict.status_code, status["reason"]) == (409, "Conflict")
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "m": .data.a'
    assert status["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "m"',
                                            "field": ".data.a"}]
    too_long = client.post(f"/api/v1/namespaces/{ns}/configmaps", params={"fieldManager": "x" * 129},
                           json={"metadata": {"name": "long"}})
    assert too_long.status_code == 422
    assert "fieldManager: Too long: may not be more than 128 bytes" in too_long.json()["message"]


def test_apply_to_status(client: httpx.Client, ns: str) -> None:
    deploy = yaml.safe_load(DEPLOYMENT.format(replicas=1))
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/deployments", json=deploy).status_code == 201
    status = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "status": {"observedGeneration": 1}, "spec": {"replicas": 7}}
    resp = client.patch(f"/apis/apps/v1/namespaces/{ns}/deployments/web/status", params={"fieldManager": "ctl"},
                        headers={"Content-Type": APPLY}, json=status)
    assert resp.status_code == 200, resp.text
    obj = resp.json()
    assert obj["status"]["observedGeneration"] == 1 and obj["spec"]["replicas"] == 1  # spec is not /status's
    [entry] = [e for e in obj["metadata"]["managedFields"] if e["manager"] == "ctl"]
    assert entry["subresource"] == "status" and entry["fieldsV1"] == {"f:status": {"f:observedGeneration": {}}}


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_other_kubectl_releases(version: str, api_url: str, ns: str, tmp_path: Path) -> None:
    kubectl = Kubectl(kubectl_release(version), api_url, tmp_path)
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(configmap(a="1"))
    assert kubectl("apply", "--server-side", "-f", str(manifest), "-n", ns).stdout.strip() == \
        "configmap/cfg serverside-applied"
    kubectl("patch", "cm", "cfg", "-n", ns, "-p", '{"data":{"a":"2"}}')
    manifest.write_text(configmap(a="3"))
    refused = kubectl("apply", "--server-side", "-f", str(manifest), "-n", ns, check=False)
    assert "Apply failed with 1 conflict" in refused.stderr and ".data.a" in refused.stderr
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(manifest), "-n", ns)
    assert kubectl("get", "cm", "cfg", "-n", ns, "-o", "jsonpath={.data.a}").stdout == "3"


def test_apply_to_scale_owns_the_parents_replicas(client: httpx.Client, ns: str) -> None:
    deploy = yaml.safe_load(DEPLOYMENT.format(replicas=1))
    url = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
    assert client.patch(url, params={"fieldManager": "owner"}, headers={"Content-Type": APPLY},
                        json=deploy).status_code == 201
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}, "spec": {"replicas": 4}}
    refused = client.patch(f"{url}/scale", params={"fieldManager": "hpa"}, headers={"Content-Type": APPLY},
                           json=scale)
    assert refused.status_code == 409
    assert refused.json()["message"] == 'Apply failed with 1 conflict: conflict with "owner": .spec.replicas'
    forced = client.patch(f"{url}/scale", params={"fieldManager": "hpa", "force": "true"},
                          headers={"Content-Type": APPLY}, json=scale)
    assert forced.status_code == 200 and forced.json()["spec"]["replicas"] == 4
    entries = client.get(url).json()["metadata"]["managedFields"]
    [hpa] = [e for e in entries if e["manager"] == "hpa"]
    assert (hpa["operation"], hpa["subresource"], hpa["apiVersion"]) == ("Apply", "scale", "apps/v1")
    assert hpa["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
