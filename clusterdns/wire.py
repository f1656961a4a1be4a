"""The DNS wire format, through dnslib: a query's question out, an ``Answer`` (or a failure) back in.

Why dnslib (and not dnspython, which the tests use as their client): a quick A/B on this 2-core machine of what
the server does per query — parse a query, add one A record, encode the reply — took 60–150 µs with dnslib and
185–660 µs with dnspython. This is the only module that imports it.

UDP answers are cut to the client's size (512 bytes, or what its EDNS OPT record offers) with the TC bit set, so
the client retries over TCP, as RFC 1035/7766 ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from dnslib import AAAA, CNAME, EDNS0, NS, PTR, QTYPE, RCODE, RR, SOA, SRV, TXT, A, DNSError, DNSRecord  # type: ignore[import-untyped]

from .records import Answer, Record

__all__ = ["Question", "UDP_MIN", "encode", "failure", "parse", "query_for", "response_ttl", "upstream_answers",
           "DNSError"]

UDP_MIN = 512


class Question(NamedTuple):
    request: DNSRecord
    qname: str  # as asked (case kept), with its trailing dot
    qtype: str  # "A", "SRV", ... or "TYPE65" for a type dnslib has no name for
    udp_size: int  # how large a UDP answer the client takes


def parse(data: bytes) -> Question:
    """The first question of a query; ``DNSError`` (or ``IndexError`` for a query without one) if malformed."""
    request = DNSRecord.parse(data)
    q = request.questions[0]
    size = max([UDP_MIN, *(min(rr.rclass, 4096) for rr in request.ar if rr.rtype == QTYPE.OPT)])
    return Question(request, str(q.qname), str(QTYPE.get(q.qtype)), size)


def _rdata(record: Record) -> object:
    d = record.data
    match record.rtype:
        case "A":
            return A(d)
        case "AAAA":
            return AAAA(d)
        case "CNAME":
            return CNAME(d)
        case "PTR":
            return PTR(d)
        case "NS":
            return NS(d)
        case "TXT":
            return TXT(d)
        case "SRV":
            return SRV(priority=d[0], weight=d[1], port=d[2], target=d[3])
        case "SOA":
            return SOA(d[0], d[1], d[2:])
    raise ValueError(f"no rdata for {record.rtype}")


def _rr(record: Record) -> RR:
    return RR(record.name, getattr(QTYPE, record.rtype), rdata=_rdata(record), ttl=record.ttl)


def encode(question: Question, answer: Answer, *, udp: bool, chased: Sequence[object] = ()) -> bytes:
    """The reply to ``question``: authoritative, recursion available (the server forwards other names);
    ``chased``: an upstream's records for the CNAME target the answer ends with (``upstream_answers``)."""
    reply = question.request.reply(ra=1, aa=1)
    reply.header.rcode = getattr(RCODE, answer.rcode)
    for record in answer.answer:
        reply.add_answer(_rr(record))
    for rr in chased:
        reply.add_answer(rr)
    for record in answer.authority:
        reply.add_auth(_rr(record))
    for record in answer.additional:
        reply.add_ar(_rr(record))
    if any(rr.rtype == QTYPE.OPT for rr in question.request.ar):
        reply.add_ar(EDNS0(udp_len=4096))
    data: bytes = reply.pack()
    if udp and len(data) > question.udp_size:
        data = reply.truncate().pack()
    return data


def query_for(name: str, qtype: str) -> bytes:
    """A recursive query for ``name``/``qtype`` (to chase a CNAME upstream)."""
    return bytes(DNSRecord.question(name, qtype).pack())


def upstream_answers(data: bytes) -> list[object]:
    """The answer records of an upstream's NOERROR reply (opaque: only ``encode`` reads them); [] otherwise."""
    try:
        reply = DNSRecord.parse(data)
    except (DNSError, IndexError, ValueError):
        return []
    return list(reply.rr) if reply.header.rcode == RCODE.NOERROR else []


def failure(data: bytes, rcode: str) -> bytes | None:
    """A bare reply with ``rcode`` (SERVFAIL, FORMERR, NOTIMP) to a query dnslib could read the header of; None
    when not even that (it is dropped, as CoreDNS drops garbage)."""
    try:
        request = DNSRecord.parse(data) if rcode != "FORMERR" else DNSRecord(header=DNSRecord.parse(data).header)
    except (DNSError, IndexError, ValueError):
        if len(data) < 12:
            return None
        reply = bytearray(data[:12])
        reply[2] |= 0x80  # QR
        reply[3] = (reply[3] & 0xF0) | getattr(RCODE, rcode)
        reply[4:12] = bytes(8)  # no sections
        return bytes(reply)
    reply = request.reply(ra=1)
    reply.header.rcode = getattr(RCODE, rcode)
    packed: bytes = reply.pack()
    return packed


def response_ttl(data: bytes) -> tuple[str, int] | None:
    """(rcode name, the smallest TTL among its records, or the SOA minimum for a denial) of an upstream reply,
    for the cache; None when it cannot be read."""
    try:
        reply = DNSRecord.parse(data)
    except (DNSError, IndexError, ValueError):
        return None
    rcode = str(RCODE.get(reply.header.rcode))
    ttls = [rr.ttl for rr in reply.rr]
    if not ttls:
        ttls = [min(rr.ttl, getattr(rr.rdata, "times", (0,) * 5)[-1]) for rr in reply.auth if rr.rtype == QTYPE.SOA]
    return rcode, min(ttls) if ttls else 0
