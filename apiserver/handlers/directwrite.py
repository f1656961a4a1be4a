"""Writing a watch chunk straight to the stream's connection, from the watch cache's dispatch.

A parked watch stream costs, per event, a task wake-up and one ``send`` through every ASGI wrapper (metrics,
warnings, audit) down to the HTTP server's chunk framing and socket write. One write to a resource watched by a
thousand unfiltered streams pays that a thousand times on the one event loop. kube-apiserver's cacheWatcher
hands the event to each stream's goroutine; here, while a stream is parked with nothing queued, the cache's
dispatch hands the event's chunk (framed once, shared by every stream) to the stream's connection itself.

The only way down to the connection is the HTTP server's own ``send``: ``ServerSend``, outermost, keeps it in the
scope, and ``chunk_writer`` builds a synchronous ``ChunkWriter`` from uvicorn's httptools request cycle — the
server kubelab runs. It is not ``writable`` (and the event goes through the queue and the stream's task as
before) when the response has not started or has ended, the client is gone, or the connection's write buffer is
over its high-water mark (the server's flow control: the slow path waits for it to drain). On any other server
it is ``None`` and every event takes the queue.
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

SERVER_SEND = "kubelab.server_send"

# What the writer reads of uvicorn's RequestResponseCycle (checked once, so another uvicorn falls back, never fails).
_CYCLE_STATE = ("flow", "transport", "disconnected", "response_started", "response_complete", "chunked_encoding")


class ServerSend:
    """Pure ASGI, outermost: keeps the HTTP server's ``send`` in the scope for ``chunk_writer``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[SERVER_SEND] = send
        await self.app(scope, receive, send)


def frame(body: bytes) -> bytes:
    """``body`` as one HTTP/1.1 chunk (the framing uvicorn's ``send`` gives a body of a chunked response)."""
    return b"%x\r\n%b\r\n" % (len(body), body)


class ChunkWriter:
    """Framed chunks straight to a chunked response's connection (uvicorn's httptools request cycle)."""

    def __init__(self, cycle: Any) -> None:
        self._cycle = cycle
        self._flow = cycle.flow
        self._transport = cycle.transport

    def writable(self) -> bool:
        """Whether the server's own ``send`` would write at once (neither wait for the buffer to drain nor fail)."""
        cycle = self._cycle
        return not (self._flow.write_paused or cycle.disconnected or not cycle.response_started
                    or cycle.response_complete or not cycle.chunked_encoding)

    def write(self, chunks: bytes) -> None:
        """Write ``chunks`` (accepted while ``writable``; the buffer may pass its high-water mark by that much),
        unless the client is gone or the response has ended."""
        if not (self._cycle.disconnected or self._cycle.response_complete):
            self._transport.write(chunks)


def chunk_writer(scope: Scope) -> ChunkWriter | None:
    """A writer of framed chunks to this request's connection, or None when the server is not uvicorn's httptools
    protocol."""
    cycle: Any = getattr(scope.get(SERVER_SEND), "__self__", None)
    if cycle is None or type(cycle).__module__ != "uvicorn.protocols.http.httptools_impl" \
            or not all(hasattr(cycle, name) for name in _CYCLE_STATE):
        return None
    return ChunkWriter(cycle)
