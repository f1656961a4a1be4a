"""The kubelet's registration retries (kubelet/node.py ``register_with_retry``) against a real HTTP server that is
not listening yet, as a new cluster's kubelets start beside its apiserver."""

from __future__ import annotations

import asyncio
import socket

from aiohttp import web

from kubeclient.config import Config
from kubeclient.rest import RESTClient
from kubelet.node import register_with_retry


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _serve(port: int, status: int) -> web.AppRunner:
    async def nodes(request: web.Request) -> web.Response:
        return web.json_response({"kind": "Status", "code": status}, status=status)

    app = web.Application()
    app.router.add_post("/api/v1/nodes", nodes)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


async def test_registration_is_tried_again_as_soon_as_the_apiserver_listens() -> None:
    """Refused connections do not back off (100 ms doubling would have made attempts at 0.1, 0.3 and 0.7 s): the
    second attempt is the one made once something listens, however long that took."""
    port = _closed_port()
    attempts: list[bool] = []  # per attempt: was the server listening when it was made?
    listening = False
    async with RESTClient(Config(host=f"http://127.0.0.1:{port}"), max_retries=0) as rest:
        async def attempt() -> None:
            attempts.append(listening)
            await rest.request("POST", "/api/v1/nodes", body={"kind": "Node"})

        registering = asyncio.create_task(register_with_retry("node01", attempt))
        await asyncio.sleep(0.8)
        assert attempts == [False] and not registering.done()
        runner = await _serve(port, 201)
        listening = True
        try:
            assert await asyncio.wait_for(registering, 10) is True
        finally:
            await runner.cleanup()
    assert attempts == [False, True]


async def _attempts_until_stopped(port: int, seconds: float) -> int:
    """Registration against ``port``, stopped after ``seconds`` (it must then give up): how many attempts it made."""
    calls = 0
    async with RESTClient(Config(host=f"http://127.0.0.1:{port}"), max_retries=0) as rest:
        async def attempt() -> None:
            nonlocal calls
            calls += 1
            await rest.request("POST", "/api/v1/nodes", body={"kind": "Node"})

        stop = asyncio.Event()
        registering = asyncio.create_task(register_with_retry("node01", attempt, stop))
        await asyncio.sleep(seconds)
        stop.set()
        assert await asyncio.wait_for(registering, 10) is False
    return calls


async def test_an_apiserver_that_answers_with_an_error_is_backed_off() -> None:
    """A server that answers (here 500) is retried after the back-off, not polled."""
    port = _closed_port()
    runner = await _serve(port, 500)
    try:
        calls = await _attempts_until_stopped(port, 0.5)
    finally:
        await runner.cleanup()
    assert 1 <= calls <= 4  # at 0, 0.1, 0.3 s (100 ms doubling), where polling would have made ~10


async def test_stop_ends_the_wait_for_a_listener() -> None:
    """Refused once, then waiting for a listener (no further attempt) until stopped."""
    assert await _attempts_until_stopped(_closed_port(), 0.3) == 1
