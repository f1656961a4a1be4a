"""The OpenAPI documents and their endpoints, checked the way kubectl reads them."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml
from starlette.applications import Starlette

from apiserver.handlers.openapi import negotiate, routes
from apiserver.openapi import openapiv2_pb2, swagger, v2_json, v2_protobuf, v3_discovery, v3_documents

ROOT = Path(__file__).resolve().parents[2]
CORE, META = "io.k8s.api.core.v1", "io.k8s.apimachinery.pkg.apis.meta.v1"
SERVED_KINDS = {
    ("", "v1", "Pod"): f"{CORE}.Pod", ("", "v1", "PodList"): f"{CORE}.PodList",
    ("", "v1", "Node"): f"{CORE}.Node", ("", "v1", "NodeList"): f"{CORE}.NodeList",
    ("", "v1", "Namespace"): f"{CORE}.Namespace", ("", "v1", "NamespaceList"): f"{CORE}.NamespaceList",
    ("", "v1", "ReplicationController"): f"{CORE}.ReplicationController",
    ("", "v1", "ReplicationControllerList"): f"{CORE}.ReplicationControllerList",
    ("", "v1", "Event"): f"{CORE}.Event", ("", "v1", "EventList"): f"{CORE}.EventList",
    ("", "v1", "Binding"): f"{CORE}.Binding",
    ("", "v1", "Service"): f"{CORE}.Service", ("", "v1", "ServiceList"): f"{CORE}.ServiceList",
    ("", "v1", "ConfigMap"): f"{CORE}.ConfigMap", ("", "v1", "ConfigMapList"): f"{CORE}.ConfigMapList",
    ("autoscaling", "v1", "Scale"): "io.k8s.api.autoscaling.v1.Scale",
    ("policy", "v1", "Eviction"): "io.k8s.api.policy.v1.Eviction",
    ("apps", "v1", "ReplicaSet"): "io.k8s.api.apps.v1.ReplicaSet",
    ("apps", "v1", "ReplicaSetList"): "io.k8s.api.apps.v1.ReplicaSetList",
    ("apps", "v1", "Deployment"): "io.k8s.api.apps.v1.Deployment",
    ("apps", "v1", "DeploymentList"): "io.k8s.api.apps.v1.DeploymentList",
    ("coordination.k8s.io", "v1", "Lease"): "io.k8s.api.coordination.v1.Lease",
    ("coordination.k8s.io", "v1", "LeaseList"): "io.k8s.api.coordination.v1.LeaseList",
    ("", "v1", "Status"): f"{META}.Status", ("", "v1", "DeleteOptions"): f"{META}.DeleteOptions",
    ("", "v1", "WatchEvent"): f"{META}.WatchEvent", ("", "v1", "APIResourceList"): f"{META}.APIResourceList",
}
GROUP_VERSIONS = ["api/v1", "apis/apps/v1", "apis/autoscaling/v1", "apis/coordination.k8s.io/v1", "apis/policy/v1"]
WRITES = {"post", "put", "patch"}


def gvks(schema: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(g["group"], g["version"], g["kind"]) for g in schema.get("x-kubernetes-group-version-kind", [])}


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, item in document["paths"].items() for method, op in item.items()
            if method != "parameters"]


def refs(tree: Any) -> set[str]:
    return set(re.findall(r'"\$ref": ?"([^"]+)"', json.dumps(tree)))


# --- v2 document -------------------------------------------------------------------------------------------------

def test_every_served_kind_is_defined_under_its_kubernetes_name_with_its_gvk() -> None:
    definitions = swagger()["definitions"]
    for gvk, name in SERVED_KINDS.items():
        assert name in definitions, name
        assert gvk in gvks(definitions[name]), name


def test_every_reference_resolves() -> None:
    document = swagger()
    names = {f"#/definitions/{n}" for n in document["definitions"]}
    assert refs(document) <= names
    assert f"#/definitions/{CORE}.PodSpec" in refs(document["definitions"][f"{CORE}.Pod"])


def test_int_or_string_and_quantity_are_spelled_as_kubernetes_spells_them() -> None:
    definitions = swagger()["definitions"]
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    assert definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"] == "string"
    surge = definitions["io.k8s.api.apps.v1.RollingUpdateDeployment"]["properties"]["maxSurge"]
    assert surge["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"
    limits = definitions[f"{CORE}.ResourceRequirements"]["properties"]["limits"]
    assert limits["additionalProperties"] == {"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"}
    created = definitions[f"{META}.ObjectMeta"]["properties"]["creationTimestamp"]
    assert created["$ref"] == f"#/definitions/{META}.Time"


def test_models_carry_descriptions_required_fields_and_patch_strategies() -> None:
    definitions = swagger()["definitions"]
    container = definitions[f"{CORE}.Container"]
    assert container["description"] == "A single application container that you want to run within a pod."
    assert container["required"] == ["name"]
    containers = definitions[f"{CORE}.PodSpec"]["properties"]["containers"]
    assert containers["items"] == {"$ref": f"#/definitions/{CORE}.Container"}
    assert (containers["x-kubernetes-patch-strategy"], containers["x-kubernetes-patch-merge-key"]) == ("merge", "name")
    assert definitions[f"{CORE}.Pod"]["properties"]["metadata"]["description"].startswith("Standard object's metadata")


@pytest.mark.parametrize("path", [
    "/api/v1/namespaces/{namespace}/pods", "/api/v1/pods", "/api/v1/namespaces/{namespace}/pods/{name}",
    "/api/v1/namespaces/{namespace}/pods/{name}/status", "/api/v1/namespaces/{namespace}/pods/{name}/binding",
    "/api/v1/namespaces/{namespace}/pods/{name}/eviction", "/api/v1/namespaces/{namespace}/pods/{name}/log",
    "/api/v1/namespaces/{namespace}/pods/{name}/exec", "/api/v1/watch/namespaces/{namespace}/pods",
    "/api/v1/nodes/{name}/status", "/api/v1/namespaces/{namespace}/bindings",
    "/api/v1/namespaces/{namespace}/replicationcontrollers/{name}/scale",
    "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "/apis/apps/v1/replicasets",
    "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", "/api/v1/", "/apis/", "/version/",
])
def test_served_paths_exist(path: str) -> None:
    assert path in swagger()["paths"]


def test_writes_take_dry_run_field_manager_and_field_validation_on_the_operation() -> None:
    writes = [(p, m, op) for p, m, op in operations(swagger()) if m in WRITES and op.get("parameters")]
    assert len(writes) > 30
    for path, method, op in writes:
        names = {p["name"] for p in op["parameters"] + swagger()["paths"][path].get("parameters", [])}
        assert {"dryRun", "fieldManager", "fieldValidation"} <= names, (path, method)
    for path, method, op in operations(swagger()):
        if method == "patch" and op.get("x-kubernetes-action") != "connect":  # a proxy's PATCH carries no object
            assert "fieldValidation" in {p["name"] for p in op["parameters"]}, path  # kubectl looks only here
            assert op["consumes"] == ["application/json-patch+json", "application/merge-patch+json",
                                      "application/strategic-merge-patch+json"]


def test_operations_name_their_action_and_kind() -> None:
    ops = {op["operationId"]: op for _, _, op in operations(swagger())}
    assert ops["createCoreV1NamespacedPod"]["x-kubernetes-action"] == "post"
    assert ops["patchCoreV1NamespacedPodStatus"]["x-kubernetes-group-version-kind"] == {
        "group": "", "kind": "Pod", "version": "v1"}
    assert ops["replaceAppsV1NamespacedDeploymentScale"]["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling", "kind": "Scale", "version": "v1"}
    assert ops["createCoreV1NamespacedPodEviction"]["x-kubernetes-group-version-kind"]["group"] == "policy"
    assert ops["listCoreV1PodForAllNamespaces"]["x-kubernetes-action"] == "list"
    assert ops["watchCoreV1NamespacedPodList"]["x-kubernetes-action"] == "watchlist"
    assert ops["connectGetCoreV1NamespacedPodExec"]["x-kubernetes-action"] == "connect"
    assert ops["readCoreV1NamespacedPodLog"]["responses"]["200"]["schema"] == {"type": "string"}
    assert ops["deleteCoreV1NamespacedPod"]["responses"]["200"]["schema"] == {"$ref": f"#/definitions/{CORE}.Pod"}


def test_committed_document_is_what_the_generator_writes() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_openapi.py"), "--check"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


# --- protobuf ----------------------------------------------------------------------------------------------------

def test_protobuf_round_trips_through_gnostic_document() -> None:
    document = openapiv2_pb2.Document()
    document.ParseFromString(v2_protobuf().body)
    assert document.SerializeToString(deterministic=True) == v2_protobuf().body
    assert document.swagger == "2.0"
    names = [d.name for d in document.definitions.additional_properties]
    assert names == list(swagger()["definitions"])
    assert [p.name for p in document.paths.path] == list(swagger()["paths"])


def test_protobuf_keeps_vendor_extensions_as_yaml_and_parameters_typed() -> None:
    document = openapiv2_pb2.Document.FromString(v2_protobuf().body)
    pod = next(d.value for d in document.definitions.additional_properties if d.name == f"{CORE}.Pod")
    extension = {e.name: yaml.safe_load(e.value.yaml) for e in pod.vendor_extension}
    assert extension["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    spec = next(p.value for p in pod.properties.additional_properties if p.name == "spec")
    assert spec._ref == f"#/definitions/{CORE}.PodSpec"

    item = next(p.value for p in document.paths.path if p.name == "/api/v1/namespaces/{namespace}/pods/{name}")
    params = [p.parameter for p in item.patch.parameters]
    assert params[0].body_parameter.schema._ref == f"#/definitions/{META}.Patch"
    queries = {p.non_body_parameter.query_parameter_sub_schema.name: p.non_body_parameter.query_parameter_sub_schema
               for p in params[1:]}
    assert queries["fieldValidation"].type == "string"
    assert queries["force"].type == "boolean"
    path_names = [p.parameter.non_body_parameter.path_parameter_sub_schema.name for p in item.parameters[:2]]
    assert path_names == ["name", "namespace"]


def test_protobuf_schema_shapes() -> None:
    document = openapiv2_pb2.Document.FromString(v2_protobuf().body)
    spec = next(d.value for d in document.definitions.additional_properties if d.name == f"{CORE}.PodSpec")
    props = {p.name: p.value for p in spec.properties.additional_properties}
    assert list(props["containers"].type.value) == ["array"]
    assert props["containers"].items.schema[0]._ref == f"#/definitions/{CORE}.Container"
    assert props["nodeSelector"].additional_properties.schema.type.value == ["string"]
    assert "containers" in spec.required


# --- v3 documents ------------------------------------------------------------------------------------------------

def test_v3_discovery_lists_each_group_version_with_its_hash() -> None:
    paths = orjson.loads(v3_discovery().body)["paths"]
    for gv in GROUP_VERSIONS:
        assert paths[gv]["serverRelativeURL"] == f"/openapi/v3/{gv}?hash={v3_documents()[gv].etag}"


def test_v3_documents_are_self_contained_openapi_3() -> None:
    for gv in GROUP_VERSIONS:
        document = orjson.loads(v3_documents()[gv].body)
        assert document["openapi"].startswith("3.")
        names = {f"#/components/schemas/{n}" for n in document["components"]["schemas"]}
        assert refs(document) <= names, gv
        assert all(path.startswith(f"/{gv}/") for path in document["paths"]), gv


def test_v3_kubectl_finds_field_validation_on_patch_of_each_kind() -> None:
    """kubectl's queryParamVerifierV3: the PATCH operation carrying the kind's GVK lists fieldValidation."""
    for gv, kinds in {"api/v1": ["Pod", "Node", "Namespace", "Service", "ConfigMap", "Event"],
                      "apis/apps/v1": ["Deployment", "ReplicaSet"], "apis/coordination.k8s.io/v1": ["Lease"]}.items():
        document = orjson.loads(v3_documents()[gv].body)
        for kind in kinds:
            patches = [op for _, m, op in operations(document) if m == "patch"
                       and op["x-kubernetes-group-version-kind"]["kind"] == kind]
            assert patches, (gv, kind)
            for op in patches:
                assert "fieldValidation" in {p["name"] for p in op["parameters"]}, (gv, kind)


def test_v3_shapes_follow_kube_openapi() -> None:
    document = orjson.loads(v3_documents()["apis/apps/v1"].body)
    schemas = document["components"]["schemas"]
    assert gvks(schemas["io.k8s.api.apps.v1.Deployment"]) == {("apps", "v1", "Deployment")}
    spec = schemas["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]
    assert spec["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}]
    assert spec["description"] == "Specification of the desired behavior of the Deployment."
    int_or_string = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string["oneOf"] == [{"type": "integer"}, {"type": "string"}] and "type" not in int_or_string
    create = document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["post"]
    assert create["requestBody"]["content"]["*/*"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.apps.v1.Deployment"}
    assert create["requestBody"]["required"] is True
    assert set(create["responses"]) == {"200", "201", "202", "401"}
    params = document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["parameters"]
    assert params[0] == {"description": "name of the Deployment", "in": "path", "name": "name", "required": True,
                         "schema": {"type": "string", "uniqueItems": True}}


# --- endpoints ---------------------------------------------------------------------------------------------------

@pytest.fixture()
async def http() -> AsyncIterator[httpx.AsyncClient]:
    app = Starlette(routes=routes)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        yield client


@pytest.mark.parametrize("accept", ["application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
                                    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"])
async def test_v2_protobuf_as_client_go_asks(http: httpx.AsyncClient, accept: str) -> None:
    response = await http.get("/openapi/v2", headers={"Accept": accept})
    assert response.status_code == 200
    # the "@" spelling is not a valid Content-Type for Go's mime parser: kube-openapi answers with the dotted one
    assert response.headers["content-type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    assert openapiv2_pb2.Document.FromString(response.content).swagger == "2.0"
    assert response.headers["etag"] == f'"{v2_protobuf().etag}"'


async def test_v2_json_by_default_and_406_for_other_types(http: httpx.AsyncClient) -> None:
    response = await http.get("/openapi/v2", headers={"Accept": "application/json"})
    assert response.headers["content-type"] == "application/json"
    assert response.json()["definitions"][f"{CORE}.Pod"] == swagger()["definitions"][f"{CORE}.Pod"]
    assert (await http.get("/openapi/v2", headers={"Accept": "*/*"})).content == v2_json().body
    refused = await http.get("/openapi/v2", headers={"Accept": "text/html"})
    assert refused.status_code == 406
    assert refused.json()["reason"] == "NotAcceptable" and refused.json()["kind"] == "Status"


async def test_etag_revalidation_answers_304(http: httpx.AsyncClient) -> None:
    first = await http.get("/openapi/v3")
    again = await http.get("/openapi/v3", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    changed = await http.get("/openapi/v3", headers={"If-None-Match": '"OLD"'})
    assert changed.status_code == 200


async def test_v3_hash_pins_an_immutable_document(http: httpx.AsyncClient) -> None:
    url = (await http.get("/openapi/v3")).json()["paths"]["api/v1"]["serverRelativeURL"]
    response = await http.get(url)
    assert response.status_code == 200
    assert response.headers["cache-control"] == "public, immutable"
    assert "expires" in response.headers
    assert "io.k8s.api.core.v1.Pod" in response.json()["components"]["schemas"]
    unpinned = await http.get("/openapi/v3/api/v1")
    assert unpinned.headers["cache-control"] == "no-cache, private"
    stale = await http.get("/openapi/v3/api/v1?hash=0123")
    assert stale.status_code == 301 and stale.headers["location"] == url


async def test_v3_unknown_group_version_is_a_404_status(http: httpx.AsyncClient) -> None:
    response = await http.get("/openapi/v3/apis/resource.k8s.io/v1beta1")
    assert response.status_code == 404
    assert response.json()["reason"] == "NotFound" and response.json()["kind"] == "Status"


async def test_gzip_when_accepted(http: httpx.AsyncClient) -> None:
    response = await http.get("/openapi/v3/apis/apps/v1", headers={"Accept-Encoding": "gzip"})
    assert response.headers["content-encoding"] == "gzip"
    assert "Accept-Encoding" in response.headers["vary"]
    assert response.content == v3_documents()["apis/apps/v1"].body  # httpx decodes it
    assert gzip.decompress(v3_documents()["apis/apps/v1"].gzipped) == v3_documents()["apis/apps/v1"].body
    plain = await http.get("/openapi/v3/apis/apps/v1", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers


@pytest.mark.parametrize(("accept", "expected"), [
    ("", "a/json"), ("*/*", "a/json"), ("a/*", "a/json"), ("a/proto", "a/proto"),
    ("a/json;q=0.5, a/proto", "a/proto"), ("text/html", None), ("a/json;q=0", None),
])
def test_negotiate(accept: str, expected: str | None) -> None:
    assert negotiate(accept, ["a/json", "a/proto"]) == expected
