"""A server-side SPDY/3.1 session: the peer opens streams, this side replies and exchanges data on them.

This is the part of moby/spdystream (as Kubernetes' ``httpstream/spdy`` drives it) that a server needs:

- every SYN_STREAM from the client is answered with an empty SYN_REPLY at once (kube's stream handler accepts
  every stream and replies) and handed to ``accept()``;
- DATA frames feed the stream's reader; FIN (on DATA or SYN_STREAM) or RST_STREAM ends it (``read()`` → b"");
- PINGs the client starts (odd ids) are echoed; GOAWAY stops new streams; SETTINGS, HEADERS and WINDOW_UPDATE
  are read and ignored. spdystream implements no flow control (it neither sends nor honours WINDOW_UPDATE),
  so neither does this side — enforcing windows against it would stall output after 64 KiB.

I/O is two callables (``receive`` the connection's next bytes, b"" at EOF; ``write`` bytes out), so the session
does not care whether it runs on an ASGI connection, a socket or a test's queue.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from . import framing
from .framing import DataFrame, GoAway, Ping, RstStream, SynReply, SynStream

log = logging.getLogger(__name__)
CHUNK = 64 * 1024


class Stream:
    """One SPDY stream the client opened: readable until the client's FIN, writable until ours."""

    def __init__(self, session: Session, stream_id: int, headers: framing.Headers) -> None:
        self.session = session
        self.id = stream_id
        self.headers = headers
        self._inbound: asyncio.Queue[bytes] = asyncio.Queue()
        self.remote_closed = False
        self.local_closed = False

    def header(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return values[0] if values else None

    async def read(self) -> bytes:
        """The next bytes the client sent on this stream; b"" once it closed (FIN, reset or connection gone)."""
        if self.remote_closed and self._inbound.empty():
            return b""
        return await self._inbound.get()

    async def write(self, data: bytes, *, fin: bool = False) -> None:
        if self.local_closed:
            return
        for start in range(0, len(data), CHUNK):
            last = start + CHUNK >= len(data)
            await self.session.send(DataFrame(self.id, data[start:start + CHUNK], framing.FLAG_FIN if fin and last
                                              else 0))
        if fin:
            if not data:
                await self.session.send(DataFrame(self.id, b"", framing.FLAG_FIN))
            self.local_closed = True

    async def close(self) -> None:
        """Half-close: our side is done writing (the client reads EOF)."""
        await self.write(b"", fin=True)

    def _deliver(self, data: bytes) -> None:
        if data and not self.remote_closed:
            self._inbound.put_nowait(data)

    def _finish_remote(self) -> None:
        if not self.remote_closed:
            self.remote_closed = True
            self._inbound.put_nowait(b"")


class Session:
    """Runs the frame loop (``run``) and hands out the streams the client opens (``accept``)."""

    def __init__(self, receive: Callable[[], Awaitable[bytes]], write: Callable[[bytes], Awaitable[None]]) -> None:
        self._receive = receive
        self._write = write
        self._decoder = framing.FrameDecoder()
        self._encoder = framing.HeaderEncoder()
        self._write_lock = asyncio.Lock()
        self._streams: dict[int, Stream] = {}
        self._accepted: asyncio.Queue[Stream | None] = asyncio.Queue()
        self._last_stream_id = 0
        self.going_away = False
        self.closed = False

    async def send(self, frame: framing.Frame) -> None:
        if self.closed:
            return
        async with self._write_lock:  # header compression state must follow the order frames leave in
            await self._write(framing.encode(frame, self._encoder))

    async def accept(self) -> Stream | None:
        """The next stream the client opened; None once the connection ended."""
        return await self._accepted.get()

    async def run(self) -> None:
        """Read frames until the client goes away; then every stream reads EOF and ``accept`` returns None."""
        try:
            while True:
                data = await self._receive()
                if not data:
                    break
                for frame in self._decoder.feed(data):
                    await self._handle(frame)
        except framing.ProtocolError as err:
            log.warning("SPDY protocol error from the client: %s", err)
            await self.send(GoAway(self._last_stream_id, 1))
        finally:
            self.closed = True
            for stream in self._streams.values():
                stream._finish_remote()
            self._accepted.put_nowait(None)

    async def _handle(self, frame: framing.Frame) -> None:
        match frame:
            case SynStream(stream_id, headers, flags):
                await self._open(stream_id, headers, flags)
            case DataFrame(stream_id, data, flags):
                stream = self._streams.get(stream_id)
                if stream is None:
                    await self.send(RstStream(stream_id, framing.INVALID_STREAM))
                    return
                stream._deliver(data)
                if flags & framing.FLAG_FIN:
                    stream._finish_remote()
            case RstStream(stream_id, _):
                stream = self._streams.get(stream_id)
                if stream is not None:
                    stream.local_closed = True
                    stream._finish_remote()
            case Ping(ping_id) if ping_id % 2 == 1:  # the client's ping: echo it
                await self.send(frame)
            case GoAway():
                self.going_away = True
            case _:  # our ping's answer, SETTINGS, HEADERS, WINDOW_UPDATE, unknown types: nothing to do
                pass

    async def _open(self, stream_id: int, headers: framing.Headers, flags: int) -> None:
        if stream_id % 2 == 0 or stream_id <= self._last_stream_id:
            await self.send(RstStream(stream_id, framing.PROTOCOL_ERROR))
            return
        self._last_stream_id = stream_id
        if self.going_away:
            await self.send(RstStream(stream_id, framing.REFUSED_STREAM))
            return
        stream = Stream(self, stream_id, headers)
        self._streams[stream_id] = stream
        await self.send(SynReply(stream_id, {}))
        if flags & framing.FLAG_FIN:
            stream._finish_remote()
        if flags & framing.FLAG_UNIDIRECTIONAL:
            stream.local_closed = True
        self._accepted.put_nowait(stream)
