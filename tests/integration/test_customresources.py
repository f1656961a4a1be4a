"""CustomResourceDefinitions and custom resources, as a user drives them: the real kubectl, the official Python
client (``ApiextensionsV1Api``, ``CustomObjectsApi``, ``kubernetes.dynamic``) and plain HTTP, against the
session's apiserver (and a second one on the same etcd). Each test defines its own group, so tests do not share
CRDs."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from conftest import Kubectl, api_only, kubectl_release
from support.crds import CRDS, create_crd, crontab_crd, established, new_group
from support.wait import wait_for


@pytest.fixture(autouse=True)
def remove_test_crds(api_url: str) -> Iterator[None]:
    """Every CRD of a test's groups is deleted after it (their short names would otherwise pile up)."""
    yield
    with httpx.Client(base_url=api_url, timeout=30) as c:
        for crd in c.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions").json()["items"]:
            if crd["spec"]["group"].endswith(".example.com") and crd["spec"]["group"].startswith("g"):
                c.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}")


def write(tmp_path: Path, name: str, obj: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(obj))
    return str(path)


def test_kubectl_drives_a_custom_resource_from_crd_to_deletion(kubectl: Kubectl, client: httpx.Client, ns: str,
                                                               tmp_path: Path) -> None:
    group = new_group()
    crd = crontab_crd(group)
    out = kubectl("apply", "-f", write(tmp_path, "crd.yaml", crd)).stdout
    assert f"customresourcedefinition.apiextensions.k8s.io/crontabs.{group} created" in out
    kubectl("wait", "--for=condition=Established", f"crd/crontabs.{group}", "--timeout=20s")
    assert f"crontabs.{group}" in kubectl("get", "crd").stdout

    cr = {"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "nightly", "namespace": ns},
          "spec": {"cronSpec": "* * * * */5", "image": "busybox", "foo": "bar"}}
    path = write(tmp_path, "cr.yaml", cr)
    strict = kubectl("apply", "-f", path, check=False)
    assert strict.returncode != 0 and 'strict decoding error: unknown field "spec.foo"' in strict.stderr
    warned = kubectl("apply", "-f", path, "--validate=warn")
    assert 'Warning: unknown field "spec.foo"' in warned.stderr
    stored = client.get(f"/apis/{group}/v1/namespaces/{ns}/crontabs/nightly").json()
    assert "foo" not in stored["spec"] and stored["spec"]["replicas"] == 1  # pruned, defaulted

    table = kubectl("get", f"crontabs.{group}", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "SPEC", "REPLICAS", "AGE"]
    assert table[1].split()[:7] == ["nightly", "*", "*", "*", "*", "*/5", "1"]
    assert "Cron Spec:  * * * * */5" in kubectl("describe", f"crontabs.{group}", "nightly", "-n", ns).stdout

    scaled = kubectl("scale", f"crontabs.{group}", "nightly", "-n", ns, "--replicas=3")
    assert "scaled" in scaled.stdout
    assert client.get(f"/apis/{group}/v1/namespaces/{ns}/crontabs/nightly").json()["spec"]["replicas"] == 3

    bad = kubectl("patch", f"crontabs.{group}", "nightly", "-n", ns, "--type", "merge",
                  "-p", '{"spec":{"replicas":11}}', check=False)
    assert bad.returncode != 0
    assert ('The CronTab "nightly" is invalid: spec.replicas: Invalid value: 11: spec.replicas in body should be '
            "less than or equal to 10") in bad.stderr
    enum = kubectl("patch", f"crontabs.{group}", "nightly", "-n", ns, "--type", "merge",
                   "-p", '{"spec":{"color":"pink"}}', check=False)
    assert 'spec.color: Unsupported value: "pink": supported values: "red", "blue"' in enum.stderr
    smp = kubectl("patch", f"crontabs.{group}", "nightly", "-n", ns, "-p", '{"spec":{"replicas":2}}', check=False)
    assert "application/strategic-merge-patch+json is not supported" in smp.stderr
    assert kubectl("patch", f"crontabs.{group}", "nightly", "-n", ns, "--type", "merge",
                   "-p", '{"spec":{"color":"red"}}').returncode == 0

    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "s/image: busybox/image: nginx/" "$1"\n')
    editor.chmod(0o755)
    assert "edited" in kubectl("edit", f"crontabs.{group}", "nightly", "-n", ns,
                               env={"EDITOR": str(editor)}).stdout
    assert client.get(f"/apis/{group}/v1/namespaces/{ns}/crontabs/nightly").json()["spec"]["image"] == "nginx"

    explained = kubectl("explain", f"crontabs.{group}.spec").stdout
    assert "KIND:       CronTab" in explained and "cronSpec" in explained and "replicas" in explained

    applied = {"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "ssa", "namespace": ns},
               "spec": {"cronSpec": "1 * * * *", "ports": [{"name": "http", "port": 80}]}}
    kubectl("apply", "--server-side", "-f", write(tmp_path, "ssa.yaml", applied))
    other = {"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "ssa", "namespace": ns},
             "spec": {"ports": [{"name": "metrics", "port": 9090}]}}
    kubectl("apply", "--server-side", "--field-manager=other", "-f", write(tmp_path, "ssa2.yaml", other))
    ports = client.get(f"/apis/{group}/v1/namespaces/{ns}/crontabs/ssa").json()["spec"]["ports"]
    assert sorted(p["name"] for p in ports) == ["http", "metrics"]  # a map list, merged by key

    assert kubectl("get", f"crontabs.{group}", "-n", ns, "--field-selector", "spec.color=red",
                   "-o", "name").stdout.split() == [f"crontab.{group}/nightly"]
    kubectl("delete", f"crontabs.{group}", "ssa", "-n", ns)
    kubectl("delete", "crd", f"crontabs.{group}", "--timeout=30s")
    assert client.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.{group}").status_code == 404
    assert client.get(f"/apis/{group}/v1/namespaces/{ns}/crontabs").status_code == 404
    assert group not in [g["name"] for g in client.get("/apis").json()["groups"]]


