"""Attach on the kubelet's side: the options kubelet derives from the container's spec, and sessions over a real
websocket to a real container's shim (``ProcessRuntime``), or a runtime that cannot attach."""

from __future__ import annotations

import asyncio
import json
import os
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from multidict import MultiDict

from kubelet import attach
from kubelet.exec import CLOSE, ERROR, STDIN, STDOUT
from kubelet.runtime.cri import ContainerMeta
from kubelet.runtime.process import ProcessRuntime
from support.websocket import channel_session, received


def test_attach_options_follow_the_containers_spec() -> None:
    """As kubelet's GetAttach: the terminal is the container's, stdin only where it has one."""
    query = MultiDict([("stdin", "true"), ("stdout", "true"), ("stderr", "true")])
    plain = attach.attach_options(query, {"name": "c"})
    assert (plain.stdin, plain.stdout, plain.stderr, plain.tty) == (False, True, True, False)
    terminal = attach.attach_options(query, {"name": "c", "stdin": True, "tty": True})
    assert (terminal.stdin, terminal.stdout, terminal.stderr, terminal.tty) == (True, True, False, True)


def session(spec: dict[str, Any] | None, socket_path: Path | None,
            query: dict[str, str]) -> AbstractAsyncContextManager[aiohttp.ClientWebSocketResponse]:
    """One attach session over a real loopback websocket (v5)."""
    async def handler(request: web.Request) -> web.StreamResponse:
        return await attach.serve(request, spec, socket_path, None)
    return channel_session(handler, query)


async def frames(ws: aiohttp.ClientWebSocketResponse) -> dict[int, bytes]:
    return (await received(ws))[0]


async def test_attach_with_stdin_once_to_a_running_container(tmp_path: Path) -> None:
    """``kubectl run -i -- cat``: stdin reaches the container, its output comes back, the client's v5 close is
    the container's EOF (stdinOnce); the session ends with Success when the container's output ends."""
    runtime = ProcessRuntime(tmp_path / "containers")
    spec = {"name": "c", "image": "busybox", "command": ["cat"], "stdin": True, "stdinOnce": True}
    container = await runtime.start(spec, tmp_path / "w", {"PATH": os.environ["PATH"]}, tmp_path / "c.log",
                                    ContainerMeta(pod_uid="u"))
    async with session(spec, runtime.attach_socket(container), {"stdin": "true", "stdout": "true"}) as ws:
        await ws.send_bytes(bytes([STDIN]) + b"hello\n")
        await ws.send_bytes(bytes([CLOSE, STDIN]))
        channels = await frames(ws)
    assert channels[STDOUT] == b"hello\n"
    assert json.loads(channels[ERROR]) == {"metadata": {}, "status": "Success"}
    assert await asyncio.wait_for(container.wait(), 10) == 0


async def test_a_runtime_that_cannot_attach_says_so(tmp_path: Path) -> None:
    async with session({"name": "c"}, None, {"stdout": "true"}) as ws:
        channels = await frames(ws)
    status = json.loads(channels[ERROR])
    assert (status["reason"], status["code"]) == ("BadRequest", 400)
    assert "attach is not supported by this kubelet's container runtime" in status["message"]


async def test_attach_to_a_container_that_exited(tmp_path: Path) -> None:
    runtime = ProcessRuntime(tmp_path / "containers")
    spec = {"name": "c", "image": "busybox", "command": ["true"]}
    container = await runtime.start(spec, tmp_path / "w", {"PATH": os.environ["PATH"]}, tmp_path / "c.log")
    assert await asyncio.wait_for(container.wait(), 10) == 0
    async with session(spec, runtime.attach_socket(container), {"stdout": "true"}) as ws:
        channels = await frames(ws)
    assert json.loads(channels[ERROR])["message"] == 'container "c" is not running'
