"""Webhook conversion of custom resources against the real apiserver: a test's own HTTPS conversion webhook (a CA
and certificate made here, as for admission webhooks) converts Widgets between v1 (``spec.size``) and v2
(``spec.replicas``, the storage version); kubectl 1.32, the Python client's CustomObjectsApi and watches read
either version; a failing webhook's error is kube's text."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from conftest import Kubectl
from support.controllers import ControllerManager
from support.crds import CRDS, established, new_group
from support.wait import wait_for
from support.watch import WatchReader
from support.webhook import CertificateAuthority, Review, WebhookServer, allow


def answer(path: str, review: Review) -> dict[str, Any]:
    """/convert renames v1's ``spec.size`` to v2's ``spec.replicas`` and back; /fail refuses every conversion;
    /admit is a validating admission webhook allowing everything."""
    request = review["request"]
    if path == "/admit":
        return allow(request["uid"])
    response: dict[str, Any] = {"uid": request["uid"], "result": {"status": "Success"}}
    if path == "/fail":
        response["result"] = {"status": "Failure", "message": "no conversions today"}
    else:
        response["convertedObjects"] = [convert(obj, request["desiredAPIVersion"]) for obj in request["objects"]]
    return {"apiVersion": review["apiVersion"], "kind": "ConversionReview", "response": response}


def convert(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    spec = out.setdefault("spec", {})
    if api_version.endswith("/v2") and "size" in spec:
        spec["replicas"] = spec.pop("size")
    elif api_version.endswith("/v1") and "replicas" in spec:
        spec["size"] = spec.pop("replicas")
    out["apiVersion"] = api_version
    out["metadata"].setdefault("labels", {})["converted-to"] = api_version.rsplit("/", 1)[1]
    return out


def version(name: str, field: str, storage: bool) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        field: {"type": "integer"}, "image": {"type": "string"}}}}}
    return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": schema},
            "additionalPrinterColumns": [{"name": field.capitalize(), "type": "integer",
                                          "jsonPath": f".spec.{field}"}]}


def widget_crd(group: str, client_config: dict[str, Any], review_versions: list[str] | None = None,
               storage: str = "v2") -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [version("v1", "size", storage == "v1"),
                                  version("v2", "replicas", storage == "v2")],
                     "conversion": {"strategy": "Webhook", "webhook": {
                         "clientConfig": client_config, "conversionReviewVersions": review_versions or ["v1"]}}}}


def create_crd(client: httpx.Client, crd: dict[str, Any]) -> None:
    resp = client.post(CRDS, json=crd)
    assert resp.status_code == 201, resp.text
    name, group = crd["metadata"]["name"], crd["spec"]["group"]
    wait_for(lambda: established(client, name), 10, f"{name} Established")
    wait_for(lambda: all(client.get(f"/apis/{group}/{v}").status_code == 200 for v in ("v1", "v2")), 10, "served")


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority()


@pytest.fixture(scope="module")
def server(ca: CertificateAuthority) -> Iterator[WebhookServer]:
    with WebhookServer(answer, ca, ["converter.example.svc"]) as s:
        yield s


@pytest.fixture(scope="module")
def group(api_url: str, server: WebhookServer, ca: CertificateAuthority) -> Iterator[str]:
    """The module's Widget CRD, converted by the module's webhook."""
    group = new_group()
    with httpx.Client(base_url=api_url, timeout=30) as c:
        create_crd(c, widget_crd(group, {"url": server.url("/convert"), "caBundle": ca.bundle}))
        yield group
        c.delete(f"{CRDS}/widgets.{group}")


def widgets(group: str, version: str, ns: str, name: str = "") -> str:
    return f"/apis/{group}/{version}/namespaces/{ns}/widgets" + (f"/{name}" if name else "")


def test_objects_are_stored_in_the_storage_version_and_read_in_any(client: httpx.Client, group: str, ns: str,
                                                                    server: WebhookServer) -> None:
    body = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3}}
    created = client.post(widgets(group, "v1", ns), json=body)
    assert created.status_code == 201, created.text
    assert created.json()["apiVersion"] == f"{group}/v1" and created.json()["spec"] == {"size": 3}
    review = [r for r in server.received("/convert")
              if r["request"]["desiredAPIVersion"] == f"{group}/v2"][-1]
    assert review["apiVersion"] == "apiextensions.k8s.io/v1" and review["kind"] == "ConversionReview"
    assert review["request"]["objects"][0]["spec"] == {"size": 3}

    v2 = client.get(widgets(group, "v2", ns, "w1")).json()
    assert v2["apiVersion"] == f"{group}/v2" and v2["spec"] == {"replicas": 3}
    assert v2["metadata"]["labels"] == {"converted-to": "v2"}  # the webhook's labels are kept
    v1 = client.get(widgets(group, "v1", ns, "w1")).json()
    assert v1["spec"] == {"size": 3} and v1["metadata"]["uid"] == v2["metadata"]["uid"]
    listed = client.get(widgets(group, "v1", ns)).json()
    assert listed["apiVersion"] == f"{group}/v1" and [i["spec"] for i in listed["items"]] == [{"size": 3}]

    # Same version: no call. Reading v2 (the storage version) many times does not reach the webhook.
    calls = len(server.reviews)
    for _ in range(3):
        assert client.get(widgets(group, "v2", ns, "w1")).status_code == 200
    assert len(server.reviews) == calls

    # Patches and server-side apply of v1 go through the conversion both ways.
    resp = client.patch(widgets(group, "v1", ns, "w1"), json={"spec": {"size": 5}},
                        headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 200 and resp.json()["spec"] == {"size": 5}, resp.text
    applied = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1"},
               "spec": {"size": 5, "image": "nginx"}}
    resp = client.patch(widgets(group, "v1", ns, "w1"), content=yaml.safe_dump(applied),
                        params={"fieldManager": "test", "force": "true"},
                        headers={"Content-Type": "application/apply-patch+yaml"})
    assert resp.status_code == 200 and resp.json()["spec"] == {"size": 5, "image": "nginx"}, resp.text
    assert client.get(widgets(group, "v2", ns, "w1")).json()["spec"] == {"replicas": 5, "image": "nginx"}

    crd = client.get(f"{CRDS}/widgets.{group}").json()
    assert crd["status"]["storedVersions"] == ["v2"]
    assert client.delete(widgets(group, "v1", ns)).status_code == 200  # deletecollection
    assert client.get(widgets(group, "v2", ns)).json()["items"] == []


def test_kubectl_gets_each_version_with_its_columns(kubectl: Kubectl, client: httpx.Client, group: str,
                                                    ns: str, tmp_path: Path) -> None:
    def write(size: int) -> str:
        path = tmp_path / "w.yaml"
        path.write_text(yaml.safe_dump({"apiVersion": f"{group}/v1", "kind": "Widget",
                                        "metadata": {"name": "kw", "namespace": ns}, "spec": {"size": size}}))
        return str(path)

    assert f"widget.{group}/kw created" in kubectl("apply", "-f", write(2)).stdout
    v1 = kubectl("get", f"widgets.v1.{group}", "-n", ns).stdout.splitlines()
    assert v1[0].split() == ["NAME", "SIZE"] and v1[1].split() == ["kw", "2"]
    v2 = kubectl("get", f"widgets.v2.{group}", "-n", ns).stdout.splitlines()
    assert v2[0].split() == ["NAME", "REPLICAS"] and v2[1].split() == ["kw", "2"]
    out = kubectl("get", f"widgets.v2.{group}", "kw", "-n", ns, "-o", "jsonpath={.spec.replicas}").stdout
    assert out == "2"
    assert f"widget.{group}/kw configured" in kubectl("apply", "-f", write(4)).stdout
    assert client.get(widgets(group, "v2", ns, "kw")).json()["spec"]["replicas"] == 4
    kubectl("delete", f"widgets.v1.{group}", "kw", "-n", ns)


def test_watch_of_v1_sees_objects_written_in_v2(api_url: str, client: httpx.Client, group: str, ns: str) -> None:
    watch = WatchReader(api_url, widgets(group, "v1", ns), {"resourceVersion": "0"})
    try:
        body = {"apiVersion": f"{group}/v2", "kind": "Widget", "metadata": {"name": "ww"}, "spec": {"replicas": 7}}
        assert client.post(widgets(group, "v2", ns), json=body).status_code == 201
        event = watch.next()
        assert event is not None and event["type"] == "ADDED"
        assert event["object"]["apiVersion"] == f"{group}/v1" and event["object"]["spec"] == {"size": 7}
        resp = client.patch(widgets(group, "v2", ns, "ww"), json={"spec": {"replicas": 8}},
                            headers={"Content-Type": "application/merge-patch+json"})
        assert resp.status_code == 200, resp.text
        event = watch.next()
        assert event is not None and event["type"] == "MODIFIED" and event["object"]["spec"] == {"size": 8}
    finally:
        watch.close()


def test_python_custom_objects_api(api: Any, group: str, ns: str) -> None:
    from kubernetes import client as k8s

    custom = k8s.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(group, "v1", ns, "widgets", {
        "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "py"}, "spec": {"size": 1}})
    assert custom.get_namespaced_custom_object(group, "v2", ns, "widgets", "py")["spec"] == {"replicas": 1}
    custom.patch_namespaced_custom_object(group, "v2", ns, "widgets", "py", {"spec": {"replicas": 6}})
    items = custom.list_namespaced_custom_object(group, "v1", ns, "widgets")["items"]
    assert [(i["apiVersion"], i["spec"]) for i in items] == [(f"{group}/v1", {"size": 6})]
    custom.delete_namespaced_custom_object(group, "v1", ns, "widgets", "py")


def test_a_failing_webhook_is_kubes_internal_error(client: httpx.Client, server: WebhookServer,
                                                   ca: CertificateAuthority, ns: str, kubectl: Kubectl) -> None:
    group = new_group()
    create_crd(client, widget_crd(group, {"url": server.url("/fail"), "caBundle": ca.bundle}))
    try:
        body = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "nope"}, "spec": {"size": 1}}
        resp = client.post(widgets(group, "v1", ns), json=body)
        assert resp.status_code == 500, resp.text
        status = resp.json()
        assert status["reason"] == "InternalError"
        assert status["message"] == (f"Internal error occurred: conversion webhook for {group}/v1, Kind=Widget "
                                     f"failed: no conversions today")
        # The storage version needs no webhook; the other version's watch, list and get fail with its error.
        watch = WatchReader(str(client.base_url), widgets(group, "v1", ns), {"resourceVersion": "0"})
        body = {"apiVersion": f"{group}/v2", "kind": "Widget", "metadata": {"name": "yes"}, "spec": {"replicas": 1}}
        assert client.post(widgets(group, "v2", ns), json=body).status_code == 201
        try:
            event = watch.next()
            assert event is not None and event["type"] == "ERROR", event
            assert event["object"]["code"] == 500 and event["object"]["reason"] == "InternalError"
            assert "Kind=Widget failed: no conversions today" in event["object"]["message"]
            assert watch.next() is None  # the stream ends
        finally:
            watch.close()
        assert [i["metadata"]["name"] for i in client.get(widgets(group, "v2", ns)).json()["items"]] == ["yes"]
        for path in (widgets(group, "v1", ns), widgets(group, "v1", ns, "yes")):
            resp = client.get(path)
            assert resp.status_code == 500 and "Kind=Widget failed: no conversions today" in resp.text, resp.text
        failed = kubectl("get", f"widgets.v1.{group}", "-n", ns, check=False)
        assert failed.returncode != 0
        assert (f"Error from server (InternalError): Internal error occurred: conversion webhook for "
                f"{group}/v2, Kind=Widget failed: no conversions today") in failed.stderr

        # A webhook nobody listens on: client-go's dial error. Then the webhook is fixed, and v1 reads recover.
        def point_at(url: str, review_versions: list[str]) -> None:
            resp = client.patch(f"{CRDS}/widgets.{group}", json={"spec": {"conversion": {"webhook": {
                "clientConfig": {"url": url, "caBundle": ca.bundle},
                "conversionReviewVersions": review_versions}}}},
                headers={"Content-Type": "application/merge-patch+json"})
            assert resp.status_code == 200, resp.text

        point_at("https://127.0.0.1:1/convert", ["v1"])
        wait_for(lambda: "dial tcp 127.0.0.1:1: connect: connection refused" in client.get(
            widgets(group, "v1", ns, "yes")).text, 10, "the CRD's new webhook")
        assert 'failed: Post "https://127.0.0.1:1/convert?timeout=30s": dial tcp' in \
            client.get(widgets(group, "v1", ns, "yes")).json()["message"]
        point_at(server.url("/convert"), ["v1beta1", "v1"])
        wait_for(lambda: client.get(widgets(group, "v1", ns)).status_code == 200, 10, "v1 served again")
        assert [i["spec"] for i in client.get(widgets(group, "v1", ns)).json()["items"]] == [{"size": 1}]
        last = [r for r in server.received("/convert") if r["request"]["desiredAPIVersion"] == f"{group}/v1"][-1]
        assert last["apiVersion"] == "apiextensions.k8s.io/v1beta1"  # the first review version offered
    finally:
        client.delete(f"{CRDS}/widgets.{group}")


@pytest.mark.parametrize(("conversion", "message"), [
    ({"strategy": "Webhook"},
     "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"),
    ({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://example.com/convert"}}},
     "spec.conversion.conversionReviewVersions: Required value"),
    ({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://example.com/convert"},
                                         "conversionReviewVersions": ["v2"]}},
     "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme"),
    ({"strategy": "None", "webhook": {"clientConfig": {"url": "https://example.com/convert"},
                                      "conversionReviewVersions": ["v1"]}},
     "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"),
])
def test_the_conversion_stanza_is_validated(client: httpx.Client, conversion: dict[str, Any], message: str) -> None:
    crd = widget_crd(new_group(), {})
    crd["spec"]["conversion"] = conversion
    resp = client.post(CRDS, json=crd)
    assert resp.status_code == 422, resp.text
    assert message in resp.json()["message"]


def test_review_versions_must_include_one_the_server_speaks(client: httpx.Client) -> None:
    crd = widget_crd(new_group(), {"url": "https://example.com/convert"}, ["v2"])
    resp = client.post(CRDS, json=crd)
    assert resp.status_code == 422
    assert 'spec.conversion.conversionReviewVersions: Invalid value: []string{"v2"}: must include at least one ' \
           'of v1, v1beta1' in resp.json()["message"]


def test_the_garbage_collector_reads_converted_objects(client: httpx.Client, api_url: str, server: WebhookServer,
                                                       ca: CertificateAuthority, ns: str, tmp_path: Path) -> None:
    """Stored in v1, so the collector's monitors (discovery's preferred v2) list and watch converted objects."""
    group = new_group()
    create_crd(client, widget_crd(group, {"url": server.url("/convert"), "caBundle": ca.bundle}, storage="v1"))
    manager = ControllerManager(api_url, tmp_path / "controller-manager.log",
                                "--leader-elect=false", "--controllers=garbagecollector")
    try:
        owner = client.post(f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": "owner"}}).json()
        dependent = {"apiVersion": f"{group}/v1", "kind": "Widget", "spec": {"size": 1}, "metadata": {
            "name": "dependent", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                                      "uid": owner["metadata"]["uid"]}]}}
        assert client.post(widgets(group, "v1", ns), json=dependent).status_code == 201
        boss = client.post(widgets(group, "v1", ns), json={"apiVersion": f"{group}/v1", "kind": "Widget",
                                                           "metadata": {"name": "boss"}}).json()
        child = {"metadata": {"name": "child", "ownerReferences": [
            {"apiVersion": f"{group}/v2", "kind": "Widget", "name": "boss", "uid": boss["metadata"]["uid"]}]}}
        assert client.post(f"/api/v1/namespaces/{ns}/configmaps", json=child).status_code == 201

        assert client.delete(f"/api/v1/namespaces/{ns}/configmaps/owner").status_code == 200
        wait_for(lambda: client.get(widgets(group, "v2", ns, "dependent")).status_code == 404, 30,
                 "the Widget owned by the ConfigMap collected")
        assert client.delete(widgets(group, "v2", ns, "boss")).status_code == 200
        wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/configmaps/child").status_code == 404, 30,
                 "the ConfigMap owned by the Widget collected")
    finally:
        manager.stop()
        client.delete(f"{CRDS}/widgets.{group}")


def test_an_admission_webhook_for_v2_sees_a_v1_request_converted(client: httpx.Client, group: str, ns: str,
                                                                 server: WebhookServer,
                                                                 ca: CertificateAuthority) -> None:
    """matchPolicy Equivalent: the object is sent in the webhook's version, through the conversion webhook."""
    hook = {"name": "widgets.kubelab.io", "clientConfig": {"url": server.url("/admit"), "caBundle": ca.bundle},
            "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "rules": [{"operations": ["CREATE"], "apiGroups": [group], "apiVersions": ["v2"],
                       "resources": ["widgets"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    resp = client.post(path, json={"metadata": {"name": f"widgets-{ns}"}, "webhooks": [hook]})
    assert resp.status_code == 201, resp.text
    try:
        def admitted(name: str) -> Review | None:
            body = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": 2}}
            assert client.post(widgets(group, "v1", ns), json=body).status_code == 201
            return next((r for r in server.received("/admit") if r["request"]["name"] == name), None)

        names = iter(f"a{i}" for i in range(100))
        review = wait_for(lambda: admitted(next(names)), 10, "the admission webhook to be called")
        request = review["request"]
        assert request["kind"] == {"group": group, "version": "v2", "kind": "Widget"}
        assert request["requestKind"] == {"group": group, "version": "v1", "kind": "Widget"}
        assert request["object"]["apiVersion"] == f"{group}/v2" and request["object"]["spec"] == {"replicas": 2}
    finally:
        client.delete(f"{path}/widgets-{ns}")


def test_a_new_storage_version_joins_stored_versions_and_old_objects_still_read(
        client: httpx.Client, server: WebhookServer, ca: CertificateAuthority, ns: str) -> None:
    group = new_group()
    crd = widget_crd(group, {"url": server.url("/convert"), "caBundle": ca.bundle})
    create_crd(client, crd)
    try:
        body = {"apiVersion": f"{group}/v2", "kind": "Widget", "metadata": {"name": "old"}, "spec": {"replicas": 4}}
        assert client.post(widgets(group, "v2", ns), json=body).status_code == 201
        current = client.get(f"{CRDS}/widgets.{group}").json()
        for v in current["spec"]["versions"]:
            v["storage"] = v["name"] == "v1"
        resp = client.put(f"{CRDS}/widgets.{group}", json=current)
        assert resp.status_code == 200, resp.text
        assert resp.json()["status"]["storedVersions"] == ["v2", "v1"]

        # Stored in v2, now the old version: read in either through the webhook.
        wait_for(lambda: client.get(widgets(group, "v1", ns, "old")).json().get("spec") == {"size": 4}, 10,
                 "the object stored in v2 read in v1")
        assert client.get(widgets(group, "v2", ns, "old")).json()["spec"] == {"replicas": 4}
        resp = client.patch(widgets(group, "v2", ns, "old"), json={"spec": {"replicas": 5}},
                            headers={"Content-Type": "application/merge-patch+json"})
        assert resp.status_code == 200 and resp.json()["spec"] == {"replicas": 5}, resp.text
        assert [i["spec"] for i in client.get(widgets(group, "v1", ns)).json()["items"]] == [{"size": 5}]
    finally:
        client.delete(f"{CRDS}/widgets.{group}")