@pytest.mark.parametrize("release", ["1.27", "1.33"])
def test_other_kubectl_releases_get_and_explain(release: str, api_url: str, client: httpx.Client, ns: str,
                                                tmp_path: Path) -> None:
    group = new_group()
    create_crd(client, crontab_crd(group))
    resp = client.post(f"/apis/{group}/v1/namespaces/{ns}/crontabs",
                       json={"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "a"},
                             "spec": {"cronSpec": "* * * * *"}})
    assert resp.status_code == 201, resp.text
    kubectl = Kubectl(kubectl_release(release), api_url, tmp_path)
    table = kubectl("get", f"crontabs.{group}", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "SPEC", "REPLICAS", "AGE"]
    assert "cronSpec" in kubectl("explain", f"crontabs.{group}.spec").stdout


def test_crd_validation_answers_with_kubes_422(client: httpx.Client, kubectl: Kubectl, tmp_path: Path) -> None:
    group = new_group()
    crd = crontab_crd(group)
    crd["metadata"]["name"] = "wrong.example.com"
    crd["spec"]["versions"][0]["storage"] = False
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["x"] = {}
    result = kubectl("apply", "-f", write(tmp_path, "bad.yaml", crd), check=False)
    assert result.returncode != 0
    for text in ('The CustomResourceDefinition "wrong.example.com" is invalid',
                 'metadata.name: Invalid value: "wrong.example.com": must be spec.names.plural+"."+spec.group',
                 "must have exactly one version marked as storage version",
                 "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x].type: Required value: "
                 "must not be empty for specified object fields"):
        assert text in result.stderr
    no_schema = crontab_crd(group)
    del no_schema["spec"]["versions"][0]["schema"]
    resp = client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=no_schema)
    assert resp.status_code == 422
    assert resp.json()["details"]["causes"] == [{"reason": "FieldValueRequired", "message": "Required value: "
                                                 "schemas are required",
                                                 "field": "spec.versions[0].schema.openAPIV3Schema"}]


