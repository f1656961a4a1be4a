"""The server-side SPDY session against a scripted client: replies, data both ways, FIN, RST, PING, EOF."""

from __future__ import annotations

import asyncio

from apiserver.spdy import framing
from apiserver.spdy.framing import DataFrame, GoAway, Ping, RstStream, SynReply, SynStream
from support.spdy import Peer


async def test_streams_are_replied_read_and_written() -> None:
    peer = Peer()
    run = asyncio.create_task(peer.session.run())
    peer.send(SynStream(1, {"streamtype": ["error"]}), SynStream(3, {"streamtype": ["stdin"]}),
              DataFrame(3, b"in"), DataFrame(3, b"put", framing.FLAG_FIN))
    error, stdin = await peer.session.accept(), await peer.session.accept()
    assert error is not None and stdin is not None
    assert (error.header("streamType"), stdin.header("streamtype")) == ("error", "stdin")
    assert [await stdin.read(), await stdin.read(), await stdin.read(), await stdin.read()] == [b"in", b"put", b"", b""]
    await error.write(b'{"status":"Success"}', fin=True)
    await error.write(b"late")  # after FIN: dropped
    assert peer.received == [SynReply(1, {}), SynReply(3, {}), DataFrame(1, b'{"status":"Success"}', framing.FLAG_FIN)]
    peer.hang_up()
    await run
    assert await peer.session.accept() is None


async def test_ping_reset_goaway_and_eof() -> None:
    peer = Peer()
    run = asyncio.create_task(peer.session.run())
    peer.send(SynStream(1, {"streamtype": ["stdout"]}), Ping(1), Ping(2), RstStream(1, framing.CANCEL),
              DataFrame(9, b"?"), GoAway(1), SynStream(3, {"streamtype": ["stderr"]}), SynStream(2, {}))
    stdout = await peer.session.accept()
    assert stdout is not None and await stdout.read() == b""
    await stdout.write(b"after reset")
    peer.hang_up()
    await run
    assert peer.received == [SynReply(1, {}), Ping(1), RstStream(9, framing.INVALID_STREAM),
                             RstStream(3, framing.REFUSED_STREAM), RstStream(2, framing.PROTOCOL_ERROR)]


async def test_large_writes_are_chunked_and_fin_goes_on_the_last_frame() -> None:
    peer = Peer()
    run = asyncio.create_task(peer.session.run())
    peer.send(SynStream(1, {"streamtype": ["stdout"]}, framing.FLAG_FIN))
    stream = await peer.session.accept()
    assert stream is not None and await stream.read() == b""
    await stream.write(b"x" * 150_000, fin=True)
    data = [f for f in peer.received if isinstance(f, DataFrame)]
    assert [len(f.data) for f in data] == [65536, 65536, 18928]
    assert [f.flags for f in data] == [0, 0, framing.FLAG_FIN]
    peer.hang_up()
    await run


async def test_a_framing_error_ends_the_session_with_goaway() -> None:
    peer = Peer()
    run = asyncio.create_task(peer.session.run())
    peer.inbound.put_nowait(b"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01")
    await run
    assert peer.received == [GoAway(0, 1)]
    assert await peer.session.accept() is None
