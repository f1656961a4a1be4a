"""SPDY/3.1 framing: every frame type round-trips, and header blocks decode what Go's framer (kubectl) sends."""

from __future__ import annotations

import hashlib
import zlib

import pytest

from apiserver.spdy import framing
from apiserver.spdy.framing import (
    DataFrame,
    FrameDecoder,
    GoAway,
    HeaderEncoder,
    HeadersFrame,
    Ping,
    RstStream,
    Settings,
    SynReply,
    SynStream,
    UnknownControl,
    WindowUpdate,
)

# Captured from kubectl 1.27 (`exec box -- echo hi`): its first three SYN_STREAMs on one connection. The second and
# third header blocks only decode with the compression context the first one left behind.
KUBECTL_SYN_STREAMS = (
    b"\x80\x03\x00\x01\x00\x00\x00)\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00x\xf9\xe3\xc6\xa7\xc2b```\x04\xa7\xb3"
    b"\x92\xa2\xd4\xc4\\hQ\xc2\x9a\n\nh\x00\x00\x00\x00\xff\xff"
    b"\x80\x03\x00\x01\x00\x00\x00\x19\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\xc2*\xc5V\\\x92\x92_Z\x02\x00\x00"
    b"\x00\xff\xff"
    b"\x80\x03\x00\x01\x00\x00\x00\x15\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\xc2)\x97ZT\x04\x00\x00\x00\xff\xff"
)


def test_dictionary_is_the_spdy3_one() -> None:
    assert len(framing.DICTIONARY) == 1423
    assert hashlib.sha256(framing.DICTIONARY).hexdigest() == \
        "51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02"


def test_kubectl_header_blocks_decode_in_one_context() -> None:
    frames = FrameDecoder().feed(KUBECTL_SYN_STREAMS)
    assert frames == [SynStream(1, {"streamtype": ["error"]}), SynStream(3, {"streamtype": ["stdout"]}),
                      SynStream(5, {"streamtype": ["stderr"]})]


def test_a_fresh_decoder_cannot_read_a_later_block() -> None:
    with pytest.raises(framing.ProtocolError):
        FrameDecoder().feed(KUBECTL_SYN_STREAMS[49:])


def test_header_blocks_are_plain_zlib_with_the_dictionary_and_sync_flushed() -> None:
    encoder = HeaderEncoder()
    first, second = encoder.compress({"streamtype": ["error"]}), encoder.compress({"a": ["1", "2"]})
    assert first.endswith(b"\x00\x00\xff\xff") and second.endswith(b"\x00\x00\xff\xff")
    inflater = zlib.decompressobj(zdict=framing.DICTIONARY)
    assert inflater.decompress(first) == b"\x00\x00\x00\x01\x00\x00\x00\nstreamtype\x00\x00\x00\x05error"
    assert inflater.decompress(second) == b"\x00\x00\x00\x01\x00\x00\x00\x01a\x00\x00\x00\x031\x002"


@pytest.mark.parametrize("frame", [
    DataFrame(7, b"payload", framing.FLAG_FIN),
    DataFrame(0x7FFFFFFF, b""),
    SynStream(1, {"streamtype": ["stdin"], "x": ["a", "b"]}, framing.FLAG_FIN, associated_to=3, priority=7, slot=2),
    SynReply(3, {}),
    SynReply(5, {"streamtype": ["resize"]}, framing.FLAG_FIN),
    RstStream(9, framing.CANCEL),
    Settings(((1, 7, 65536), (0, 4, 100)), flags=1),
    Ping(3),
    GoAway(11, 2),
    HeadersFrame(1, {"k": ["v"]}),
    WindowUpdate(0, 1 << 20),
    UnknownControl(42, 3, b"abc"),
])
def test_round_trip(frame: framing.Frame) -> None:
    encoder, decoder = HeaderEncoder(), FrameDecoder()
    wire = framing.encode(frame, encoder)
    assert decoder.feed(wire) == [frame]


def test_frames_split_anywhere_decode_once_complete() -> None:
    encoder, decoder = HeaderEncoder(), FrameDecoder()
    frames = [SynStream(1, {"streamtype": ["error"]}), DataFrame(1, b"x" * 1000), Ping(1), SynReply(1, {"a": ["b"]})]
    wire = b"".join(framing.encode(f, encoder) for f in frames)
    got: list[framing.Frame] = []
    for i in range(0, len(wire), 7):
        got += decoder.feed(wire[i:i + 7])
    assert got == frames


def test_control_frame_layout() -> None:
    assert framing.encode(Ping(5), HeaderEncoder()) == b"\x80\x03\x00\x06\x00\x00\x00\x04\x00\x00\x00\x05"
    assert framing.encode(DataFrame(3, b"hi", framing.FLAG_FIN), HeaderEncoder()) == \
        b"\x00\x00\x00\x03\x01\x00\x00\x02hi"
    assert framing.encode(RstStream(1, 5), HeaderEncoder()) == \
        b"\x80\x03\x00\x03\x00\x00\x00\x08\x00\x00\x00\x01\x00\x00\x00\x05"


@pytest.mark.parametrize("wire", [
    b"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01",  # SPDY/2
    b"\x80\x03\x00\x06\x00\x00\x00\x02\x00\x00",  # PING too short
])
def test_malformed_frames_are_protocol_errors(wire: bytes) -> None:
    with pytest.raises(framing.ProtocolError):
        FrameDecoder().feed(wire)


def test_header_block_rules() -> None:
    block = framing.encode_header_block({"Upper": ["v"]})
    assert framing.decode_header_block(block) == {"upper": ["v"]}  # names go out lowercased
    with pytest.raises(framing.ProtocolError):
        framing.decode_header_block(b"\x00\x00\x00\x01\x00\x00\x00\x01A\x00\x00\x00\x00")
    with pytest.raises(framing.ProtocolError):
        framing.decode_header_block(b"\x00\x00\x00\x02\x00\x00\x00\x01a")
