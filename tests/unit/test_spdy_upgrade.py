"""The uvicorn hook: a real server with ``HttpToolsProtocol`` hands an ``Upgrade: SPDY/3.1`` request to the app,
which may refuse it with a normal response or switch protocols and own the connection's bytes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn

from apiserver.spdy.upgrade import EXTENSION, HttpToolsProtocol
from kubelab.etcd import free_port

UPGRADE = b"Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Echoes the tunnel's bytes upper-cased on /echo (when the server offers the extension); 404 elsewhere."""
    if scope["type"] != "http":
        return
    if scope["path"] != "/echo" or EXTENSION not in scope.get("extensions", {}):
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"9")]})
        await send({"type": "http.response.body", "body": b"not found"})
        return
    assert scope["query_string"] == b"a=1"
    await send({"type": "http.response.start", "status": 101,
                "headers": [(b"connection", b"Upgrade"), (b"upgrade", b"SPDY/3.1")]})
    while (message := await receive())["type"] == "http.request":
        await send({"type": "http.response.body", "body": message["body"].upper(), "more_body": True})
        if message["body"].endswith(b"."):
            break
    await send({"type": "http.response.body", "body": b"", "more_body": False})


@pytest.fixture()
async def server() -> AsyncIterator[int]:
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, http=HttpToolsProtocol, lifespan="off",
                            log_level="warning")
    instance = uvicorn.Server(config)
    task = asyncio.create_task(instance.serve())
    while not instance.started:
        await asyncio.sleep(0.01)
    yield port
    instance.should_exit = True
    await asyncio.wait_for(task, 5)


async def _request(port: int, head: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head)
    return reader, writer


async def test_switching_protocols_then_raw_bytes(server: int) -> None:
    reader, writer = await _request(server, b"POST /echo?a=1 HTTP/1.1\r\nHost: x\r\n" + UPGRADE +
                                    b"Content-Length: 0\r\n\r\n")
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    assert head.startswith(b"HTTP/1.1 101 Switching Protocols\r\n") and b"upgrade: SPDY/3.1" in head
    writer.write(b"\x80\x03spdy")
    assert await asyncio.wait_for(reader.readexactly(6), 5) == b"\x80\x03SPDY"
    writer.write(b"bye.")
    assert await asyncio.wait_for(reader.read(), 5) == b"BYE."  # then the server closes
    writer.close()


async def test_a_refused_upgrade_is_a_normal_response_and_the_connection_closes(server: int) -> None:
    reader, writer = await _request(server, b"POST /other HTTP/1.1\r\nHost: x\r\n" + UPGRADE + b"\r\n")
    response = await asyncio.wait_for(reader.read(), 5)
    assert response.startswith(b"HTTP/1.1 404 Not Found\r\n") and b"connection: close\r\n" in response
    assert response.endswith(b"\r\n\r\nnot found")
    writer.close()


async def test_plain_requests_are_untouched(server: int) -> None:
    reader, writer = await _request(server, b"GET /echo?a=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (await asyncio.wait_for(reader.readuntil(b"not found"), 5)).startswith(b"HTTP/1.1 404")
    writer.close()
