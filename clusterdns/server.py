"""The DNS server: one UDP socket and one TCP listener on ``--bind-address``:``--port``, answering from
``ClusterRecords`` what is the cluster's and forwarding the rest (``Forwarder``).

Guarantees: every query that parses gets an answer (SERVFAIL when no upstream answered, NOTIMP for an opcode
other than QUERY, FORMERR for one that does not parse but has a header); a cluster name not found while the
informers have not synced yet is SERVFAIL, not NXDOMAIN (CoreDNS's kubernetes plugin: a resolver retries a server
failure but caches a name error, and right after start-up the name may well exist); a query's handling never blocks the
event loop (lookups are in memory, forwarding is awaited), so the informers keep the records current while
queries are answered. TCP follows RFC 7766: two-byte length prefixes, several queries per connection, closed
after ``TCP_IDLE`` seconds without one.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import Callable

from . import metrics
from .forward import Forwarder
from .records import Answer, ClusterRecords
from .wire import DNSError, encode, failure, parse, query_for, upstream_answers

__all__ = ["DnsServer"]

log = logging.getLogger("clusterdns.server")
TCP_IDLE = 10.0


class DnsServer:
    def __init__(self, records: ClusterRecords, forwarder: Forwarder, host: str, port: int,
                 synced: Callable[[], bool] = lambda: True) -> None:
        self.records = records
        self.forwarder = forwarder
        self.synced = synced  # whether the records reflect the cluster (the informers have listed)
        self.host = host
        self.port = port
        self._udp: asyncio.DatagramTransport | None = None
        self._tcp: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def handle(self, data: bytes, *, tcp: bool) -> bytes | None:
        """The reply to one query (None: dropped), counted in CoreDNS's ``coredns_dns_*`` (``metrics``)."""
        started = time.monotonic()
        server, proto = f"dns://{self.host}:{self.port}", "tcp" if tcp else "udp"
        try:
            question = parse(data)
        except (DNSError, IndexError, ValueError):
            reply = failure(data, "FORMERR")
            metrics.observe(server, ".", proto, "other", reply, time.monotonic() - started, "")
            return reply
        if question.request.header.opcode != 0:
            reply = failure(data, "NOTIMP")
            metrics.observe(server, ".", proto, question.qtype, reply, time.monotonic() - started, "")
            return reply
        answer = self.records.lookup(question.qname, question.qtype)
        if answer is not None:
            if answer.rcode == "NXDOMAIN" and not self.synced():
                reply = failure(data, "SERVFAIL")
            else:
                reply = encode(question, answer, udp=not tcp, chased=await self._chase(answer, question.qtype, tcp))
            metrics.observe(server, self.records.zone, proto, question.qtype, reply,
                            time.monotonic() - started, "kubernetes")
            return reply
        forwarded = await self.forwarder.resolve(data, tcp=tcp)
        reply = forwarded if forwarded is not None else failure(data, "SERVFAIL")
        metrics.observe(server, ".", proto, question.qtype, reply, time.monotonic() - started,
                        "forward" if forwarded is not None else "")
        return reply

    async def _chase(self, answer: Answer, qtype: str, tcp: bool) -> list[object]:
        """An ExternalName's CNAME target outside the zone, resolved upstream for an A/AAAA question (CoreDNS's
        kubernetes plugin does so too: stub resolvers do not chase CNAMEs themselves)."""
        last = answer.answer[-1] if answer.answer else None
        if last is None or last.rtype != "CNAME" or qtype not in ("A", "AAAA") or \
                str(last.data).endswith("." + self.records.zone):
            return []
        reply = await self.forwarder.resolve(query_for(str(last.data), qtype), tcp=tcp)
        return upstream_answers(reply) if reply is not None else []

    async def start(self) -> None:
        """Bind both sockets (port 0: UDP picks one, TCP takes the same)."""
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(lambda: _Udp(self), local_addr=(self.host, self.port))
        self._udp = transport
        self.port = transport.get_extra_info("sockname")[1]
        self._tcp = await asyncio.start_server(self._serve_tcp, self.host, self.port)

    async def stop(self) -> None:
        if self._udp is not None:
            self._udp.close()
        if self._tcp is not None:
            self._tcp.close()
            await self._tcp.wait_closed()
        for task in list(self._tasks):
            task.cancel()

    def _answer_udp(self, data: bytes, addr: tuple[str, int]) -> None:
        async def reply() -> None:
            out = await self.handle(data, tcp=False)
            if out is not None and self._udp is not None and not self._udp.is_closing():
                self._udp.sendto(out, addr)

        task = asyncio.create_task(reply())
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("query failed: %r", task.exception())

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                async with asyncio.timeout(TCP_IDLE):
                    (size,) = struct.unpack("!H", await reader.readexactly(2))
                    data = await reader.readexactly(size)
                out = await self.handle(data, tcp=True)
                if out is None:
                    break
                writer.write(struct.pack("!H", len(out)) + out)
                await writer.drain()
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, server: DnsServer) -> None:
        self.server = server

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.server._answer_udp(data, addr)
