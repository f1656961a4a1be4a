"""kubeclient.resources and kubeclient.client: exact requests, and CRUD semantics on the in-memory fake."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from apimachinery.errors import AlreadyExists, Conflict, Gone, NotFound, StatusError
from kubeclient.client import Clientset, PatchType
from kubeclient.config import Config
from kubeclient.fake import FakeAPIServer
from kubeclient.resources import DEPLOYMENTS, LEASES, NAMESPACES, NODES, PODS, parse_path, resource_for
from kubeclient.rest import RESTClient
from kubeclient.types import Object


def pod(name: str, ns: str | None = "default", **labels: str) -> Object:
    meta: Object = {"name": name, "labels": labels}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


# --- resources ---------------------------------------------------------------------------------------------


def test_paths_for_core_named_groups_cluster_scope_and_subresources() -> None:
    assert PODS.path() == "/api/v1/pods"
    assert PODS.path("ns1") == "/api/v1/namespaces/ns1/pods"
    assert PODS.path("ns1", "p", "status") == "/api/v1/namespaces/ns1/pods/p/status"
    assert DEPLOYMENTS.path("ns1", "d", "scale") == "/apis/apps/v1/namespaces/ns1/deployments/d/scale"
    assert LEASES.path("kube-system") == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    assert NODES.path(None, "n1", "status") == "/api/v1/nodes/n1/status"
    assert NODES.path("ignored", "n1") == "/api/v1/nodes/n1"
    assert NAMESPACES.path(None, "ns1") == "/api/v1/namespaces/ns1"
    assert DEPLOYMENTS.api_version == "apps/v1" and PODS.api_version == "v1"
    with pytest.raises(ValueError):
        PODS.path(None, "p")  # an object path of a namespaced resource needs its namespace
    with pytest.raises(ValueError):
        PODS.path("ns", None, "status")


def test_parse_path_inverts_path() -> None:
    for res, ns, name, sub in [(PODS, "a", "b", "binding"), (PODS, None, None, None), (NODES, None, "n", None),
                               (NAMESPACES, None, "x", "status"), (DEPLOYMENTS, "d", None, None),
                               (LEASES, "kube-system", "sched", None), (NAMESPACES, None, None, None)]:
        rp = parse_path(res.path(ns, name, sub))
        assert (rp.resource, rp.namespace, rp.name, rp.subresource) == (res, ns, name, sub)
    assert resource_for("Pod") is PODS and resource_for("replicasets").kind == "ReplicaSet"
    with pytest.raises(KeyError):
        parse_path("/apis/nope/v1/things")


# --- wire: what ResourceClient sends over RESTClient ----------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str], str | None, bytes]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.seen.append((request.method, request.path, dict(request.query), request.headers.get("Content-Type"),
                          body))
        if request.query.get("watch") == "true":
            resp = web.StreamResponse()
            await resp.prepare(request)
            await resp.write(b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n')
            await resp.write(b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}\n')
            await resp.write_eof()
            return resp
        return web.json_response({"kind": "PodList", "metadata": {"resourceVersion": "5"}, "items": []})


@pytest.fixture
async def wire() -> AsyncIterator[tuple[Recorder, Clientset]]:
    recorder = Recorder()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", recorder.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    cs = Clientset(RESTClient(Config(host=str(server.make_url("")).rstrip("/"))))
    try:
        yield recorder, cs
    finally:
        await cs.close()
        await server.close()


async def test_list_and_watch_send_client_go_query_parameters(wire: tuple[Recorder, Clientset]) -> None:
    rec, cs = wire
    await cs.pods.list("ns1", label_selector="app=web", field_selector="spec.nodeName=n1", limit=50,
                       resource_version="0")
    assert rec.seen[-1][:3] == ("GET", "/api/v1/namespaces/ns1/pods", {
        "labelSelector": "app=web", "fieldSelector": "spec.nodeName=n1", "limit": "50", "resourceVersion": "0"})
    await cs.pods.list(continue_="tok", limit=50)
    assert rec.seen[-1][1:3] == ("/api/v1/pods", {"limit": "50", "continue": "tok"})
    async with aclosing(cs.pods.watch(resource_version="7", timeout_seconds=30)) as events:
        got = [e async for e in events]
    assert rec.seen[-1][1:3] == ("/api/v1/pods", {"watch": "true", "resourceVersion": "7",
                                                  "allowWatchBookmarks": "true", "timeoutSeconds": "30"})
    assert [e["type"] for e in got] == ["ADDED", "ERROR"]  # ERROR is yielded, not raised
    async with aclosing(cs.nodes.watch(allow_bookmarks=False)) as events:
        [e async for e in events]
    assert rec.seen[-1][1:3] == ("/api/v1/nodes", {"watch": "true"})


async def test_writes_send_verbs_paths_bodies_and_content_types(wire: tuple[Recorder, Clientset]) -> None:
    rec, cs = wire
    await cs.pods.create(pod("a", ns=None))
    assert rec.seen[-1][:2] == ("POST", "/api/v1/namespaces/default/pods")  # kubectl's default namespace
    await cs.pods.update(pod("a", "ns1"))
    assert rec.seen[-1][:2] == ("PUT", "/api/v1/namespaces/ns1/pods/a")
    await cs.pods.update_status(pod("a", "ns1"))
    assert rec.seen[-1][:2] == ("PUT", "/api/v1/namespaces/ns1/pods/a/status")
    patches: list[tuple[PatchType, str]] = [("merge", "application/merge-patch+json"),
                                            ("strategic", "application/strategic-merge-patch+json"),
                                            ("json", "application/json-patch+json")]
    for patch_type, content_type in patches:
        await cs.nodes.patch("n1", {"spec": {"unschedulable": True}}, patch_type, subresource="status")
        assert rec.seen[-1][:4] == ("PATCH", "/api/v1/nodes/n1/status", {}, content_type)
    await cs.pods.delete("a", "ns1", grace_period_seconds=0, propagation_policy="Foreground",
                         preconditions={"uid": "u1"})
    method, path, _, _, body = rec.seen[-1]
    assert (method, path) == ("DELETE", "/api/v1/namespaces/ns1/pods/a")
    assert orjson.loads(body) == {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                                  "propagationPolicy": "Foreground", "preconditions": {"uid": "u1"}}
    await cs.pods.delete("a", "ns1")
    assert rec.seen[-1][4] == b""  # no options, no body
    bound = pod("a", "ns1")
    bound["metadata"]["uid"] = "u1"
    await cs.pods.bind(bound, "node-1")
    method, path, _, _, body = rec.seen[-1]
    assert (method, path) == ("POST", "/api/v1/namespaces/ns1/pods/a/binding")
    assert orjson.loads(body) == {"apiVersion": "v1", "kind": "Binding",
                                  "metadata": {"name": "a", "namespace": "ns1", "uid": "u1"},
                                  "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    await cs.pods.evict("a", "ns1", grace_period_seconds=5)
    method, path, _, _, body = rec.seen[-1]
    assert (method, path) == ("POST", "/api/v1/namespaces/ns1/pods/a/eviction")
    assert orjson.loads(body)["deleteOptions"] == {"gracePeriodSeconds": 5}


async def test_namespaced_calls_without_a_namespace_are_refused() -> None:
    cs = Clientset(FakeAPIServer())
    with pytest.raises(ValueError):
        await cs.pods.get("a")
    with pytest.raises(ValueError):
        await cs.pods.update(pod("a", ns=None))
    with pytest.raises(ValueError):
        await cs.pods.patch("a", {})
    with pytest.raises(ValueError):
        await cs.pods.patch("a", {}, "bogus", "ns")  # type: ignore[arg-type]


# --- semantics on the fake ----------------------------------------------------------------------------------


async def test_create_get_list_and_resource_versions() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    a = await cs.pods.create(pod("a", app="web"))
    assert a["metadata"]["uid"] and a["metadata"]["resourceVersion"] == str(fake.resource_version)
    assert a["metadata"]["generation"] == 1 and a["status"]["phase"] == "Pending"
    with pytest.raises(AlreadyExists):
        await cs.pods.create(pod("a"))
    g = await cs.pods.create({"metadata": {"generateName": "web-", "namespace": "default"}, "spec": {}})
    assert g["metadata"]["name"].startswith("web-") and len(g["metadata"]["name"]) == 9
    await cs.pods.create(pod("b", "other", app="db"))
    assert (await cs.pods.get("a", "default"))["metadata"]["uid"] == a["metadata"]["uid"]
    with pytest.raises(NotFound):
        await cs.pods.get("zzz", "default")

    everything = await cs.pods.list()
    assert everything["kind"] == "PodList" and everything["metadata"]["resourceVersion"] == str(fake.resource_version)
    assert len(everything["items"]) == 3 and "kind" not in everything["items"][0]  # as on the wire
    assert [p["metadata"]["name"] for p in (await cs.pods.list("other"))["items"]] == ["b"]
    assert [p["metadata"]["name"] for p in (await cs.pods.list(label_selector="app in (web,x)"))["items"]] == ["a"]
    assert [p["metadata"]["name"] for p in (await cs.pods.list(field_selector="metadata.namespace!=default"))[
        "items"]] == ["b"]

    page = await cs.pods.list(limit=2)
    assert len(page["items"]) == 2 and page["metadata"]["continue"]
    rest = await cs.pods.list(limit=2, continue_=page["metadata"]["continue"])
    assert len(rest["items"]) == 1 and "continue" not in rest["metadata"]


async def test_update_is_optimistic_and_status_is_a_separate_subresource() -> None:
    cs = Clientset(FakeAPIServer())
    a = await cs.pods.create(pod("a"))
    stale = dict(a)
    a["metadata"]["labels"] = {"v": "2"}
    a["status"] = {"phase": "Running"}  # ignored by the main resource
    updated = await cs.pods.update(a)
    assert updated["metadata"]["labels"] == {"v": "2"} and updated["status"]["phase"] == "Pending"
    assert updated["metadata"]["generation"] == 1  # metadata-only change
    with pytest.raises(Conflict):
        await cs.pods.update({**stale, "metadata": {**stale["metadata"], "resourceVersion": a["metadata"][
            "resourceVersion"]}})
    updated["status"] = {"phase": "Running"}
    updated["metadata"]["labels"] = {"v": "ignored"}
    after = await cs.pods.update_status(updated)
    assert after["status"]["phase"] == "Running" and after["metadata"]["labels"] == {"v": "2"}
    same = await cs.pods.update(after)  # no change: no new resourceVersion
    assert same["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]
    after["spec"]["containers"][0]["image"] = "nginx"
    assert (await cs.pods.update(after))["metadata"]["generation"] == 2


async def test_patch_merge_json_and_resource_version_precondition() -> None:
    cs = Clientset(FakeAPIServer())
    a = await cs.pods.create(pod("a", app="web", tier="fe"))
    merged = await cs.pods.patch("a", {"metadata": {"labels": {"tier": None, "x": "1"}}}, namespace="default")
    assert merged["metadata"]["labels"] == {"app": "web", "x": "1"}
    jp = await cs.pods.patch("a", [{"op": "replace", "path": "/metadata/labels/app", "value": "db"}], "json",
                             "default")
    assert jp["metadata"]["labels"]["app"] == "db"
    with pytest.raises(Conflict):
        await cs.pods.patch("a", {"metadata": {"resourceVersion": a["metadata"]["resourceVersion"]}},
                            namespace="default")
    st = await cs.pods.patch("a", {"status": {"phase": "Running"}, "metadata": {"labels": {"no": "pe"}}},
                             namespace="default", subresource="status")
    assert st["status"]["phase"] == "Running" and "no" not in st["metadata"]["labels"]


async def test_delete_preconditions_finalizers_and_graceful_pods() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.pods.create(pod("a"))
    with pytest.raises(Conflict):
        await cs.pods.delete("a", "default", preconditions={"uid": "wrong"})
    await cs.pods.delete("a", "default")  # unscheduled: gone at once
    assert fake.objects(PODS) == []

    fin = pod("f")
    fin["metadata"]["finalizers"] = ["example.com/hold"]
    await cs.pods.create(fin)
    terminating = await cs.pods.delete("f", "default")
    assert terminating["metadata"]["deletionTimestamp"]
    terminating["metadata"]["finalizers"] = []
    await cs.pods.update(terminating)  # removing the last finalizer completes the delete
    assert fake.objects(PODS) == []

    b = await cs.pods.create(pod("b"))
    await cs.pods.bind(b, "node-1")
    graceful = await cs.pods.delete("b", "default")
    assert graceful["metadata"]["deletionGracePeriodSeconds"] == 30
    await cs.pods.delete("b", "default", grace_period_seconds=0)  # what the kubelet does once stopped
    assert fake.objects(PODS) == []


async def test_bind_sets_node_and_condition_once() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    p = await cs.pods.create(pod("a"))
    result = await cs.pods.bind(p, "node-1")
    assert result["status"] == "Success" and result["code"] == 201
    bound = await cs.pods.get("a", "default")
    assert bound["spec"]["nodeName"] == "node-1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][0].items()
    with pytest.raises(Conflict):
        await cs.pods.bind(p, "node-2")
    q = await cs.pods.create(pod("q"))
    with pytest.raises(Conflict):
        await cs.pods.bind({**q, "metadata": {**q["metadata"], "uid": "other"}}, "node-1")
    await cs.pods.evict("q", "default")
    assert [o["metadata"]["name"] for o in fake.objects(PODS)] == ["a"]


async def test_watch_on_the_fake_replays_from_a_version_and_reports_expiry() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.pods.create(pod("a"))
    rv = str(fake.resource_version)
    await cs.pods.create(pod("b"))
    await cs.pods.delete("a", "default")
    async with aclosing(cs.pods.watch("default", resource_version=rv)) as events:
        got = [(e["type"], e["object"]["metadata"]["name"]) for e in [await anext(events), await anext(events)]]
    assert got == [("ADDED", "b"), ("DELETED", "a")]
    async with aclosing(cs.pods.watch()) as events:  # no version: the current state first
        first = await anext(events)
        await cs.pods.create(pod("c"))
        second = await anext(events)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in (first, second)] == [("ADDED", "b"), ("ADDED", "c")]
    assert fake.watch_count == 0
    fake.compact()
    async with aclosing(cs.pods.watch(resource_version=rv)) as events:
        (event,) = [e async for e in events]
    assert event["type"] == "ERROR" and event["object"]["code"] == 410
    assert isinstance(StatusError.from_status(event["object"]), Gone)


async def test_watch_on_the_fake_ends_at_its_timeout() -> None:
    cs = Clientset(FakeAPIServer())
    loop = asyncio.get_running_loop()
    start = loop.time()
    async with aclosing(cs.pods.watch(timeout_seconds=1)) as events:
        assert [e async for e in events] == []
    assert 0.9 <= loop.time() - start < 2
