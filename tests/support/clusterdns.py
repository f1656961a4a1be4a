"""A real ``python -m clusterdns`` (``kubelab dns``) on a free port of a 127.0.0.x address, the dnspython queries
tests ask it, and a fake upstream resolver on another 127.0.0.x address (tests never reach a real resolver)."""

from __future__ import annotations

import random
import socket
import threading
from pathlib import Path

import dns.message
import dns.query
import dns.rdatatype
import httpx
from dnslib import QTYPE, RR, A, DNSRecord

from kubelab.etcd import free_port
from support.process import ComponentProcess
from support.wait import wait_for


def loopback_address() -> str:
    """A 127.0.0.x other than 127.0.0.1 (and systemd-resolved's 127.0.0.53)."""
    return f"127.0.0.{random.choice([n for n in range(100, 250)])}"


class DnsProcess(ComponentProcess):
    """``kubelab dns`` answering on ``address``:``port``; ready once ``/readyz`` answers 200."""

    def __init__(self, api_url: str, log_path: Path, address: str, *flags: str, port: int | None = None) -> None:
        self.address, self.port, self.health_port = address, port or free_port(), free_port()
        super().__init__("clusterdns", api_url, log_path, "--bind-address", address, "--port", str(self.port),
                         "--health-port", str(self.health_port), *flags)

    def wait_ready(self) -> None:
        def ready() -> bool:
            assert self.poll() is None, self.log()
            try:
                return httpx.get(f"http://127.0.0.1:{self.health_port}/readyz").status_code == 200
            except httpx.HTTPError:
                return False
        wait_for(ready, what="kubelab dns to be ready")

    def query(self, name: str, rdtype: str, *, tcp: bool = False) -> dns.message.Message:
        q = dns.message.make_query(name, rdtype)
        if tcp:
            return dns.query.tcp(q, self.address, port=self.port, timeout=5)
        return dns.query.udp(q, self.address, port=self.port, timeout=5)


def values(reply: dns.message.Message, rdtype: str = "A") -> list[str]:
    """The answer section's records of ``rdtype``, as text."""
    wanted = dns.rdatatype.from_text(rdtype)
    return sorted(rd.to_text() for rrset in reply.answer if rrset.rdtype == wanted for rd in rrset)


class FakeUpstream:
    """A resolver on ``address``:``port`` (UDP) that knows one name, ``outside.example.``; counts the queries it
    gets (to see the cache)."""

    NAME, IP = "outside.example.", "192.0.2.7"

    def __init__(self) -> None:
        self.address, self.queries = loopback_address(), 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((self.address, 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                data, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            self.queries += 1
            request = DNSRecord.parse(data)
            reply = request.reply()
            if str(request.q.qname).lower() == self.NAME and request.q.qtype == QTYPE.A:
                reply.add_answer(RR(self.NAME, QTYPE.A, rdata=A(self.IP), ttl=60))
            else:
                reply.header.rcode = 3
            self.sock.sendto(reply.pack(), peer)

    def close(self) -> None:
        self.sock.close()
