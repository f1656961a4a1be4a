"""Bad input gets a clear Kubernetes Status, nothing is written, and the server keeps serving."""

from __future__ import annotations

import httpx
import pytest

from support.builders import make_pod


def pods_path(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/pods" + (f"/{name}" if name else "")


def assert_status(resp: httpx.Response, code: int, reason: str) -> dict:
    assert resp.status_code == code, resp.text
    body = resp.json()
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    assert body["code"] == code and body["reason"] == reason
    assert body["message"]
    return body


def nothing_written(client: httpx.Client, ns: str) -> None:
    assert client.get(pods_path(ns)).json()["items"] == []
    assert client.get("/healthz").text == "ok"


def test_malformed_json_is_400(client: httpx.Client, ns: str) -> None:
    resp = client.post(pods_path(ns), content=b'{"metadata": {"name": ', headers={"Content-Type": "application/json"})
    assert_status(resp, 400, "BadRequest")
    nothing_written(client, ns)


def test_malformed_yaml_is_400(client: httpx.Client, ns: str) -> None:
    resp = client.post(pods_path(ns), content=b"metadata: [unclosed", headers={"Content-Type": "application/yaml"})
    assert_status(resp, 400, "BadRequest")
    nothing_written(client, ns)


def test_yaml_body_is_accepted(client: httpx.Client, ns: str) -> None:
    body = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: y\nspec:\n  containers:\n  - name: c\n    image: busybox\n"
    resp = client.post(pods_path(ns), content=body, headers={"Content-Type": "application/yaml"})
    assert resp.status_code == 201, resp.text


def test_wrong_kind_is_400(client: httpx.Client, ns: str) -> None:
    body = make_pod("x").build()
    body["kind"] = "Service"
    assert_status(client.post(pods_path(ns), json=body), 400, "BadRequest")
    nothing_written(client, ns)


def test_not_found(client: httpx.Client, ns: str) -> None:
    body = assert_status(client.get(pods_path(ns, "nope")), 404, "NotFound")
    assert body["message"] == 'pods "nope" not found'
    assert body["details"] == {"name": "nope", "kind": "pods"}
    assert_status(client.get("/api/v1/namespaces/default/widgets"), 404, "NotFound")
    assert_status(client.get("/apis/nothing.example.com/v1/things"), 404, "NotFound")


def test_create_in_missing_namespace_is_404(client: httpx.Client) -> None:
    body = assert_status(client.post(pods_path("no-such-ns"), json=make_pod("x").build()), 404, "NotFound")
    assert body["message"] == 'namespaces "no-such-ns" not found'


def test_method_not_allowed(client: httpx.Client, ns: str) -> None:
    assert_status(client.put(pods_path(ns), json={}), 405, "MethodNotAllowed")


def test_already_exists(client: httpx.Client, ns: str) -> None:
    assert client.post(pods_path(ns), json=make_pod("dup").build()).status_code == 201
    body = assert_status(client.post(pods_path(ns), json=make_pod("dup").build()), 409, "AlreadyExists")
    assert body["message"] == 'pods "dup" already exists'


def test_body_over_3_mib_is_413(client: httpx.Client, ns: str) -> None:
    pod = make_pod("big").build()
    pod["metadata"]["annotations"] = {"big": "x" * (3 * 1024 * 1024 + 10)}
    assert_status(client.post(pods_path(ns), json=pod), 413, "RequestEntityTooLarge")
    nothing_written(client, ns)


def test_unsupported_content_type_is_415(client: httpx.Client, ns: str) -> None:
    resp = client.post(pods_path(ns), content=b"<pod/>", headers={"Content-Type": "application/xml"})
    assert_status(resp, 415, "UnsupportedMediaType")
    client.post(pods_path(ns), json=make_pod("p").build())
    resp = client.patch(pods_path(ns, "p"), json={"metadata": {"labels": {"a": "b"}}},
                        headers={"Content-Type": "application/json"})
    assert_status(resp, 415, "UnsupportedMediaType")


def test_invalid_pod_is_422_with_causes(client: httpx.Client, ns: str) -> None:
    pod = make_pod("Bad_Name").build()
    pod["spec"]["containers"][0].pop("image")
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 70000}]
    body = assert_status(client.post(pods_path(ns), json=pod), 422, "Invalid")
    fields = {c["field"] for c in body["details"]["causes"]}
    assert "metadata.name" in fields
    assert "spec.containers[0].image" in fields
    assert "spec.containers[0].ports[0].containerPort" in fields
    assert body["message"].startswith('Pod "Bad_Name" is invalid: ')
    nothing_written(client, ns)


def test_invalid_label_selector_is_400(client: httpx.Client, ns: str) -> None:
    assert_status(client.get(pods_path(ns), params={"labelSelector": "a in (b"}), 400, "BadRequest")


@pytest.mark.parametrize("patch", [b"[{\"op\": \"nonsense\", \"path\": \"/x\"}]",
                                   b"[{\"op\": \"test\", \"path\": \"/metadata/name\", \"value\": \"other\"}]"])
def test_failed_json_patch_writes_nothing(client: httpx.Client, ns: str, patch: bytes) -> None:
    created = client.post(pods_path(ns), json=make_pod("jp").build()).json()
    resp = client.patch(pods_path(ns, "jp"), content=patch,
                        headers={"Content-Type": "application/json-patch+json"})
    assert 400 <= resp.status_code < 500, resp.text
    assert resp.json()["kind"] == "Status"
    after = client.get(pods_path(ns, "jp")).json()
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_server_keeps_serving_after_a_burst_of_bad_requests(client: httpx.Client, ns: str) -> None:
    for body in [b"", b"null", b"[]", b"42", b'{"metadata": 5}', b"\xff\xfe", b'{"spec": {"containers": 7}}']:
        resp = client.post(pods_path(ns), content=body, headers={"Content-Type": "application/json"})
        assert 400 <= resp.status_code < 500, (body, resp.text)
        assert resp.json()["kind"] == "Status"
    nothing_written(client, ns)
    assert client.post(pods_path(ns), json=make_pod("ok").build()).status_code == 201


@pytest.mark.parametrize("params", [{"resourceVersion": "abc"}, {"resourceVersion": "abc", "watch": "true"},
                                    {"limit": "ten"}, {"timeoutSeconds": "abc"}])
def test_bad_query_parameters_are_400(client: httpx.Client, ns: str, params: dict[str, str]) -> None:
    assert_status(client.get(pods_path(ns), params=params), 400, "BadRequest")
    client.post(pods_path(ns), json=make_pod("q").build())
    if "resourceVersion" in params:
        assert_status(client.get(pods_path(ns, "q"), params={"resourceVersion": "abc"}), 400, "BadRequest")


def test_status_bodies_are_kube_apiservers_bytes(client: httpx.Client, ns: str) -> None:
    """Compact, metav1.Status's field order (code last), Go's escapes of < > &, and the encoder's newline."""
    resp = client.get(pods_path(ns, "nope"))
    assert resp.content == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                            b'"message":"pods \\"nope\\" not found","reason":"NotFound",'
                            b'"details":{"name":"nope","kind":"pods"},"code":404}\n')
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a<b&c>"}}
    resp = client.post(f"/api/v1/namespaces/{ns}/configmaps", json=bad)
    assert resp.status_code == 422
    assert resp.content.startswith(b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                                   b'"message":"ConfigMap \\"a\\u003cb\\u0026c\\u003e\\" is invalid: ')
    assert b"<" not in resp.content and resp.content.endswith(b',"code":422}\n')
    assert resp.json()["details"]["name"] == "a<b&c>"
