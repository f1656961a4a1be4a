"""A kubelet websocket handler served on a loopback port, and a v1..v5 channel client for it (unit tests of
exec and attach sessions over a real websocket)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

import aiohttp
from aiohttp import web


@asynccontextmanager
async def channel_session(handler: Callable[[web.Request], Awaitable[web.StreamResponse]], query: object,
                          protocol: str = "v5.channel.k8s.io") -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    """``handler`` served at ``/`` on 127.0.0.1; yields the client's websocket, opened with ``query``."""
    app = web.Application()
    app.router.add_get("/", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with (aiohttp.ClientSession() as client,
                    client.ws_connect(f"http://127.0.0.1:{port}/", params=query, protocols=[protocol]) as ws):
            yield ws
    finally:
        await runner.cleanup()


async def received(ws: aiohttp.ClientWebSocketResponse) -> tuple[dict[int, bytes], list[bytes]]:
    """Every binary frame until the server closes: the bytes per channel, and the raw frames."""
    channels: dict[int, bytes] = {}
    frames: list[bytes] = []
    async for msg in ws:
        if msg.type != aiohttp.WSMsgType.BINARY:
            break
        frames.append(msg.data)
        channels[msg.data[0]] = channels.get(msg.data[0], b"") + msg.data[1:]
    return channels, frames


async def upgrade_status(url: str, context: ssl.SSLContext, protocols: Sequence[str] = ("v5.channel.k8s.io",),
                         headers: dict[str, str] | None = None) -> int:
    """The HTTP status a websocket upgrade gets (101 once accepted).

    The session's TLS transports close only after the loop runs once more: without the short wait, the
    transport is collected later, inside whichever test runs next, as an 'unclosed transport' warning
    (aiohttp's documented graceful shutdown for TLS connections)."""
    try:
        async with aiohttp.ClientSession() as session:
            try:
                async with session.ws_connect(url, ssl=context, headers=headers, protocols=tuple(protocols)):
                    return 101
            except aiohttp.WSServerHandshakeError as err:
                return err.status
    finally:
        await asyncio.sleep(0.25)
