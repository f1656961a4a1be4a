"""Let the ASGI app take over a connection that asks to upgrade to SPDY/3.1 (old kubectl's exec).

uvicorn hands only ``Upgrade: websocket`` to the app as an upgrade; any other ``Upgrade`` becomes a plain HTTP
request whose connection the app can never own, and the bytes after it are dropped. kube-apiserver answers such
a request with ``101 Switching Protocols`` and then speaks SPDY on the raw connection, so this module adds the
smallest hook that allows it, keeping routing, pod lookup and errors in the app:

- ``HttpToolsProtocol`` is uvicorn's httptools protocol (pass the class as ``uvicorn.run(http=...)``) that also
  treats ``Upgrade: SPDY/3.1`` as an upgrade: instead of a websocket protocol it installs ``UpgradeConnection``
  on the transport and calls the app with an ordinary ``http`` scope plus the scope extension
  ``"kubelab.upgrade": {"protocol": "spdy/3.1"}``;
- the app answers as usual — any normal response (404, a Status error …) is written with
  ``connection: close`` — or sends ``http.response.start`` with status 101, after which the connection is a
  byte pipe: ``receive()`` yields the client's bytes as ``http.request`` messages (``more_body`` True) and
  ``http.disconnect`` at EOF, and every ``http.response.body`` is written as is.

An app that does not know the extension just answers normally, so nothing else changes; a request served by a
server without this hook has no extension, and the app refuses the upgrade (``apiserver.handlers.proxy``).

Websocket upgrades go to ``WebSocketProtocol``: uvicorn's own, except that it takes subprotocol names that are
not RFC 6455 tokens — client-go offers ``SPDY/3.1+portforward.k8s.io`` for port-forward, whose ``/`` the
``websockets`` parser rejects with a 400; the app picks the subprotocol from the raw header anyway.
"""

from __future__ import annotations

import asyncio
import http
import logging
import urllib.parse
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _UvicornHttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.datastructures import Headers
from websockets.server import ServerProtocol
from websockets.typing import Subprotocol

SPDY = b"spdy/3.1"
EXTENSION = "kubelab.upgrade"
HIGH_WATER = 256 * 1024
log = logging.getLogger(__name__)


class _AnySubprotocolServer(ServerProtocol):
    def process_subprotocol(self, headers: Headers) -> Subprotocol | None:
        return None  # the app chooses (``websocket.accept``'s subprotocol, which uvicorn writes back)


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websockets protocol, with any subprotocol names offered."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn.__class__ = _AnySubprotocolServer


class HttpToolsProtocol(_UvicornHttpToolsProtocol):
    """uvicorn's httptools protocol, with SPDY/3.1 upgrades handed to the app as raw connections."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.ws_protocol_class is not None:
            self.ws_protocol_class = WebSocketProtocol

    def _should_upgrade(self) -> bool:
        return self._get_upgrade() == SPDY or super()._should_upgrade()

    def handle_websocket_upgrade(self) -> None:
        if self._get_upgrade() != SPDY:
            super().handle_websocket_upgrade()
            return
        self.connections.discard(self)
        parsed = httptools.parse_url(self.url)
        path = parsed.path.decode("ascii")
        scope = {**self.scope, "path": self.root_path + urllib.parse.unquote(path),
                 "raw_path": self.root_path.encode("ascii") + parsed.path, "query_string": parsed.query or b"",
                 "extensions": {EXTENSION: {"protocol": SPDY.decode()}}}
        connection = UpgradeConnection(self.transport, self.server_state)
        self.transport.set_protocol(connection)
        task = self.loop.create_task(connection.run_asgi(self.app, scope))
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)


class UpgradeConnection(asyncio.Protocol):
    """The transport's protocol once the request is read: a normal response, or a 101 and then raw bytes."""

    def __init__(self, transport: asyncio.Transport, server_state: Any) -> None:
        self.transport = transport
        self.connections: set[Any] = server_state.connections
        self.connections.add(self)
        self._chunks: asyncio.Queue[bytes] = asyncio.Queue()
        self._queued = 0
        self._writable = asyncio.Event()
        self._writable.set()
        self._request_sent = False
        self._status: int | None = None
        self._closed = False

    # asyncio.Protocol
    def data_received(self, data: bytes) -> None:
        self._queued += len(data)
        self._chunks.put_nowait(data)
        if self._queued > HIGH_WATER:
            self.transport.pause_reading()

    def eof_received(self) -> bool | None:
        self._chunks.put_nowait(b"")
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.connections.discard(self)
        self._chunks.put_nowait(b"")
        self._writable.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def shutdown(self) -> None:
        """uvicorn's graceful shutdown: the tunnel simply ends."""
        self.transport.close()

    # ASGI
    async def run_asgi(self, app: Any, scope: dict[str, Any]) -> None:
        try:
            await app(scope, self.receive, self.send)
        except Exception:
            log.exception("error serving upgraded connection %s", scope.get("path"))
            if self._status is None and not self._closed:
                await self.send({"type": "http.response.start", "status": 500,
                                 "headers": [(b"content-type", b"text/plain")]})
                await self.send({"type": "http.response.body", "body": b"internal server error"})
        finally:
            if not self.transport.is_closing():
                self.transport.close()

    async def receive(self) -> dict[str, Any]:
        if not self._request_sent and self._status != 101:  # the upgrade request's body: none is read
            self._request_sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        if self._status != 101:  # no tunnel: only the client leaving is news
            while await self._next_chunk():
                pass
            return {"type": "http.disconnect"}
        data = await self._next_chunk()
        if not data:
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": data, "more_body": True}

    async def _next_chunk(self) -> bytes:
        if self._closed and self._chunks.empty():
            return b""
        data = await self._chunks.get()
        self._queued -= len(data)
        if self._queued <= HIGH_WATER // 2:
            self.transport.resume_reading()
        return data

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            return
        if message["type"] == "http.response.start":
            status = int(message["status"])
            self._status = status
            try:
                phrase = http.HTTPStatus(status).phrase.encode()
            except ValueError:
                phrase = b""
            lines = [b"HTTP/1.1 %d %s\r\n" % (status, phrase)]
            lines += [name + b": " + value + b"\r\n" for name, value in message.get("headers", [])
                      if status == 101 or name.lower() != b"connection"]
            if status != 101:
                lines.append(b"connection: close\r\n")
            self.transport.write(b"".join(lines) + b"\r\n")
        elif message["type"] == "http.response.body":
            if message.get("body"):
                self.transport.write(message["body"])
                await self._writable.wait()
            if not message.get("more_body", False):
                self.transport.close()
