"""The DNS server's answers on the wire (clusterdns/server.py, wire.py, forward.py), without sockets to the
cluster: truncation over UDP, failures (FORMERR, NOTIMP, SERVFAIL), and what is forwarded."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dnslib import EDNS0, QTYPE, RCODE, DNSRecord

from clusterdns.forward import Forwarder, upstreams_from
from clusterdns.records import ClusterRecords
from clusterdns.server import DnsServer


def server(upstreams: list[tuple[str, int]] | None = None) -> DnsServer:
    records = ClusterRecords()
    records.set_service({"metadata": {"name": "big", "namespace": "default"},
                         "spec": {"clusterIP": "None", "ports": [{"name": "http", "port": 80}]}})
    records.set_slice({"metadata": {"name": "big-1", "namespace": "default",
                                    "labels": {"kubernetes.io/service-name": "big"}},
                       "endpoints": [{"addresses": [f"10.244.0.{i}"]} for i in range(1, 61)],
                       "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]})
    return DnsServer(records, Forwarder(upstreams or [], timeout=0.3), "127.0.0.1", 0)


def ask(srv: DnsServer, data: bytes, *, tcp: bool = False) -> DNSRecord:
    out = asyncio.run(srv.handle(data, tcp=tcp))
    assert out is not None
    return DNSRecord.parse(out)




def test_large_answers_are_truncated_over_udp_only() -> None:
    query = DNSRecord.question("big.default.svc.cluster.local", "A").pack()
    udp = ask(server(), query)
    assert udp.header.tc == 1 and not udp.rr
    tcp = ask(server(), query, tcp=True)
    assert tcp.header.tc == 0 and len(tcp.rr) == 60 and tcp.header.aa == 1


def test_failures_have_their_rcodes() -> None:
    srv = server()
    no_question = DNSRecord()
    no_question.header.id = 7
    assert RCODE.get(ask(srv, no_question.pack()).header.rcode) == "FORMERR"
    notify = DNSRecord.question("example.org")
    notify.header.opcode = 4
    assert RCODE.get(ask(srv, notify.pack()).header.rcode) == "NOTIMP"
    outside = ask(srv, DNSRecord.question("example.org").pack())  # no upstream answers
    assert RCODE.get(outside.header.rcode) == "SERVFAIL"
    assert asyncio.run(srv.handle(b"\x01", tcp=False)) is None  # not even a header: dropped


def test_edns_clients_get_larger_udp_answers() -> None:
    query = DNSRecord.question("big.default.svc.cluster.local", "A")
    query.add_ar(EDNS0(udp_len=4096))
    reply = ask(server(), query.pack())
    assert reply.header.tc == 0 and len([rr for rr in reply.rr if rr.rtype == QTYPE.A]) == 60


def test_upstreams_from_a_resolv_conf_or_addresses(tmp_path: Path) -> None:
    conf = tmp_path / "resolv.conf"
    conf.write_text("# comment\nnameserver 192.0.2.1\nnameserver 127.0.0.9\nsearch x\n")
    assert upstreams_from(str(conf)) == [("192.0.2.1", 53), ("127.0.0.9", 53)]
    assert upstreams_from(str(conf), own=("127.0.0.9", 53)) == [("192.0.2.1", 53)]  # not itself: a loop
    assert upstreams_from("127.0.0.5:5353 [fd00::1]:54 192.0.2.8") == [("127.0.0.5", 5353), ("fd00::1", 54),
                                                                       ("192.0.2.8", 53)]


def test_a_cluster_name_not_found_before_the_informers_synced_is_a_server_failure() -> None:
    """CoreDNS's kubernetes plugin: until it has synced, a name error in the zone is SERVFAIL (resolvers retry it;
    a NXDOMAIN they would cache, for a name that may exist); names it has are answered, and once synced a missing
    name is NXDOMAIN."""
    synced = False
    srv = server()
    srv.synced = lambda: synced
    missing = DNSRecord.question("kubernetes.default.svc.cluster.local", "A").pack()
    assert RCODE.get(ask(srv, missing).header.rcode) == "SERVFAIL"
    known = ask(srv, DNSRecord.question("big.default.svc.cluster.local", "A").pack(), tcp=True)
    assert RCODE.get(known.header.rcode) == "NOERROR" and len(known.rr) == 60
    synced = True
    assert RCODE.get(ask(srv, missing).header.rcode) == "NXDOMAIN"