def test_names_another_crd_of_the_group_accepted_first_are_refused(client: httpx.Client) -> None:
    group = new_group()
    create_crd(client, crontab_crd(group))
    clash = crontab_crd(group)
    clash["metadata"]["name"] = f"crontables.{group}"
    clash["spec"]["names"] = {"plural": "crontables", "singular": "crontable", "kind": "CronTab"}
    assert client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=clash).status_code == 201

    def names_condition() -> dict[str, Any] | None:
        crd = client.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontables.{group}").json()
        return next((c for c in crd["status"].get("conditions") or [] if c["type"] == "NamesAccepted"), None)

    cond = wait_for(names_condition, 10, "NamesAccepted")
    # kind and listKind both clash; as in kube's naming controller the last conflict found is the one reported
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "ListKindConflict",
                                                                 '"CronTabList" is already in use')
    crd = client.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontables.{group}").json()
    assert not established(client, f"crontables.{group}")
    assert crd["status"]["acceptedNames"]["plural"] == "crontables"
    assert "crontables" not in [r["name"] for r in client.get(f"/apis/{group}/v1").json()["resources"]]


def test_status_subresource_and_generation(client: httpx.Client, ns: str) -> None:
    group = new_group()
    create_crd(client, crontab_crd(group))
    base = f"/apis/{group}/v1/namespaces/{ns}/crontabs"
    created = client.post(base, json={"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "a"},
                                      "spec": {"cronSpec": "* * * * *"}, "status": {"replicas": 5}}).json()
    assert created["metadata"]["generation"] == 1 and "status" not in created
    status = client.patch(f"{base}/a/status", json={"status": {"replicas": 2, "selector": "app=a"}},
                          headers={"content-type": "application/merge-patch+json"}).json()
    assert status["status"] == {"replicas": 2, "selector": "app=a"} and status["metadata"]["generation"] == 1
    ignored = client.patch(f"{base}/a", json={"status": {"replicas": 9}},
                           headers={"content-type": "application/merge-patch+json"}).json()
    assert ignored["status"]["replicas"] == 2
    bumped = client.patch(f"{base}/a", json={"spec": {"replicas": 4}},
                          headers={"content-type": "application/merge-patch+json"}).json()
    assert bumped["metadata"]["generation"] == 2
    scale = client.get(f"{base}/a/scale").json()
    assert scale["spec"] == {"replicas": 4} and scale["status"] == {"replicas": 2, "selector": "app=a"}
    proto = client.post(base, content=b"\x6b\x38\x73\x00", headers={"content-type":
                                                                        "application/vnd.kubernetes.protobuf"})
    assert proto.status_code == 415


def test_versions_convert_and_warn_when_deprecated(client: httpx.Client, ns: str) -> None:
    group = new_group()
    create_crd(client, crontab_crd(group, extra_version=True))
    resp = client.post(f"/apis/{group}/v1beta1/namespaces/{ns}/crontabs",
                       json={"apiVersion": f"{group}/v1beta1", "kind": "CronTab", "metadata": {"name": "old"},
                             "spec": {"cronSpec": "* * * * *"}})
    assert resp.status_code == 201, resp.text
    assert resp.headers["warning"] == f'299 - "{group}/v1beta1 CronTab is deprecated; use {group}/v1 CronTab"'
    assert resp.json()["apiVersion"] == f"{group}/v1beta1"
    read = client.get(f"/apis/{group}/v1/namespaces/{ns}/crontabs/old")
    assert read.json()["apiVersion"] == f"{group}/v1" and "warning" not in read.headers
    groups = {g["name"]: g for g in client.get("/apis").json()["groups"]}
    assert groups[group]["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in groups[group]["versions"]] == ["v1", "v1beta1"]


def test_watch_resumes_and_sends_bookmarks(client: httpx.Client, api_url: str, ns: str) -> None:
    group = new_group()
    create_crd(client, crontab_crd(group))
    base = f"/apis/{group}/v1/namespaces/{ns}/crontabs"
    first = client.post(base, json={"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "a"},
                                    "spec": {"cronSpec": "* * * * *"}}).json()
    client.post(base, json={"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "b"},
                            "spec": {"cronSpec": "* * * * *"}})
    rv = first["metadata"]["resourceVersion"]
    events = []
    with httpx.stream("GET", f"{api_url}{base}", params={"watch": "1", "resourceVersion": rv,
                                                         "allowWatchBookmarks": "true", "timeoutSeconds": "2"},
                      timeout=10) as stream:
        for line in stream.iter_lines():
            if line:
                events.append(json.loads(line))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events if e["type"] != "BOOKMARK"] == [("ADDED", "b")]


