"""The apiserver's websocket relay between a client and the kubelet ends quietly however the two sides close."""

from __future__ import annotations

import asyncio
from typing import Any

from apiserver.handlers.proxy import _relay_websockets


class ClosingClient:
    """A client that hangs up at once."""

    def __init__(self) -> None:
        self.closed = False

    async def receive(self) -> dict[str, Any]:
        return {"type": "websocket.disconnect"}

    async def close(self) -> None:
        self.closed = True


class ClosingUpstream:
    """A kubelet stream that ends at once (the container exited)."""

    def __init__(self) -> None:
        self.closed = False

    def __aiter__(self) -> ClosingUpstream:
        return self

    async def __anext__(self) -> Any:
        raise StopAsyncIteration

    async def close(self) -> None:
        self.closed = True


def test_both_sides_closing_together_ends_the_relay_without_an_error() -> None:
    client, upstream = ClosingClient(), ClosingUpstream()
    asyncio.run(_relay_websockets(client, upstream))  # type: ignore[arg-type]
    assert client.closed and upstream.closed
