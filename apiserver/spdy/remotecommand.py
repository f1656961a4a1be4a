"""``kubectl exec`` and ``kubectl attach`` over SPDY (client-go's remotecommand, channel protocols v1–v4) bridged
to the kubelet's websocket (``v5.channel.k8s.io``), so the kubelet only ever speaks websockets.

The SPDY client opens one stream per role, each with a ``streamType`` header: ``error`` always, then ``stdin``,
``stdout``, ``stderr`` (not with a tty) as the request asks, and ``resize`` with a tty (v3+). As kubelet's
remotecommand server, the bridge waits for all of them (up to ``STREAM_CREATION_TIMEOUT``) before relaying:

    SPDY stream        websocket channel
    stdin   →          0, and the stream's FIN → [255, 0] (v5 close: the command sees end of input)
    stdout  ←          1          error  ←  3: the Status JSON (v4) / the failure message only (v1–v3)
    stderr  ←          2          resize →  4: one {"Width", "Height"} object per message

When the kubelet closes the websocket every output stream gets its FIN — client-go returns once stdout, stderr
and error have all ended — and when the client drops the connection the websocket is closed, which ends the
command on the kubelet.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping

import aiohttp

from .session import Session, Stream

log = logging.getLogger(__name__)

# As kube's server side offers them (newest first); the client's order decides.
PROTOCOLS = ("v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
STREAM_CREATION_TIMEOUT = 30.0
OUTPUT_CHANNELS = {STDOUT: "stdout", STDERR: "stderr", ERROR: "error"}


def negotiate(offered: list[str], accepted: tuple[str, ...] = PROTOCOLS) -> str | None:
    """The first protocol the client offers that this server speaks (httpstream.Handshake), None if none."""
    return next((p for p in offered if p in accepted), None)


def _flag(query: Mapping[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("true", "1")


def expected_streams(protocol: str, query: Mapping[str, str]) -> set[str]:
    """The stream types the client will open for this request (kubelet's ``waitForStreams`` count)."""
    tty = _flag(query, "tty")
    expected = {"error"}
    for name in ("stdin", "stdout"):
        if _flag(query, name):
            expected.add(name)
    if _flag(query, "stderr") and not tty:
        expected.add("stderr")
    if tty and protocol not in ("channel.k8s.io", "v2.channel.k8s.io"):
        expected.add("resize")
    return expected


def split_json_objects(buffer: bytearray) -> list[bytes]:
    """Take the complete JSON objects off the front of ``buffer`` (client-go writes resize events back to back)."""
    decoder = json.JSONDecoder()
    text = buffer.decode(errors="replace")
    objects, position = [], 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            break
        objects.append(json.dumps(value).encode())
        position = end
    del buffer[:len(text[:position].encode())]
    return objects


def error_stream_body(protocol: str, status: bytes) -> bytes:
    """What the client's error stream gets for the kubelet's final Status (v4: the JSON; before: the message)."""
    if protocol == "v4.channel.k8s.io":
        return status
    try:
        decoded = json.loads(status)
    except ValueError:
        return status
    if not isinstance(decoded, dict) or decoded.get("status") == "Success":
        return b""
    return str(decoded.get("message", "")).encode()


async def bridge(session: Session, upstream: aiohttp.ClientWebSocketResponse, protocol: str,
                 expected: set[str], *, stream_timeout: float = STREAM_CREATION_TIMEOUT) -> None:
    """Relay one exec session; returns when both sides are done (the session's frame loop runs elsewhere)."""
    streams: dict[str, Stream] = {}
    try:
        async with asyncio.timeout(stream_timeout):
            while not expected <= streams.keys():
                stream = await session.accept()
                if stream is None:
                    return
                kind = stream.header("streamtype") or ""
                if kind not in expected or kind in streams:
                    log.warning("exec: unexpected SPDY stream type %r", kind)
                    await stream.close()
                    continue
                streams[kind] = stream
    except TimeoutError:
        log.warning("exec: timed out waiting for SPDY streams (have %s, want %s)", sorted(streams), sorted(expected))
        return
    tasks = [asyncio.create_task(_from_kubelet(upstream, streams, protocol))]
    if "stdin" in streams:
        tasks.append(asyncio.create_task(_stdin(streams["stdin"], upstream)))
    if "resize" in streams:
        tasks.append(asyncio.create_task(_resize(streams["resize"], upstream)))
    try:
        await tasks[0]
    finally:
        for task in tasks[1:]:
            task.cancel()
        await asyncio.gather(*tasks[1:], return_exceptions=True)


async def _from_kubelet(upstream: aiohttp.ClientWebSocketResponse, streams: dict[str, Stream],
                        protocol: str) -> None:
    try:
        async for message in upstream:
            if message.type not in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT):
                break
            data = message.data if isinstance(message.data, bytes) else message.data.encode()
            if len(data) < 2 or data[0] not in OUTPUT_CHANNELS:
                continue
            stream = streams.get(OUTPUT_CHANNELS[data[0]])
            payload = error_stream_body(protocol, data[1:]) if data[0] == ERROR else data[1:]
            if stream is not None and payload:
                await stream.write(payload)
    finally:
        for stream in streams.values():
            if stream.header("streamtype") in ("stdout", "stderr", "error"):
                await stream.close()


async def _stdin(stream: Stream, upstream: aiohttp.ClientWebSocketResponse) -> None:
    while data := await stream.read():
        await upstream.send_bytes(bytes([STDIN]) + data)
    if upstream.protocol == "v5.channel.k8s.io" and not upstream.closed:
        await upstream.send_bytes(bytes([CLOSE, STDIN]))


async def _resize(stream: Stream, upstream: aiohttp.ClientWebSocketResponse) -> None:
    buffer = bytearray()
    while data := await stream.read():
        buffer += data
        for size in split_json_objects(buffer):
            await upstream.send_bytes(bytes([RESIZE]) + size)