def test_python_clients(api: Any, ns: str) -> None:
    from kubernetes import client as k8s
    from kubernetes.dynamic import DynamicClient

    group = new_group()
    ext = k8s.ApiextensionsV1Api(api)
    ext.create_custom_resource_definition(crontab_crd(group))
    wait_for(lambda: any(c.type == "Established" and c.status == "True" for c in
                         ext.read_custom_resource_definition(f"crontabs.{group}").status.conditions or []),
             10, "Established")
    assert f"crontabs.{group}" in [c.metadata.name for c in ext.list_custom_resource_definition().items]

    custom = k8s.CustomObjectsApi(api)
    body = {"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "py"},
            "spec": {"cronSpec": "* * * * *"}}
    wait_for(lambda: _served(custom, group, ns), 10, "served")
    custom.create_namespaced_custom_object(group, "v1", ns, "crontabs", body)
    got = custom.get_namespaced_custom_object(group, "v1", ns, "crontabs", "py")
    assert got["spec"]["replicas"] == 1
    custom.patch_namespaced_custom_object(group, "v1", ns, "crontabs", "py", {"spec": {"image": "x"}})
    custom.patch_namespaced_custom_object_status(group, "v1", ns, "crontabs", "py", {"status": {"replicas": 1}})
    items = custom.list_namespaced_custom_object(group, "v1", ns, "crontabs")["items"]
    assert [(i["spec"]["image"], i["status"]["replicas"]) for i in items] == [("x", 1)]
    with pytest.raises(k8s.ApiException) as bad:
        custom.patch_namespaced_custom_object(group, "v1", ns, "crontabs", "py", {"spec": {"replicas": 0}})
    assert bad.value.status == 422

    dyn = DynamicClient(api)
    crontabs = dyn.resources.get(api_version=f"{group}/v1", kind="CronTab")
    assert [o.metadata.name for o in crontabs.get(namespace=ns).items] == ["py"]
    crontabs.delete(name="py", namespace=ns)
    assert custom.list_namespaced_custom_object(group, "v1", ns, "crontabs")["items"] == []
    ext.delete_custom_resource_definition(f"crontabs.{group}")


def _served(custom: Any, group: str, ns: str) -> bool:
    try:
        custom.list_namespaced_custom_object(group, "v1", ns, "crontabs")
        return True
    except Exception:  # noqa: BLE001 - not yet
        return False


def test_every_apiserver_on_the_etcd_serves_new_crds() -> None:
    """Two apiserver processes on one etcd (``apiservers=2``): a CRD made through one is served by the other."""
    with api_only(apiservers=2) as cluster, httpx.Client(base_url=cluster.api_url, timeout=10) as client:
        _both_serve_new_crds(client, cluster.api_urls[1])


