"""``kubectl port-forward`` over SPDY (client-go's ``portforward``, protocol ``portforward.k8s.io``) bridged to the
kubelet's websocket port-forward (``kubelet.portforward``), one kubelet websocket per forwarded connection.

For every local connection kubectl opens two streams with the same ``requestID`` and ``port`` headers:
``streamType: error`` first (which it half-closes at once: only the server writes there), then
``streamType: data``. As kubelet's ``httpStreamHandler``, a pair is forwarded once both streams are there:

    SPDY data stream   ⇄  kubelet data channel 0 (the 2-byte port prefix dropped); its FIN → [255, 0]
    SPDY error stream  ←  kubelet error channel 1: the dial failure's text, then FIN

When the kubelet's websocket ends (the pod closed the connection) both streams get their FIN; client-go then
closes its local connection. The session itself lasts until kubectl hangs up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import aiohttp

from .session import Session, Stream

log = logging.getLogger(__name__)

PROTOCOL = "portforward.k8s.io"
DATA, ERROR, CLOSE = 0, 1, 255
PREFIX = 2  # bytes of port number leading each kubelet channel
Dial = Callable[[int], Awaitable[aiohttp.ClientWebSocketResponse]]


def pair_key(stream: Stream) -> tuple[str, str] | None:
    """(requestID, port) of a port-forward stream, None when a header is missing (kube resets such streams)."""
    request_id, port = stream.header("requestid"), stream.header("port")
    return (request_id, port) if request_id and port else None


async def bridge(session: Session, dial: Dial) -> None:
    """Pair the client's streams and forward each pair; returns once the client's connection has ended."""
    pending: dict[tuple[str, str], dict[str, Stream]] = {}
    forwards: set[asyncio.Task[None]] = set()
    try:
        while (stream := await session.accept()) is not None:
            key, kind = pair_key(stream), stream.header("streamtype")
            if key is None or kind not in ("data", "error"):
                log.warning("portforward: stream without requestID/port or with streamType %r", kind)
                await stream.close()
                continue
            pair = pending.setdefault(key, {})
            pair[kind] = stream
            if len(pair) == 2:
                del pending[key]
                task = asyncio.create_task(forward(pair["data"], pair["error"], key[1], dial))
                forwards.add(task)
                task.add_done_callback(forwards.discard)
    finally:
        for task in forwards:
            task.cancel()
        await asyncio.gather(*forwards, return_exceptions=True)


async def forward(data: Stream, error: Stream, port_header: str, dial: Dial) -> None:
    """One forwarded connection: a kubelet websocket for ``port``, relayed to the pair of streams."""
    try:
        port = int(port_header)
        upstream = await dial(port)
    except ValueError:
        await _fail(data, error, f"invalid port {port_header!r}")
        return
    except aiohttp.ClientError as err:
        await _fail(data, error, f"error dialing backend: {err}")
        return
    to_kubelet = asyncio.create_task(_to_kubelet(data, upstream))
    try:
        await _from_kubelet(upstream, data, error)
    finally:
        to_kubelet.cancel()
        await asyncio.gather(to_kubelet, return_exceptions=True)
        await upstream.close()


async def _fail(data: Stream, error: Stream, message: str) -> None:
    await error.write(message.encode(), fin=True)
    await data.close()


async def _from_kubelet(upstream: aiohttp.ClientWebSocketResponse, data: Stream, error: Stream) -> None:
    prefixed = {DATA: PREFIX, ERROR: PREFIX}  # bytes of the port prefix still to drop per channel
    try:
        async for message in upstream:
            if message.type != aiohttp.WSMsgType.BINARY or not message.data:
                break
            channel, payload = message.data[0], message.data[1:]
            if channel not in prefixed:
                continue
            skip = min(prefixed[channel], len(payload))
            prefixed[channel] -= skip
            payload = payload[skip:]
            if payload:
                await (data if channel == DATA else error).write(payload)
    finally:
        await error.close()
        await data.close()


async def _to_kubelet(data: Stream, upstream: aiohttp.ClientWebSocketResponse) -> None:
    while chunk := await data.read():
        await upstream.send_bytes(bytes([DATA]) + chunk)
    if not upstream.closed:
        await upstream.send_bytes(bytes([CLOSE, DATA]))
