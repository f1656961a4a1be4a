"""Serve one app on the secure (HTTPS) port and the plain-HTTP port at once, from one process and one event loop.

kube-apiserver serves HTTPS on ``--secure-port``; until 1.24 it also served its "insecure port" (plain HTTP, on
127.0.0.1, no authentication). kubelab keeps that plain port, so kubectl's zero-config default
(``http://localhost:8080``) works on a fresh cluster; ``--insecure-port 0`` turns it off.

Two ``uvicorn.Server``\\ s share the app: the first one listed runs the app's lifespan (etcd, caches), and the others
start accepting connections only once it has started, so no request reaches a registry that is not ready. Signals
are caught once for all of them (uvicorn's own handlers would each replace the other's).

The TLS listener asks for a client certificate (``CERT_OPTIONAL``) and verifies it against ``--client-ca-file``
during the handshake; the protocol classes here put the verified certificate into each request's scope under
``apiserver.authentication.PEER_CERT`` for the x509 authenticator. One difference from kube: Python's ``ssl`` cannot
ask for a certificate without verifying it, so a certificate from an unknown CA fails the handshake (kube accepts
the connection and answers 401).

``--reuse-port`` binds every listener with ``SO_REUSEPORT``: several apiserver processes on one etcd (each with its
own watch cache, as HA kube-apiservers run) then accept on the same port, and the kernel spreads the connections
among them (``kubelab up --apiservers N``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import ssl
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import uvicorn

from apimachinery.tlsserver import without_session_tickets

from .authentication import PEER_CERT
from .spdy.upgrade import HttpToolsProtocol, WebSocketProtocol

IDLE_TIMEOUT = 90  # seconds an idle keep-alive connection stays open (kube-apiserver's http.Server IdleTimeout)

__all__ = ["Listener", "TLSFiles", "serve"]


@dataclass(frozen=True)
class TLSFiles:
    """``--tls-cert-file``, ``--tls-private-key-file`` and ``--client-ca-file`` (None: no client certificates)."""

    cert: str
    key: str
    client_ca: str | None = None


@dataclass(frozen=True)
class Listener:
    host: str
    port: int
    tls: TLSFiles | None = None
    reuse_port: bool = False  # SO_REUSEPORT: other processes may listen on the same port (see the module doc)


class _PeerCertWebSocketProtocol(WebSocketProtocol):
    """The websocket protocol with the connection's verified client certificate in the scope."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.peer_cert = transport.get_extra_info("peercert")

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)
        if scope is not None and self.peer_cert:
            scope[PEER_CERT] = self.peer_cert


class PeerCertHttpToolsProtocol(HttpToolsProtocol):
    """The apiserver's HTTP protocol with the connection's verified client certificate in each request's scope."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.ws_protocol_class is not None:
            self.ws_protocol_class = _PeerCertWebSocketProtocol
        self.peer_cert: dict[str, Any] | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.peer_cert = transport.get_extra_info("peercert") or None

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self.peer_cert:
            self.scope[PEER_CERT] = self.peer_cert  # type: ignore[literal-required]


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # ``serve`` catches the signals for every server


class _Config(uvicorn.Config):
    """uvicorn's configuration, its TLS context as every TLS server of the cluster has it (``tlsserver``)."""

    def load(self) -> None:
        super().load()
        if self.ssl is not None:
            without_session_tickets(self.ssl)


def _config(app: Any, listener: Listener, *, lifespan: bool, verbosity: int) -> uvicorn.Config:
    tls = listener.tls
    return _Config(
        app, host=listener.host, port=listener.port,
        http=PeerCertHttpToolsProtocol if tls else HttpToolsProtocol,  # SPDY/3.1 upgrades too (apiserver.spdy)
        lifespan="on" if lifespan else "off",
        access_log=verbosity >= 2, log_level="info" if verbosity >= 1 else "warning",
        timeout_graceful_shutdown=2,
        # kube-apiserver's http.Server IdleTimeout (90 s). uvicorn's 5 s default closed the pool of a client that
        # paused between bursts (the replication controller waits on its expectations after each burst of
        # creates), so each burst paid for hundreds of new TLS handshakes on both sides.
        timeout_keep_alive=IDLE_TIMEOUT,
        ssl_certfile=tls.cert if tls else None, ssl_keyfile=tls.key if tls else None,
        ssl_ca_certs=tls.client_ca if tls else None,
        ssl_cert_reqs=ssl.CERT_OPTIONAL if tls and tls.client_ca else ssl.CERT_NONE,
    )  # fmt: skip


def _reuse_port_socket(listener: Listener) -> socket.socket:
    """A socket bound with ``SO_REUSEPORT`` (uvicorn listens on it), so that other processes may bind the port."""
    family = socket.AF_INET6 if ":" in listener.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((listener.host, listener.port))
    except OSError:
        sock.close()
        raise
    return sock


async def _serve_all(servers: list[tuple[_Server, list[socket.socket] | None]]) -> None:
    loop = asyncio.get_running_loop()

    def stop() -> None:
        for server, _ in servers:
            server.should_exit = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)
    (first, first_sockets), rest = servers[0], servers[1:]
    main = asyncio.create_task(first.serve(first_sockets))
    while not first.started and not main.done():
        await asyncio.sleep(0.01)
    others = [asyncio.create_task(server.serve(sockets)) for server, sockets in rest if not main.done()]
    try:
        await main
    finally:
        stop()
        await asyncio.gather(*others, return_exceptions=True)


def serve(app: Any, listeners: list[Listener], *, verbosity: int = 1) -> None:
    """Serve ``app`` on every listener until SIGINT/SIGTERM (the first listener's server runs the lifespan)."""
    import uvloop

    servers = [(_Server(_config(app, listener, lifespan=index == 0, verbosity=verbosity)),
                [_reuse_port_socket(listener)] if listener.reuse_port else None)
               for index, listener in enumerate(listeners)]
    uvloop.run(_serve_all(servers))