def _both_serve_new_crds(client: httpx.Client, other_url: str) -> None:
    group = new_group()
    resp = client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                       json=crontab_crd(group, scope="Cluster"))
    assert resp.status_code == 201, resp.text
    with httpx.Client(base_url=other_url, timeout=10) as second:
        wait_for(lambda: second.get(f"/apis/{group}/v1/crontabs").status_code == 200, 10, "served by the other")
        created = second.post(f"/apis/{group}/v1/crontabs", json={
            "apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "c"},
            "spec": {"cronSpec": "* * * * *"}})
        assert created.status_code == 201, created.text
        assert "namespace" not in created.json()["metadata"]
        assert client.get(f"/apis/{group}/v1/crontabs/c").json()["metadata"]["uid"] == \
            created.json()["metadata"]["uid"]
        paths = second.get("/openapi/v3").json()["paths"]
        assert f"apis/{group}/v1" in paths
        doc = second.get(paths[f"apis/{group}/v1"]["serverRelativeURL"]).json()
        assert f"{'.'.join(reversed(group.split('.')))}.v1.CronTab" in doc["components"]["schemas"]
        client.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.{group}")
        wait_for(lambda: second.get(f"/apis/{group}/v1/crontabs").status_code == 404, 20, "gone on the other")
        assert f"apis/{group}/v1" not in second.get("/openapi/v3").json()["paths"]


@pytest.mark.parametrize("version", ["v2", "v2beta1"])
def test_aggregated_discovery_lists_custom_resources_while_served(client: httpx.Client, version: str) -> None:
    group = new_group()
    create_crd(client, crontab_crd(group, extra_version=True))
    accept = f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList,application/json"

    def entry() -> dict[str, Any] | None:
        resp = client.get("/apis", headers={"accept": accept})
        assert resp.headers["content-type"] == \
            f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
        return next((i for i in resp.json()["items"] if i["metadata"]["name"] == group), None)

    found = entry()
    assert found is not None
    assert [v["version"] for v in found["versions"]] == ["v1", "v1beta1"]
    crontabs = found["versions"][0]["resources"][0]
    assert crontabs["resource"] == "crontabs" and crontabs["scope"] == "Namespaced"
    assert crontabs["responseKind"] == {"group": group, "version": "v1", "kind": "CronTab"}
    assert (crontabs["singularResource"], crontabs["shortNames"], crontabs["categories"]) == ("crontab", ["ct"],
                                                                                               ["all"])
    assert {s["subresource"]: s["responseKind"]["kind"] for s in crontabs["subresources"]} == \
        {"scale": "Scale", "status": "CronTab"}
    core = client.get("/api", headers={"accept": accept}).json()["items"]
    assert [i["metadata"]["name"] for i in core] == [""] and \
        "pods" in [r["resource"] for r in core[0]["versions"][0]["resources"]]
    client.delete(f"{CRDS}/crontabs.{group}")
    wait_for(lambda: entry() is None, 20, "the group gone from aggregated discovery")


