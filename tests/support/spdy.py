"""A scripted SPDY client for the server-side session's tests."""

from __future__ import annotations

import asyncio

from apiserver.spdy import framing
from apiserver.spdy.framing import FrameDecoder, HeaderEncoder
from apiserver.spdy.session import Session


class Peer:
    """The client end: frames in (encoded with its own header context), frames out (decoded with another)."""

    def __init__(self) -> None:
        self.inbound: asyncio.Queue[bytes] = asyncio.Queue()
        self.encoder = HeaderEncoder()
        self.decoder = FrameDecoder()
        self.received: list[framing.Frame] = []
        self.session = Session(self.inbound.get, self._written)

    async def _written(self, data: bytes) -> None:
        self.received += self.decoder.feed(data)

    def send(self, *frames: framing.Frame) -> None:
        self.inbound.put_nowait(b"".join(framing.encode(f, self.encoder) for f in frames))

    def hang_up(self) -> None:
        self.inbound.put_nowait(b"")
