"""Names outside the cluster: forwarded to the host's resolvers, with a small cache (CoreDNS's
``forward . /etc/resolv.conf`` and ``cache 30``).

* ``upstreams_from``: ``--forward`` is a resolv.conf (its ``nameserver`` lines, port 53) or addresses
  (``127.0.0.5:5353``), as CoreDNS's ``forward`` takes either; this server's own address is left out (a loop).
* ``Forwarder.resolve``: the query as received (its ID kept) to each upstream in turn — UDP first, TCP when the
  answer is truncated or the client asked over TCP — until one answers; None when none does (the server then
  answers SERVFAIL).
* The cache keeps whole replies by (name, type, class, DO-less) for the smallest TTL they carry, at most
  ``CACHE_TTL`` seconds (denials: the SOA minimum, at most ``CACHE_TTL``); a hit is the stored reply with the new
  query's ID. TTLs in a cached reply are not decremented (CoreDNS's are): a client may keep a record up to twice
  its TTL. At most ``CACHE_SIZE`` entries, the oldest dropped first.
"""

from __future__ import annotations

import asyncio
import logging
import re
import struct
import time
from collections import OrderedDict
from pathlib import Path

from .wire import response_ttl

__all__ = ["CACHE_SIZE", "CACHE_TTL", "Forwarder", "Upstream", "upstreams_from"]

log = logging.getLogger("clusterdns.forward")
CACHE_TTL = 30
CACHE_SIZE = 10_000
TIMEOUT = 2.0  # seconds per upstream and attempt
Upstream = tuple[str, int]


def upstreams_from(spec: str, *, own: Upstream | None = None) -> list[Upstream]:
    """The resolvers ``--forward`` names: a resolv.conf path, or ``host[:port]`` addresses separated by spaces."""
    path = Path(spec)
    if "/" in spec and path.exists():
        hosts = re.findall(r"^\s*nameserver\s+(\S+)", path.read_text(), re.MULTILINE)
        found = [(h, 53) for h in hosts]
    else:
        found = [_address(part) for part in spec.split()]
    return [u for u in found if u != own]


def _address(text: str) -> Upstream:
    if text.startswith("["):  # [fd00::1]:53
        host, _, port = text[1:].partition("]:")
        return host, int(port or 53)
    if text.count(":") == 1:
        host, port = text.split(":")
        return host, int(port)
    return text, 53


class _Once(asyncio.DatagramProtocol):
    """One UDP exchange: the first datagram back is the answer."""

    def __init__(self) -> None:
        self.answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        if not self.answer.done():
            self.answer.set_result(data)

    def error_received(self, exc: Exception) -> None:
        if not self.answer.done():
            self.answer.set_exception(exc)


class Forwarder:
    def __init__(self, upstreams: list[Upstream], *, timeout: float = TIMEOUT) -> None:
        self.upstreams = upstreams
        self.timeout = timeout
        self.cache: OrderedDict[bytes, tuple[float, bytes]] = OrderedDict()

    async def resolve(self, query: bytes, *, tcp: bool = False) -> bytes | None:
        """The upstream's reply to ``query`` (from the cache when fresh); None when no upstream answered."""
        key = _cache_key(query)
        hit = self.cache.get(key) if key else None
        if hit is not None and hit[0] > time.monotonic():
            return bytes(query[:2]) + hit[1][2:]
        for upstream in self.upstreams:
            try:
                reply = await (self._tcp(upstream, query) if tcp else self._udp(upstream, query))
                if not tcp and len(reply) > 2 and reply[2] & 0x02:  # TC: ask again over TCP
                    reply = await self._tcp(upstream, query)
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as err:
                log.debug("upstream %s:%d: %s", *upstream, err)
                continue
            if key:
                self._store(key, reply)
            return reply
        return None

    def _store(self, key: bytes, reply: bytes) -> None:
        found = response_ttl(reply)
        if found is None or found[0] not in ("NOERROR", "NXDOMAIN") or found[1] <= 0:
            return
        self.cache[key] = (time.monotonic() + min(found[1], CACHE_TTL), reply)
        self.cache.move_to_end(key)
        while len(self.cache) > CACHE_SIZE:
            self.cache.popitem(last=False)

    async def _udp(self, upstream: Upstream, query: bytes) -> bytes:
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.create_datagram_endpoint(_Once, remote_addr=upstream)
        try:
            transport.sendto(query)
            async with asyncio.timeout(self.timeout):
                return await protocol.answer
        finally:
            transport.close()

    async def _tcp(self, upstream: Upstream, query: bytes) -> bytes:
        async with asyncio.timeout(self.timeout):
            reader, writer = await asyncio.open_connection(*upstream)
            try:
                writer.write(struct.pack("!H", len(query)) + query)
                await writer.drain()
                (size,) = struct.unpack("!H", await reader.readexactly(2))
                return await reader.readexactly(size)
            finally:
                writer.close()


def _cache_key(query: bytes) -> bytes | None:
    """The query without its ID: flags and question (and any EDNS record) make the key."""
    return bytes(query[2:]) if len(query) > 12 else None
