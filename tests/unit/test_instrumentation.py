"""The apiserver's request metrics: kube's verb and scope for each kind of request, and what the middleware
records for a request (its code, its duration, a watch while it is open)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import REGISTRY

from apiserver.instrumentation import RequestMetrics, request_labels


def scope(method: str, path: str, query: str = "", content_type: str = "") -> dict[str, Any]:
    headers = [(b"content-type", content_type.encode())] if content_type else []
    return {"type": "http", "method": method, "path": path, "query_string": query.encode(), "headers": headers}


@pytest.mark.parametrize(("method", "path", "query", "content_type", "verb", "where", "long_running"), [
    ("POST", "/api/v1/namespaces/ns/pods", "", "", "POST", "resource", False),
    ("GET", "/api/v1/namespaces/ns/pods/p", "", "", "GET", "resource", False),
    ("GET", "/api/v1/namespaces/ns/pods", "", "", "LIST", "namespace", False),
    ("GET", "/api/v1/pods", "", "", "LIST", "cluster", False),
    ("GET", "/api/v1/pods", "watch=true", "", "WATCH", "cluster", True),
    ("GET", "/api/v1/namespaces/ns/pods", "watch=1&resourceVersion=5", "", "WATCH", "namespace", True),
    ("GET", "/api/v1/namespaces/ns/pods", "watch=false", "", "LIST", "namespace", False),
    ("GET", "/api/v1/watch/namespaces/ns/pods", "", "", "WATCH", "namespace", True),
    ("PATCH", "/api/v1/namespaces/ns/configmaps/c", "", "application/apply-patch+yaml", "APPLY", "resource", False),
    ("PATCH", "/api/v1/namespaces/ns/configmaps/c", "", "application/merge-patch+json", "PATCH", "resource", False),
    ("PUT", "/api/v1/nodes/n1/status", "", "application/json", "PUT", "resource", False),
    ("DELETE", "/api/v1/namespaces/ns/pods", "", "", "DELETE", "namespace", False),
    ("GET", "/api/v1/namespaces/default", "", "", "GET", "resource", False),
    ("GET", "/api/v1/namespaces", "", "", "LIST", "cluster", False),
    ("POST", "/api/v1/namespaces/ns/pods/p/exec", "command=ls", "", "CONNECT", "resource", True),
    ("GET", "/api/v1/namespaces/ns/pods/p/portforward", "", "", "CONNECT", "resource", True),
    ("GET", "/api/v1/namespaces/ns/pods/p/log", "follow=true", "", "GET", "resource", True),
])
def test_verbs_and_scopes_as_kube_reports_them(method: str, path: str, query: str, content_type: str, verb: str,
                                               where: str, long_running: bool) -> None:
    labels, watch = request_labels(scope(method, path, query, content_type))
    assert (labels[0], labels[6], watch) == (verb, where, long_running)
    assert labels[7] == "apiserver"


def test_group_version_subresource_and_dry_run() -> None:
    labels, _ = request_labels(scope("PUT", "/apis/apps/v1/namespaces/ns/deployments/d/scale", "dryRun=All"))
    assert labels == ("PUT", "All", "apps", "v1", "deployments", "scale", "resource", "apiserver")


def test_a_non_resource_path_is_the_subresource_with_no_scope() -> None:
    assert request_labels(scope("GET", "/healthz")) == (("GET", "", "", "", "", "/healthz", "", "apiserver"), False)


def sample(metric: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(metric, labels) or 0.0


async def test_the_middleware_counts_codes_and_holds_a_watch_open() -> None:
    released = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if "watch=true" in scope["query_string"].decode():
            await released.wait()
        code = 404 if scope["path"].endswith("/missing") or scope["path"] == "/nowhere" else 200
        await send({"type": "http.response.start", "status": code, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        pass

    middleware = RequestMetrics(app)
    watch = {"verb": "WATCH", "group": "", "version": "v1", "resource": "secrets", "subresource": "",
             "scope": "namespace", "component": "apiserver"}
    got = {**watch, "verb": "GET", "dry_run": "", "scope": "resource"}
    before = (sample("apiserver_request_total", **got, code="200"), sample("apiserver_request_total", **got,
                                                                            code="404"))
    await middleware(scope("GET", "/api/v1/namespaces/m/secrets/s"), receive, send)
    await middleware(scope("GET", "/api/v1/namespaces/m/secrets/missing"), receive, send)
    await middleware(scope("GET", "/nowhere"), receive, send)
    assert sample("apiserver_request_total", **got, code="200") == before[0] + 1
    assert sample("apiserver_request_total", **got, code="404") == before[1] + 1
    nowhere = {"verb": "GET", "dry_run": "", "group": "", "version": "", "resource": "", "subresource": "/nowhere",
               "scope": "", "component": "apiserver"}
    assert REGISTRY.get_sample_value("apiserver_request_total", {**nowhere, "code": "404"}) is None
    assert sample("apiserver_response_sizes_count", **{k: v for k, v in got.items() if k != "dry_run"}) >= 1

    open_watches = sample("apiserver_longrunning_requests", **watch)
    task = asyncio.create_task(middleware(scope("GET", "/api/v1/namespaces/m/secrets", "watch=true"), receive, send))
    await asyncio.sleep(0)
    assert sample("apiserver_longrunning_requests", **watch) == open_watches + 1
    released.set()
    await task
    assert sample("apiserver_longrunning_requests", **watch) == open_watches
    assert REGISTRY.get_sample_value("apiserver_request_sli_duration_seconds_count", watch) is None  # not in the SLI
    assert sample("apiserver_request_duration_seconds_count", **watch, dry_run="") >= 1
