"""SPDY/3.1 frames: I/O-free encoding and incremental decoding, with the zlib-compressed header blocks.

Only what Kubernetes' ``httpstream/spdy`` (moby/spdystream over the Go SPDY framer) puts on the wire is needed,
but every SPDY/3.1 frame type decodes, so a peer's SETTINGS, PING or WINDOW_UPDATE never breaks the session.
The layout (draft-mbelshe-httpbis-spdy / SPDY protocol draft 3.1), all integers big-endian::

    control: |1| version (15) | type (16) |  flags (8) | length (24) |  payload
    data:    |0| stream id (31)          |  flags (8) | length (24) |  payload

Header blocks (SYN_STREAM, SYN_REPLY, HEADERS) are ``count, (len, name, len, value)*`` with 32-bit lengths,
names lowercase, several values of one name joined by NUL; they are zlib-compressed with the SPDY/3 preset
dictionary, one compression context per direction for the whole connection, each block ending with a sync
flush — so a ``HeaderEncoder``/``FrameDecoder`` lives exactly as long as its connection.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02
MAX_LENGTH = (1 << 24) - 1
STREAM_ID_MASK = 0x7FFFFFFF

# RST_STREAM status codes.
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, UNSUPPORTED_VERSION, CANCEL, INTERNAL_ERROR = 1, 2, 3, 4, 5, 6

Headers = dict[str, list[str]]


def _dictionary() -> bytes:
    """The SPDY/3 header-compression dictionary: length-prefixed common words, then common values (1423 bytes)."""
    words = ("options head post put delete trace accept accept-charset accept-encoding accept-language "
             "accept-ranges age allow authorization cache-control connection content-base content-encoding "
             "content-language content-length content-location content-md5 content-range content-type date etag "
             "expect expires from host if-match if-modified-since if-none-match if-range if-unmodified-since "
             "last-modified location max-forwards pragma proxy-authenticate proxy-authorization range referer "
             "retry-after server te trailer transfer-encoding upgrade user-agent vary via warning www-authenticate "
             "method get status 200_OK version HTTP/1.1 url public set-cookie keep-alive origin").split()
    tail = ("100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
            "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
            "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
            "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
            "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
            "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
    encoded = [w.replace("_", " ").encode() for w in words]
    return b"".join(struct.pack(">I", len(w)) + w for w in encoded) + tail.encode()


DICTIONARY = _dictionary()


class ProtocolError(Exception):
    """The peer broke SPDY framing; the connection cannot continue (a GOAWAY with PROTOCOL_ERROR is due)."""


# --- frames ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DataFrame:
    stream_id: int
    data: bytes = b""
    flags: int = 0


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    flags: int = 0
    associated_to: int = 0
    priority: int = 0
    slot: int = 0


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    flags: int = 0


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Settings:
    entries: tuple[tuple[int, int, int], ...] = ()  # (flags, id, value)
    flags: int = 0


@dataclass(frozen=True)
class Ping:
    id: int


@dataclass(frozen=True)
class GoAway:
    last_good_stream_id: int
    status: int = 0


@dataclass(frozen=True)
class HeadersFrame:
    stream_id: int
    headers: Headers = field(default_factory=dict)
    flags: int = 0


@dataclass(frozen=True)
class WindowUpdate:
    stream_id: int
    delta: int


@dataclass(frozen=True)
class UnknownControl:
    """A control frame of a type SPDY/3.1 does not define (the spec says: ignore it)."""
    type: int
    flags: int
    payload: bytes


Frame = (DataFrame | SynStream | SynReply | RstStream | Settings | Ping | GoAway | HeadersFrame | WindowUpdate
         | UnknownControl)


# --- header blocks ---------------------------------------------------------------------------------------------
def encode_header_block(headers: Headers) -> bytes:
    """The uncompressed name/value block (names lowercased, several values NUL-joined, as Go's framer writes)."""
    parts = [struct.pack(">I", len(headers))]
    for name, values in headers.items():
        n, v = name.lower().encode(), "\x00".join(values).encode()
        parts += [struct.pack(">I", len(n)), n, struct.pack(">I", len(v)), v]
    return b"".join(parts)


def decode_header_block(block: bytes) -> Headers:
    try:
        (count,) = struct.unpack_from(">I", block, 0)
        offset, headers = 4, {}
        for _ in range(count):
            (size,) = struct.unpack_from(">I", block, offset)
            name = block[offset + 4:offset + 4 + size].decode()
            offset += 4 + size
            (size,) = struct.unpack_from(">I", block, offset)
            value = block[offset + 4:offset + 4 + size].decode()
            offset += 4 + size
            if offset > len(block) or not name or name != name.lower() or name in headers:
                raise ProtocolError(f"invalid header block entry {name!r}")
            headers[name] = value.split("\x00")
    except (struct.error, UnicodeDecodeError) as err:
        raise ProtocolError(f"malformed header block: {err}") from None
    return headers


class HeaderEncoder:
    """Compresses this side's header blocks: one zlib stream for the connection, a sync flush per block."""

    def __init__(self) -> None:
        self._zlib = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)

    def compress(self, headers: Headers) -> bytes:
        return self._zlib.compress(encode_header_block(headers)) + self._zlib.flush(zlib.Z_SYNC_FLUSH)