def test_a_terminating_crd_waits_for_its_resources_and_refuses_new_ones(client: httpx.Client, ns: str) -> None:
    group = new_group()
    create_crd(client, crontab_crd(group))
    base = f"/apis/{group}/v1/namespaces/{ns}/crontabs"
    held = {"apiVersion": f"{group}/v1", "kind": "CronTab",
            "metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "spec": {"cronSpec": "* * * * *"}}
    assert client.post(base, json=held).status_code == 201
    assert client.delete(f"{CRDS}/crontabs.{group}").status_code == 200

    def terminating() -> dict[str, Any] | None:
        crd = client.get(f"{CRDS}/crontabs.{group}").json()
        cond = next((c for c in crd["status"]["conditions"] if c["type"] == "Terminating"), None)
        return cond if cond is not None and cond["reason"] == "InstanceDeletionCheck" else None

    cond = wait_for(terminating, 20, "the CRD waiting for its resources")
    assert cond["message"] == "could not confirm zero CustomResources remaining: 1 left"
    assert client.get(f"{CRDS}/crontabs.{group}").json()["metadata"]["finalizers"] == \
        ["customresourcecleanup.apiextensions.k8s.io"]
    refused = client.post(base, json={"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "new"},
                                      "spec": {"cronSpec": "* * * * *"}})
    assert refused.status_code == 405
    assert refused.json()["message"] == "create not allowed while custom resource definition is terminating"
    client.patch(f"{base}/held", json={"metadata": {"finalizers": None}},
                 headers={"content-type": "application/merge-patch+json"})
    wait_for(lambda: client.get(f"{CRDS}/crontabs.{group}").status_code == 404, 20, "the CRD gone")


def test_a_changed_schema_is_served_at_once(client: httpx.Client, ns: str, api_url: str) -> None:
    group = new_group()
    created = create_crd(client, crontab_crd(group))
    base = f"/apis/{group}/v1/namespaces/{ns}/crontabs"
    assert client.post(base, json={"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "a"},
                                   "spec": {"cronSpec": "* * * * *"}}).status_code == 201
    before_url = client.get("/openapi/v3").json()["paths"][f"apis/{group}/v1"]["serverRelativeURL"]
    with httpx.stream("GET", f"{api_url}{base}", params={"watch": "1", "timeoutSeconds": "60"}, timeout=60) as watch:
        lines = watch.iter_lines()
        assert json.loads(next(lines))["type"] == "ADDED"
        crd = client.get(f"{CRDS}/crontabs.{group}").json()
        spec_props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        spec_props["image"]["default"] = "busybox"
        spec_props["suspend"] = {"type": "boolean"}
        assert client.put(f"{CRDS}/crontabs.{group}", json=crd).status_code == 200
        wait_for(lambda: client.get(f"{base}/a").json()["spec"].get("image") == "busybox", 10,
                 "the new default on reads")
        patched = client.patch(f"{base}/a", json={"spec": {"suspend": True}},
                               headers={"content-type": "application/merge-patch+json"})
        assert patched.status_code == 200 and patched.json()["spec"]["suspend"] is True
        assert json.loads(next(lines))["type"] == "MODIFIED"  # the watch stayed open across the change
    assert created["metadata"]["generation"] == 1
    assert client.get(f"{CRDS}/crontabs.{group}").json()["metadata"]["generation"] == 2
    # kubectl caches /openapi/v3 group-version documents by their hash: the new schema has a new one
    url = client.get("/openapi/v3").json()["paths"][f"apis/{group}/v1"]["serverRelativeURL"]
    assert url != before_url
    schema = client.get(url).json()["components"]["schemas"][f"{'.'.join(reversed(group.split('.')))}.v1.CronTab"]
    assert schema["properties"]["spec"]["properties"]["suspend"] == {"type": "boolean"}
    assert client.get(before_url, follow_redirects=False).status_code == 301


def test_lists_page_and_select_and_dry_run_writes_nothing(client: httpx.Client, ns: str,
                                                          kubectl: Kubectl) -> None:
    group = new_group()
    create_crd(client, crontab_crd(group))
    base = f"/apis/{group}/v1/namespaces/{ns}/crontabs"
    for i in range(5):
        body = {"apiVersion": f"{group}/v1", "kind": "CronTab",
                "metadata": {"name": f"c{i}", "labels": {"parity": "even" if i % 2 == 0 else "odd"}},
                "spec": {"cronSpec": "* * * * *"}}
        assert client.post(base, json=body).status_code == 201
    first = client.get(base, params={"limit": 2}).json()
    assert first["kind"] == "CronTabList" and [o["metadata"]["name"] for o in first["items"]] == ["c0", "c1"]
    rest = client.get(base, params={"limit": 10, "continue": first["metadata"]["continue"]}).json()
    assert [o["metadata"]["name"] for o in rest["items"]] == ["c2", "c3", "c4"]
    odd = client.get(base, params={"labelSelector": "parity=odd"}).json()["items"]
    assert [o["metadata"]["name"] for o in odd] == ["c1", "c3"]
    named = client.get(f"/apis/{group}/v1/crontabs", params={"fieldSelector": f"metadata.namespace={ns},"
                                                                               "metadata.name=c4"}).json()
    assert [o["metadata"]["name"] for o in named["items"]] == ["c4"]
    bad = client.get(base, params={"fieldSelector": "spec.image=x"})
    assert bad.status_code == 400 and bad.json()["message"] == "field label not supported: spec.image"
    dry = client.post(base, params={"dryRun": "All"}, json={"apiVersion": f"{group}/v1", "kind": "CronTab",
                                                            "metadata": {"name": "dry"},
                                                            "spec": {"cronSpec": "* * * * *"}})
    assert dry.status_code == 201 and dry.json()["spec"]["replicas"] == 1
    assert client.get(f"{base}/dry").status_code == 404
    assert client.delete(f"{base}/c0", params={"dryRun": "All"}).status_code == 200
    assert client.get(f"{base}/c0").status_code == 200
    assert [o["metadata"]["name"] for o in client.delete(base, params={"labelSelector": "parity=even"})
            .json()["items"]] == ["c0", "c2", "c4"]
    assert [o["metadata"]["name"] for o in client.get(base).json()["items"]] == ["c1", "c3"]
    everything = kubectl("get", "all", "-n", ns, "-o", "name").stdout.split()
    assert f"crontab.{group}/c1" in everything  # the CRD puts them in category "all"


def test_metadata_is_decoded_as_object_meta(client: httpx.Client, ns: str) -> None:
    group = new_group()
    create_crd(client, crontab_crd(group))
    base = f"/apis/{group}/v1/namespaces/{ns}/crontabs"
    resp = client.post(base, json={"apiVersion": f"{group}/v1", "kind": "CronTab",
                                   "metadata": {"name": "m", "bogus": 1}, "spec": {"cronSpec": "* * * * *",
                                                                                  "extra": True}})
    assert resp.status_code == 201
    assert resp.headers["warning"] == ('299 - "unknown field \\"metadata.bogus\\"", '
                                       '299 - "unknown field \\"spec.extra\\""')
    assert "bogus" not in resp.json()["metadata"]
    wrong = client.post(base, json={"apiVersion": f"{group}/v1", "kind": "CronTab",
                                    "metadata": {"name": "w", "labels": ["a"]}, "spec": {"cronSpec": "* * * * *"}})
    assert wrong.status_code == 400
    assert wrong.json()["message"].startswith('CronTab in version "v1" cannot be handled as a CronTab: json: cannot '
                                              "unmarshal array into Go struct field ObjectMeta.metadata.labels")


def test_a_new_storage_version_and_the_stored_versions_migration(client: httpx.Client, ns: str) -> None:
    group = new_group()
    create_crd(client, crontab_crd(group))
    old = client.post(f"/apis/{group}/v1/namespaces/{ns}/crontabs",
                      json={"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "old"},
                            "spec": {"cronSpec": "* * * * *"}})
    assert old.status_code == 201
    crd = client.get(f"{CRDS}/crontabs.{group}").json()
    v2 = copy.deepcopy(crd["spec"]["versions"][0])
    v2["name"] = "v2"
    crd["spec"]["versions"][0]["storage"] = False
    crd["spec"]["versions"].append(v2)
    updated = client.put(f"{CRDS}/crontabs.{group}", json=crd)
    assert updated.status_code == 200, updated.text
    assert updated.json()["status"]["storedVersions"] == ["v1", "v2"]
    wait_for(lambda: client.get(f"/apis/{group}/v2/namespaces/{ns}/crontabs/old").status_code == 200, 10, "v2")
    assert client.get(f"/apis/{group}/v2/namespaces/{ns}/crontabs/old").json()["apiVersion"] == f"{group}/v2"
    groups = {g["name"]: g for g in client.get("/apis").json()["groups"]}
    assert groups[group]["preferredVersion"]["version"] == "v2"

    crd = updated.json()
    crd["spec"]["versions"] = [v for v in crd["spec"]["versions"] if v["name"] == "v2"]
    refused = client.put(f"{CRDS}/crontabs.{group}", json=crd)
    assert refused.status_code == 422
    assert refused.json()["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "status.storedVersions[0]",
                                                    "message": 'Invalid value: "v1": must appear in spec.versions'}]
    # what a storage version migration ends with: the old version dropped from storedVersions, then from spec
    status = client.get(f"{CRDS}/crontabs.{group}").json()
    status["status"]["storedVersions"] = ["v2"]
    assert client.put(f"{CRDS}/crontabs.{group}/status", json=status).status_code == 200
    crd["metadata"].pop("resourceVersion")
    assert client.put(f"{CRDS}/crontabs.{group}", json=crd).status_code == 200
    wait_for(lambda: client.get(f"/apis/{group}/v1/namespaces/{ns}/crontabs").status_code == 404, 10, "v1 gone")
    assert client.get(f"/apis/{group}/v2/namespaces/{ns}/crontabs/old").json()["spec"]["cronSpec"] == "* * * * *"


