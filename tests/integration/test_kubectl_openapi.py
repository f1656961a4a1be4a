"""The real kubectl against the OpenAPI routes alone (plus canned discovery), over a loopback uvicorn server.

No etcd or apiserver needed: this pins down what kubectl needs from ``/openapi/v2`` and ``/openapi/v3`` —
``explain`` renders from the v3 documents, ``--output=plaintext-openapiv2`` from the v2 protobuf, and ``create``
learns from the v3 PATCH operation that it may send ``fieldValidation=Strict``.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from apiserver.handlers.openapi import routes
from conftest import ROOT

pytestmark = pytest.mark.kubectl

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: nginx
spec:
  containers:
  - name: nginx
    image: nginx
"""


def resource(name: str, kind: str) -> dict[str, Any]:
    return {"name": name, "singularName": "", "namespaced": True, "kind": kind, "verbs": VERBS}


def canned_app(posted: list[str]) -> Starlette:
    """The OpenAPI routes plus just enough discovery for kubectl to map pods and deployments to their kinds."""

    def answer(body: dict[str, Any]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return JSONResponse(body)
        return endpoint

    apps = {"groupVersion": "apps/v1", "version": "v1"}
    canned = {
        "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0", "platform": "linux/amd64"},
        "/api": {"kind": "APIVersions", "versions": ["v1"],
                 "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]},
        "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": [resource("pods", "Pod")]},
        "/apis": {"kind": "APIGroupList", "apiVersion": "v1",
                  "groups": [{"name": "apps", "versions": [apps], "preferredVersion": apps}]},
        "/apis/apps/v1": {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
                          "resources": [resource("deployments", "Deployment")]},
    }

    async def create(request: Request) -> Response:
        posted.append(request.url.query)
        pod = await request.json()
        pod["metadata"].update(namespace=request.path_params["namespace"], uid="1", resourceVersion="1")
        return JSONResponse(pod, status_code=201)

    return Starlette(routes=[*routes, *(Route(path, answer(body)) for path, body in canned.items()),
                             Route("/api/v1/namespaces/{namespace}/pods", create, methods=["POST"])])


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, list[str]]]:
    posted: list[str] = []
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(canned_app(posted), log_level="warning", lifespan="off", ws="none")
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not instance.started:
        thread.join(0.05)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}", posted
    instance.should_exit = True
    thread.join(10)
    sock.close()


def run(kubectl_bin: str, url: str, cache: Path, *args: str) -> str:
    result = subprocess.run([kubectl_bin, "-s", url, "--cache-dir", str(cache), *args], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_explain_reads_the_v3_documents(kubectl_bin: str, server: tuple[str, list[str]], tmp_path: Path) -> None:
    out = run(kubectl_bin, server[0], tmp_path, "explain", "pod.spec.containers")
    assert out.startswith("KIND:       Pod\nVERSION:    v1\n")
    assert "FIELD: containers <[]Container>" in out
    assert "A single application container that you want to run within a pod." in out
    assert "\n  name\t<string> -required-\n" in out
    assert "\n  resources\t<ResourceRequirements>\n" in out

    out = run(kubectl_bin, server[0], tmp_path, "explain", "deployment.spec.strategy.rollingUpdate")
    assert out.startswith("GROUP:      apps\nKIND:       Deployment\n")
    assert "\n  maxSurge\t<IntOrString>\n" in out


def test_explain_describes_fields_typed_by_ref(kubectl_bin: str, server: tuple[str, list[str]],
                                              tmp_path: Path) -> None:
    """A field whose type is another object carries kube's description (v3: allOf around the $ref)."""
    out = run(kubectl_bin, server[0], tmp_path, "explain", "pod.spec.containers.livenessProbe")
    assert "FIELD: livenessProbe <Probe>" in out
    assert "Periodic probe of container liveness. Container will be restarted if the" in out
    assert "<no description>" not in run(kubectl_bin, server[0], tmp_path, "explain", "pod.spec.containers")


def test_every_ref_field_has_kubes_description(client: httpx.Client) -> None:
    """Every served field kube v1.32 describes (tools/openapi_ref_descriptions.json) has that text in /openapi/v3."""
    kube = json.loads((ROOT / "tools" / "openapi_ref_descriptions.json").read_text())
    checked = 0
    for gv in ("api/v1", "apis/apps/v1", "apis/batch/v1"):
        schemas = client.get(f"/openapi/v3/{gv}").json()["components"]["schemas"]
        for name, schema in schemas.items():
            for field, prop in (schema.get("properties") or {}).items():
                if f"{name}.{field}" in kube:
                    assert prop.get("description") == kube[f"{name}.{field}"], f"{name}.{field}"
                    checked += 1
    assert checked > 300


def test_explain_from_the_v2_protobuf(kubectl_bin: str, server: tuple[str, list[str]], tmp_path: Path) -> None:
    out = run(kubectl_bin, server[0], tmp_path, "explain", "pods", "--output=plaintext-openapiv2")
    assert "Pod is a collection of containers that can run on a host." in out
    assert "Specification of the desired behavior of the pod." in out


def test_create_validates_on_the_server(kubectl_bin: str, server: tuple[str, list[str]], tmp_path: Path) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD_YAML)
    out = run(kubectl_bin, server[0], tmp_path / "cache", "create", "-f", str(manifest))
    assert out.strip() == "pod/nginx created"
    assert "fieldValidation=Strict" in server[1][-1].split("&")
