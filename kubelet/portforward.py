"""``kubectl port-forward`` on the kubelet's side: kubelet's websocket port-forward protocol, one TCP connection to
the pod's IP per forwarded port.

The apiserver proxies ``pods/{name}/portforward`` to ``/portForward/{namespace}/{pod}?ports=8000,9000`` (the
Python client's websocket is relayed as is; kubectl's SPDY streams are turned into one websocket per
connection by ``apiserver.spdy.portforward``). As kubelet's ``portforward/websocket.go``:

- port ``i`` of the request gets data channel ``2i`` and error channel ``2i+1``; the first message on each
  channel is the port number (2 bytes, little-endian), so the client knows which port a channel belongs to;
- each port is dialled at once (``status.podIP``:port); a failure is written as text on its error channel;
- data channel messages go to the pod, the pod's bytes come back on the data channel; a ``[255, channel]``
  message (the v5 channel close) half-closes the connection toward the pod, as client-go closes its data stream
  when the local connection stops sending;
- the websocket ends when every pod connection has ended, or the client leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import struct
from typing import Any

from aiohttp import web

PROTOCOLS = ("v4.channel.k8s.io", "portforward.k8s.io")
CLOSE = 255
READ_CHUNK = 64 * 1024


def parse_ports(values: list[str]) -> list[int]:
    """The ``ports`` query values (repeated or comma-separated), as kubelet's ``parsePortForwardRequest``."""
    ports = []
    for value in values:
        for part in value.split(","):
            port = int(part.strip())  # ValueError: the caller's 400
            if not 0 < port < 65536:
                raise ValueError(f"port {port} must be > 0 and < 65536")
            ports.append(port)
    if not ports:
        raise ValueError("query parameter 'ports' is required")
    return ports


def port_prefix(port: int) -> bytes:
    return struct.pack("<H", port)


def dial_error(port: int, pod: dict[str, Any], pod_ip: str, err: OSError) -> str:
    """What the error channel says when the pod's port cannot be reached (kube: the runtime's dial error)."""
    meta = pod["metadata"]
    reason = os.strerror(err.errno).lower() if err.errno else str(err)
    return (f"error forwarding port {port} to pod {meta['namespace']}/{meta['name']}, uid {meta.get('uid', '')}: "
            f"failed to connect to {pod_ip}:{port} inside the pod's network: dial tcp {pod_ip}:{port}: "
            f"connect: {reason}")


class Forwarding:
    """One websocket's port connections, each relayed on its channel pair."""

    def __init__(self, ws: web.WebSocketResponse, pod: dict[str, Any], pod_ip: str, ports: list[int]) -> None:
        self.ws = ws
        self.pod = pod
        self.pod_ip = pod_ip
        self.ports = ports
        self.writers: dict[int, asyncio.StreamWriter] = {}
        self._lock = asyncio.Lock()

    async def send(self, channel: int, data: bytes) -> None:
        """One message on ``channel``; a client already gone (its transport closing) is told nothing, not an error
        (a dial error for a kubectl that has just left was an aiohttp traceback in the kubelet's log)."""
        if not self.ws.closed:
            async with self._lock:
                with contextlib.suppress(ConnectionResetError):
                    await self.ws.send_bytes(bytes([channel]) + data)

    async def run(self) -> None:
        for i, port in enumerate(self.ports):
            await self.send(2 * i, port_prefix(port))
            await self.send(2 * i + 1, port_prefix(port))
        # Every port is dialled before the client's bytes are read, so none arrive for a connection not yet there.
        connections = await asyncio.gather(*(self._dial(i, port) for i, port in enumerate(self.ports)))
        pumps = [asyncio.create_task(self._pump(i, reader)) for i, reader in enumerate(connections) if reader]
        inbound = asyncio.create_task(self._from_client())
        pumping: asyncio.Future[list[None]] = asyncio.gather(*pumps)
        waiters: list[asyncio.Future[Any]] = [inbound, pumping]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (inbound, *pumps):
                task.cancel()
            # The gathering future is awaited too, so a pump's error is not left "never retrieved".
            await asyncio.gather(inbound, pumping, *pumps, return_exceptions=True)
            for writer in self.writers.values():
                writer.close()

    async def _dial(self, index: int, port: int) -> asyncio.StreamReader | None:
        """Connect to the pod's port; a failure is told on the port's error channel."""
        try:
            reader, self.writers[index] = await asyncio.open_connection(self.pod_ip, port)
        except OSError as err:
            await self.send(2 * index + 1, dial_error(port, self.pod, self.pod_ip, err).encode())
            return None
        return reader

    async def _pump(self, index: int, reader: asyncio.StreamReader) -> None:
        """Copy what the pod sends to the data channel until it closes."""
        try:
            while data := await reader.read(READ_CHUNK):
                await self.send(2 * index, data)
        except OSError:
            pass

    async def _from_client(self) -> None:
        async for message in self.ws:
            if message.type != web.WSMsgType.BINARY or not message.data:
                continue
            data: bytes = message.data
            if data[0] == CLOSE and len(data) == 2:
                writer = self.writers.get(data[1] // 2)
                if writer is not None and writer.can_write_eof():
                    writer.write_eof()
                continue
            writer = self.writers.get(data[0] // 2)
            if data[0] % 2 == 0 and writer is not None and len(data) > 1:
                writer.write(data[1:])
                await writer.drain()


async def serve(request: web.Request, pod: dict[str, Any] | None, pod_ip: str, problem: str | None
                ) -> web.StreamResponse:
    """One port-forward websocket; ``problem`` (why the pod cannot be forwarded to) answers 400 before upgrading."""
    if problem is not None or pod is None:
        return _status(400, problem or "pod not found")
    try:
        ports = parse_ports(request.query.getall("ports", []))
    except ValueError as err:
        return _status(400, f"unable to parse port-forward request: {err}")
    ws = web.WebSocketResponse(protocols=PROTOCOLS, max_msg_size=0)
    await ws.prepare(request)
    await Forwarding(ws, pod, pod_ip, ports).run()
    await ws.close()
    return ws


def _status(code: int, message: str) -> web.Response:
    return web.json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": message, "reason": "BadRequest", "code": code}, status=code)
