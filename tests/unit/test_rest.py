"""kubeclient.rest and kubeclient.config: the transport boundary over a real loopback HTTP server."""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from apimachinery.errors import (
    AlreadyExists,
    Conflict,
    Gone,
    InternalError,
    Invalid,
    NotFound,
    ServiceUnavailable,
    StatusError,
    Timeout,
)
from kubeclient.config import Config, ConfigError, build_config, load_kubeconfig
from kubeclient.rest import RESTClient, Unreachable, until_listening


def status(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code, "details": {"name": "x", "kind": "pods"}}
    return web.Response(status=code, body=orjson.dumps(body), content_type="application/json")


class Server:
    def __init__(self) -> None:
        self.requests: list[web.Request] = []
        self.bodies: list[bytes] = []
        self.retry_hits = 0

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request)
        self.bodies.append(await request.read())
        path = request.path
        if path == "/notfound":
            return status(404, "NotFound", 'pods "x" not found')
        if path == "/conflict":
            return status(409, "Conflict", "the object has been modified")
        if path == "/exists":
            return status(409, "AlreadyExists", 'pods "x" already exists')
        if path == "/plain500":
            return web.Response(status=500, text="upstream exploded")
        if path == "/detail422":
            return web.json_response({"detail": "bad field"}, status=422)
        if path == "/notjson":
            return web.Response(status=200, text="<html>")
        if path == "/slow":
            await asyncio.sleep(2)
            return web.json_response({})
        if path == "/retry":
            self.retry_hits += 1
            if self.retry_hits < 3:
                return web.Response(status=429, headers={"Retry-After": "0"}, text="slow down")
            return web.json_response({"ok": self.retry_hits})
        if path == "/retry-forever":
            return web.Response(status=503, headers={"Retry-After": "0"}, text="overloaded")
        if path == "/watch":
            return await self.watch(request)
        if path == "/watch-gone":
            return status(410, "Expired", "too old resource version")
        if path == "/watch-cut":
            resp = web.StreamResponse()
            await resp.prepare(request)
            await resp.write(b'{"type":"ADDED","object":{}}\n{"type":')
            assert request.transport is not None
            request.transport.close()
            return resp
        return web.json_response({"method": request.method, "path": path, "query": dict(request.query)},
                                 status=201 if request.method == "POST" else 200)

    async def watch(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        resp.content_type = "application/json"
        await resp.prepare(request)
        big = {"type": "ADDED", "object": {"metadata": {"name": "big"}, "data": {"k": "v" * 300_000}}}
        lines = [orjson.dumps({"type": "ADDED", "object": {"metadata": {"name": f"p{i}"}}}) + b"\n" for i in range(3)]
        blob = b"".join(lines) + orjson.dumps(big) + b"\n\n" + b'{"type":"BOOKMARK","object":{}}'
        for i in range(0, len(blob), 7777):  # chunk boundaries fall inside lines
            await resp.write(blob[i:i + 7777])
            await asyncio.sleep(0)
        await resp.write_eof()
        return resp


@pytest.fixture
async def server() -> AsyncIterator[tuple[Server, RESTClient]]:
    srv = Server()
    test_server = TestServer(srv.app(), host="127.0.0.1")
    await test_server.start_server()
    client = RESTClient(Config(host=str(test_server.make_url("")).rstrip("/"), token="s3cret"),
                        request_timeout=0.5)
    try:
        yield srv, client
    finally:
        await client.close()
        await test_server.close()


async def test_success_decodes_json_and_sends_body_headers_and_params(server: tuple[Server, RESTClient]) -> None:
    srv, rest = server
    result = await rest.request("PATCH", "/api/v1/nodes/n1", params={"fieldManager": "x"}, body={"a": 1},
                                content_type="application/merge-patch+json")
    assert result == {"method": "PATCH", "path": "/api/v1/nodes/n1", "query": {"fieldManager": "x"}}
    req = srv.requests[-1]
    assert req.headers["Content-Type"] == "application/merge-patch+json"
    assert req.headers["Authorization"] == "Bearer s3cret"
    assert req.headers["Accept"] == "application/json"
    assert orjson.loads(srv.bodies[-1]) == {"a": 1}
    created = await rest.request("POST", "/things", body=b'{"pre":"encoded"}')
    assert created["method"] == "POST" and srv.bodies[-1] == b'{"pre":"encoded"}'


@pytest.mark.parametrize(("path", "error", "message"), [
    ("/notfound", NotFound, 'pods "x" not found'),
    ("/conflict", Conflict, "the object has been modified"),
    ("/exists", AlreadyExists, 'pods "x" already exists'),
    ("/plain500", InternalError, "upstream exploded"),
    ("/detail422", Invalid, "bad field"),
    ("/notjson", InternalError, "not JSON"),
])
async def test_failures_become_status_errors(server: tuple[Server, RESTClient], path: str,
                                             error: type[StatusError], message: str) -> None:
    _, rest = server
    with pytest.raises(error) as info:
        await rest.request("GET", path)
    assert type(info.value) is error
    assert message in info.value.message


async def test_status_details_survive_the_round_trip(server: tuple[Server, RESTClient]) -> None:
    _, rest = server
    with pytest.raises(NotFound) as info:
        await rest.request("GET", "/notfound")
    assert (info.value.name, info.value.kind, info.value.code) == ("x", "pods", 404)


async def test_retry_after_is_honoured_then_gives_up(server: tuple[Server, RESTClient]) -> None:
    srv, rest = server
    assert await rest.request("GET", "/retry") == {"ok": 3}
    with pytest.raises(ServiceUnavailable):
        await rest.request("GET", "/retry-forever")
    assert sum(1 for r in srv.requests if r.path == "/retry-forever") == 4  # 1 + max_retries


async def test_client_timeout_becomes_timeout(server: tuple[Server, RESTClient]) -> None:
    _, rest = server
    with pytest.raises(Timeout):
        await rest.request("GET", "/slow")


async def test_unreachable_server_becomes_service_unavailable() -> None:
    """Nothing listening: a 503 ``ServiceUnavailable``, of the kind ``Unreachable`` (a refused connection, which
    the reflector polls for at start-up instead of backing off)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with RESTClient(Config(host=f"http://127.0.0.1:{port}")) as rest:
        with pytest.raises(Unreachable) as refused:
            await rest.request("GET", "/api")
        assert isinstance(refused.value, ServiceUnavailable) and refused.value.code == 503
        assert refused.value.address == ("127.0.0.1", port)
        with pytest.raises(Unreachable):
            async for _ in rest.stream("/watch"):
                pass


async def test_until_listening_returns_once_the_address_accepts() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    waiting = asyncio.create_task(until_listening(("127.0.0.1", port), poll=0.01))
    await asyncio.sleep(0.1)
    assert not waiting.done()  # nothing listens yet
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", port)
    async with server:
        await asyncio.wait_for(waiting, 2)


async def test_stream_reassembles_lines_split_across_chunks(server: tuple[Server, RESTClient]) -> None:
    _, rest = server
    events = [e async for e in rest.stream("/watch", params={"watch": "true"})]
    assert [e["object"].get("metadata", {}).get("name") for e in events] == ["p0", "p1", "p2", "big", None]
    assert len(events[3]["object"]["data"]["k"]) == 300_000
    assert events[-1]["type"] == "BOOKMARK"  # the last line had no newline


async def test_stream_errors(server: tuple[Server, RESTClient]) -> None:
    _, rest = server
    with pytest.raises(Gone):
        async for _ in rest.stream("/watch-gone"):
            pass
    seen = []
    with pytest.raises(ServiceUnavailable) as cut:
        async for event in rest.stream("/watch-cut"):
            seen.append(event)
    assert len(seen) == 1
    assert not isinstance(cut.value, Unreachable)  # the server was there: not a start-up's refused connection


async def test_closing_a_stream_early_releases_it(server: tuple[Server, RESTClient]) -> None:
    _, rest = server
    stream = rest.stream("/watch")
    first = await stream.__anext__()
    await stream.aclose()
    assert first["object"]["metadata"]["name"] == "p0"
    assert (await rest.request("GET", "/after"))["path"] == "/after"  # the client is still usable


def write_kubeconfig(path: Path, server: str = "https://10.0.0.1:6443", **user: str) -> Path:
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": "dev",
        "clusters": [{"name": "c1", "cluster": {"server": server, "certificate-authority": "ca.crt"}},
                     {"name": "c2", "cluster": {"server": "http://other:8080"}}],
        "users": [{"name": "u1", "user": user}],
        "contexts": [{"name": "dev", "context": {"cluster": "c1", "user": "u1"}},
                     {"name": "prod", "context": {"cluster": "c2"}}],
    }
    path.write_text(orjson.dumps(doc).decode())  # JSON is YAML
    return path


def test_kubeconfig_current_context_resolves_server_and_credentials(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file\n")
    cfg = load_kubeconfig(write_kubeconfig(tmp_path / "config", tokenFile="token",
                                           **{"client-certificate-data": base64.b64encode(b"CERT").decode()}))
    assert cfg.host == "https://10.0.0.1:6443"
    assert cfg.token == "from-file"
    assert cfg.ca_file == str(tmp_path / "ca.crt")  # relative to the kubeconfig
    assert cfg.cert_data == b"CERT"
    assert load_kubeconfig(tmp_path / "config", context="prod").host == "http://other:8080"


def test_kubeconfig_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_kubeconfig(tmp_path / "missing")
    with pytest.raises(ConfigError):
        load_kubeconfig(write_kubeconfig(tmp_path / "config"), context="nope")


def test_build_config_master_wins_and_plain_http_has_no_tls(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_kubeconfig(tmp_path / "config", "http://127.0.0.1:6443", token="t")
    cfg = build_config(master="http://127.0.0.1:9999/", kubeconfig=path)
    assert (cfg.host, cfg.token) == ("http://127.0.0.1:9999", "t")
    assert cfg.ssl_context() is None
    monkeypatch.setenv("KUBECONFIG", str(path))
    assert build_config().host == "http://127.0.0.1:6443"
    assert build_config(master="http://m:1").token is None  # --master alone ignores $KUBECONFIG
    monkeypatch.setenv("KUBECONFIG", "")
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    with pytest.raises(ConfigError):
        build_config()