def test_a_crd_never_replaces_a_built_in_resource(client: httpx.Client, ns: str) -> None:
    crd = crontab_crd("coordination.k8s.io")
    crd["metadata"]["name"] = "leases.coordination.k8s.io"
    crd["spec"]["names"] = {"plural": "leases", "singular": "lease", "kind": "Lease"}
    refused = client.post(CRDS, json=crd)
    assert refused.status_code == 422 and "protected groups must have approval annotation" in refused.text
    crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, testing only"}
    assert client.post(CRDS, json=crd).status_code == 201
    try:
        wait_for(lambda: established(client, "leases.coordination.k8s.io"), 10, "Established")
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
                 "spec": {"holderIdentity": "me"}}
        created = client.post(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", json=lease)
        assert created.status_code == 201 and created.json()["spec"]["holderIdentity"] == "me"
    finally:
        client.delete(f"{CRDS}/leases.coordination.k8s.io")


def test_cel_validation_rules(client: httpx.Client, kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    """x-kubernetes-validations: CEL rules with message, messageExpression, reason, fieldPath and a transition rule,
    kube's 422 texts through kubectl; a rule that does not compile refuses the CRD."""
    group = new_group()
    crd = crontab_crd(group)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["maxReplicas"] = {"type": "integer"}
    spec["x-kubernetes-validations"] = [
        {"rule": "!has(self.maxReplicas) || self.replicas <= self.maxReplicas",
         "messageExpression": "'replicas ' + string(self.replicas) + ' is over ' + string(self.maxReplicas)"},
        {"rule": "self.image == oldSelf.image", "message": "image is immutable", "reason": "FieldValueForbidden",
         "fieldPath": ".image"},
    ]
    spec["properties"]["cronSpec"]["x-kubernetes-validations"] = [{"rule": "self.startsWith('*')"}]
    create_crd(client, crd)
    tab = {"apiVersion": f"{group}/v1", "kind": "CronTab", "metadata": {"name": "tab", "namespace": ns},
           "spec": {"cronSpec": "* * * * 5", "image": "one", "replicas": 3, "maxReplicas": 2}}
    result = kubectl("apply", "-f", write(tmp_path, "tab.yaml", tab), check=False)
    assert result.returncode != 0
    assert 'The CronTab "tab" is invalid: spec: Invalid value: "object": replicas 3 is over 2' in result.stderr

    tab["spec"].update(maxReplicas=5, cronSpec="1 * * * 5")
    result = kubectl("apply", "-f", write(tmp_path, "tab.yaml", tab), check=False)
    assert 'spec.cronSpec: Invalid value: "string": failed rule: self.startsWith(\'*\')' in result.stderr

    tab["spec"]["cronSpec"] = "* * * * 5"
    assert kubectl("apply", "-f", write(tmp_path, "tab.yaml", tab)).returncode == 0  # transition rules skip creates
    tab["spec"]["image"] = "two"
    result = kubectl("apply", "-f", write(tmp_path, "tab.yaml", tab), check=False)
    assert result.returncode != 0
    assert 'The CronTab "tab" is invalid: spec.image: Forbidden: image is immutable' in result.stderr
    tab["spec"].update(image="one", replicas=4)
    assert kubectl("apply", "-f", write(tmp_path, "tab.yaml", tab)).returncode == 0

    broken = crontab_crd(new_group())
    broken["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.replicas >"}]
    resp = client.post(CRDS, json=broken)
    assert resp.status_code == 422
    cause = resp.json()["details"]["causes"][0]
    assert cause["field"] == \
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert "compilation failed: ERROR: <input>:1:" in cause["message"]
