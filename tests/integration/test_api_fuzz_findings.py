"""The server errors schemathesis found (tests/chaos/test_openapi_fuzz.py), one request each: every one was a 500
or a dropped connection and is now kube's 400/422 or a success, and the server keeps serving.

JSON of the wrong shape is what Go's decoder rejects (400 "cannot unmarshal array into Go struct field …"), a
``null`` list item or map value is the type's zero value there (so ``[null]`` of objects is validated as
``[{}]``), query integers are int64, and a warning no header can carry is dropped, as kube-apiserver's warning
recorder drops it.
"""

from __future__ import annotations

from typing import Any

import httpx

JSON = {"Content-Type": "application/json"}


def status(resp: httpx.Response, code: int, reason: str, message: str = "") -> dict[str, Any]:
    assert resp.status_code == code, resp.text
    body: dict[str, Any] = resp.json()
    assert (body["kind"], body["reason"], body["code"]) == ("Status", reason, code)
    assert message in body["message"]
    return body


def test_delete_options_of_the_wrong_shape_are_400(client: httpx.Client, ns: str) -> None:
    assert client.post(f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": "cm"}}).status_code == 201
    for path in (f"/api/v1/namespaces/{ns}/configmaps/cm", f"/api/v1/namespaces/{ns}/configmaps"):
        resp = client.request("DELETE", path, json={"preconditions": [None, None]})
        status(resp, 400, "BadRequest", "cannot unmarshal array into Go struct field DeleteOptions.preconditions "
                                        "of type v1.Preconditions")
        resp = client.request("DELETE", path, json={"gracePeriodSeconds": "soon"})
        status(resp, 400, "BadRequest", "DeleteOptions.gracePeriodSeconds")
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/cm").status_code == 200


def test_a_limit_beyond_int64_is_400(client: httpx.Client, ns: str) -> None:
    resp = client.get(f"/apis/apps/v1/namespaces/{ns}/deployments", params={"limit": str(2**80)})
    status(resp, 400, "BadRequest", f'strconv.ParseInt: parsing "{2**80}": value out of range')  # kube's text
    assert client.get(f"/apis/apps/v1/namespaces/{ns}/deployments", params={"limit": str(2**63 - 1)}
                      ).status_code == 200


def test_null_list_items_are_zero_values(client: httpx.Client, ns: str) -> None:
    resp = client.post(f"/api/v1/namespaces/{ns}/endpoints", json={"metadata": {"name": "e"}, "subsets": [None]})
    body = status(resp, 422, "Invalid")
    assert [c["field"] for c in body["details"]["causes"]] == ["subsets[0]"]
    resp = client.post(f"/api/v1/namespaces/{ns}/secrets", json={"metadata": {"name": "s", "ownerReferences": [None]}})
    status(resp, 422, "Invalid", "must not be empty")
    assert client.get(f"/api/v1/namespaces/{ns}/secrets/s").status_code == 404


def test_null_map_values_are_zero_values(client: httpx.Client, ns: str) -> None:
    resp = client.post(f"/api/v1/namespaces/{ns}/configmaps", json={
        "metadata": {"name": "nulls", "labels": {"a": None}}, "data": {"d": None}, "binaryData": {"b": None}})
    assert resp.status_code == 201, resp.text
    cm = resp.json()
    assert (cm["metadata"]["labels"], cm["data"], cm["binaryData"]) == ({"a": ""}, {"d": ""}, {"b": ""})


def test_a_binding_of_the_wrong_shape_is_400(client: httpx.Client, ns: str) -> None:
    resp = client.post(f"/api/v1/namespaces/{ns}/pods/p/binding", json={"metadata": {"name": "p"}, "target": []})
    status(resp, 400, "BadRequest", "cannot unmarshal array into Go struct field Binding.target of type "
                                    "v1.ObjectReference")


def test_a_scale_of_the_wrong_shape_is_400(client: httpx.Client, ns: str) -> None:
    rc = {"metadata": {"name": "rc"}, "spec": {"replicas": 1, "selector": {"app": "x"}, "template": {
        "metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    assert client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=rc).status_code == 201
    path = f"/api/v1/namespaces/{ns}/replicationcontrollers/rc/scale"
    status(client.put(path, json={"metadata": {"name": "rc"}, "spec": []}), 400, "BadRequest",
           "cannot unmarshal array into Go struct field Scale.spec of type v1.ScaleSpec")
    resp = client.patch(path, content=b'{"spec": [1]}', headers={"Content-Type": "application/merge-patch+json"})
    status(resp, 400, "BadRequest", "Scale.spec")
    assert client.get(path).json()["spec"]["replicas"] == 1


def test_an_unknown_field_with_a_control_character_still_gets_its_answer(client: httpx.Client, ns: str) -> None:
    """The field name is quoted as Go's %q quotes it, so its warning carries the control character escaped."""
    body = b'{"metadata": {"name": "w"}, "\\u0015x": 1, "z": 3}'  # a control character in a field name
    resp = client.post(f"/api/v1/namespaces/{ns}/configmaps", content=body, headers=JSON)
    assert resp.status_code == 201, resp.text
    assert resp.headers.get_list("warning") == ['299 - "unknown field \\"\\\\x15x\\""',
                                                '299 - "unknown field \\"z\\""']
    resp = client.post(f"/api/v1/namespaces/{ns}/configmaps", content=b'"\\x15y": 1\nmetadata: {name: y}\n',
                       headers={"Content-Type": "application/yaml"})
    assert resp.status_code == 201, resp.text
    assert resp.headers.get_list("warning") == ['299 - "unknown field \\"\\\\x15y\\""']
    assert client.get("/healthz").text == "ok"


def test_a_token_request_with_null_metadata_and_spec(client: httpx.Client, ns: str) -> None:
    path = f"/api/v1/namespaces/{ns}/serviceaccounts/nobody/token"
    status(client.post(path, json={"metadata": None, "spec": None}), 404, "NotFound", '"nobody" not found')
    assert client.post(f"/api/v1/namespaces/{ns}/serviceaccounts", json={"metadata": {"name": "sa"}}).status_code == 201
    resp = client.post(f"/api/v1/namespaces/{ns}/serviceaccounts/sa/token", json={"metadata": None, "spec": None})
    assert resp.status_code == 201, resp.text
    assert resp.json()["status"]["token"]