class HeaderDecoder:
    def __init__(self) -> None:
        self._zlib = zlib.decompressobj(15, DICTIONARY)

    def decompress(self, data: bytes) -> Headers:
        try:
            return decode_header_block(self._zlib.decompress(data))
        except zlib.error as err:
            raise ProtocolError(f"header block does not decompress: {err}") from None


# --- encoding --------------------------------------------------------------------------------------------------
def _control(type_: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, type_, (flags << 24) | len(payload)) + payload


def encode(frame: Frame, headers: HeaderEncoder) -> bytes:
    """One frame's bytes (``headers`` compresses the header blocks; frames must go out in encoding order)."""
    match frame:
        case DataFrame(stream_id, data, flags):
            if len(data) > MAX_LENGTH:
                raise ValueError("data frame too long")
            return struct.pack(">II", stream_id & STREAM_ID_MASK, (flags << 24) | len(data)) + data
        case SynStream(stream_id, hdrs, flags, associated_to, priority, slot):
            fixed = struct.pack(">IIBB", stream_id, associated_to, (priority & 0x7) << 5, slot)
            return _control(SYN_STREAM, flags, fixed + headers.compress(hdrs))
        case SynReply(stream_id, hdrs, flags):
            return _control(SYN_REPLY, flags, struct.pack(">I", stream_id) + headers.compress(hdrs))
        case RstStream(stream_id, status):
            return _control(RST_STREAM, 0, struct.pack(">II", stream_id, status))
        case Settings(entries, flags):
            body = b"".join(struct.pack(">II", (f << 24) | i, v) for f, i, v in entries)
            return _control(SETTINGS, flags, struct.pack(">I", len(entries)) + body)
        case Ping(id_):
            return _control(PING, 0, struct.pack(">I", id_))
        case GoAway(last_good, status):
            return _control(GOAWAY, 0, struct.pack(">II", last_good, status))
        case HeadersFrame(stream_id, hdrs, flags):
            return _control(HEADERS, flags, struct.pack(">I", stream_id) + headers.compress(hdrs))
        case WindowUpdate(stream_id, delta):
            return _control(WINDOW_UPDATE, 0, struct.pack(">II", stream_id, delta))
        case UnknownControl(type_, flags, payload):
            return _control(type_, flags, payload)
    raise TypeError(f"not a SPDY frame: {frame!r}")


# --- decoding --------------------------------------------------------------------------------------------------
class FrameDecoder:
    """Feed it the connection's bytes as they come; it returns the frames completed so far."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._headers = HeaderDecoder()

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        while len(self._buffer) >= 8:
            first, second = struct.unpack_from(">II", self._buffer, 0)
            length = second & 0xFFFFFF
            if len(self._buffer) < 8 + length:
                break
            payload = bytes(self._buffer[8:8 + length])
            del self._buffer[:8 + length]
            flags = second >> 24
            if first & 0x80000000:
                frames.append(self._control((first >> 16) & 0x7FFF, first & 0xFFFF, flags, payload))
            else:
                frames.append(DataFrame(first & STREAM_ID_MASK, payload, flags))
        return frames

    def _control(self, version: int, type_: int, flags: int, payload: bytes) -> Frame:
        if version != VERSION:
            raise ProtocolError(f"unsupported SPDY version {version}")
        try:
            match type_:
                case 1:  # SYN_STREAM
                    stream_id, associated, priority, slot = struct.unpack_from(">IIBB", payload)
                    return SynStream(stream_id & STREAM_ID_MASK, self._headers.decompress(payload[10:]), flags,
                                     associated & STREAM_ID_MASK, priority >> 5, slot)
                case 2:  # SYN_REPLY
                    (stream_id,) = struct.unpack_from(">I", payload)
                    return SynReply(stream_id & STREAM_ID_MASK, self._headers.decompress(payload[4:]), flags)
                case 3:  # RST_STREAM
                    stream_id, status = struct.unpack_from(">II", payload)
                    return RstStream(stream_id & STREAM_ID_MASK, status)
                case 4:  # SETTINGS
                    (count,) = struct.unpack_from(">I", payload)
                    entries = tuple((fi >> 24, fi & 0xFFFFFF, value) for fi, value in
                                    (struct.unpack_from(">II", payload, 4 + 8 * i) for i in range(count)))
                    return Settings(entries, flags)
                case 6:  # PING
                    return Ping(struct.unpack_from(">I", payload)[0])
                case 7:  # GOAWAY
                    last_good, status = struct.unpack_from(">II", payload)
                    return GoAway(last_good & STREAM_ID_MASK, status)
                case 8:  # HEADERS
                    (stream_id,) = struct.unpack_from(">I", payload)
                    return HeadersFrame(stream_id & STREAM_ID_MASK, self._headers.decompress(payload[4:]), flags)
                case 9:  # WINDOW_UPDATE
                    stream_id, delta = struct.unpack_from(">II", payload)
                    return WindowUpdate(stream_id & STREAM_ID_MASK, delta & STREAM_ID_MASK)
        except struct.error:
            raise ProtocolError(f"control frame of type {type_} too short ({len(payload)} bytes)") from None
        return UnknownControl(type_, flags, payload)
