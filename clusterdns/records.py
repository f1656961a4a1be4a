"""The cluster's DNS records, computed from Services and EndpointSlices: the Kubernetes DNS specification
(kubernetes/dns ``docs/specification.md``) as CoreDNS's ``kubernetes`` plugin serves it, with ``pods insecure``.

Why library-neutral: ``ClusterRecords.lookup`` answers with plain ``Record`` tuples and an rcode, so the rules
are unit-tested without a wire format and ``wire`` is the only module that knows the DNS library.

Names answered, ``<zone>`` being ``--cluster-domain`` (``cluster.local``)::

    <svc>.<ns>.svc.<zone>                 A/AAAA: the ClusterIPs; headless: the ready endpoints' addresses;
                                          ExternalName: a CNAME to ``spec.externalName`` (whatever the type)
    <ep>.<svc>.<ns>.svc.<zone>            A/AAAA of the endpoint whose hostname (or dashed address) is <ep>
    _<port>._<proto>.<svc>.<ns>.svc.<zone> SRV per named port (the Service for a ClusterIP, each ready endpoint
                                          for a headless Service), with the targets' addresses as additionals;
                                          SRV on ``<svc>.<ns>.svc.<zone>`` itself: every named port
    a-b-c-d.<ns>.pod.<zone>               A a.b.c.d (``pods insecure``: the address is not checked against pods)
    dns-version.<zone>                    TXT "1.1.0" (the specification's version)
    <zone>                                SOA and NS
    d.c.b.a.in-addr.arpa / ip6.arpa       PTR for ClusterIPs and endpoint addresses; other addresses are not
                                          ours (``None``: forwarded, CoreDNS's ``fallthrough in-addr.arpa ip6.arpa``)

A name that does not exist is NXDOMAIN, a known name asked for another type NOERROR with no answer (NODATA); both
carry the zone's SOA in the authority section, as CoreDNS's do. Every record has the same TTL (``ttl``; kubeadm's
Corefile sets ``ttl 30``, the plugin's own default is 5 s).
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

__all__ = ["SPEC_VERSION", "Answer", "ClusterRecords", "Record", "RRType", "dashed", "endpoint_hostname", "fqdn"]

SPEC_VERSION = "1.1.0"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
RRType = Literal["A", "AAAA", "CNAME", "SRV", "PTR", "TXT", "SOA", "NS"]
Rcode = Literal["NOERROR", "NXDOMAIN"]
ServiceKey = tuple[str, str]  # (namespace, name)


class Record(NamedTuple):
    """One resource record; ``data`` is an address, a name, a text, ``(priority, weight, port, target)`` for SRV or
    ``(mname, rname, serial, refresh, retry, expire, minimum)`` for SOA."""

    name: str
    rtype: RRType
    ttl: int
    data: Any


@dataclass
class Answer:
    rcode: Rcode = "NOERROR"
    answer: list[Record] = field(default_factory=list)
    authority: list[Record] = field(default_factory=list)
    additional: list[Record] = field(default_factory=list)


def fqdn(name: str) -> str:
    """``name`` lower-cased with its trailing dot."""
    name = name.lower()
    return name if name.endswith(".") else name + "."


def dashed(ip: str) -> str:
    """An address as one DNS label: ``10.244.1.5`` → ``10-244-1-5``, ``fd00::1`` → ``fd00--1``."""
    return ip.replace(".", "-").replace(":", "-")


def endpoint_hostname(endpoint: Mapping[str, Any], ip: str) -> str:
    """The label an endpoint is known by: its ``hostname`` (StatefulSet pods), else its dashed address."""
    return str(endpoint.get("hostname") or dashed(ip))


def _family(ip: str) -> RRType:
    return "AAAA" if ":" in ip else "A"


def _is_ready(endpoint: Mapping[str, Any]) -> bool:
    """``conditions.ready`` unset means ready (the EndpointSlice API's rule)."""
    return (endpoint.get("conditions") or {}).get("ready") is not False


def _undash_ip(label: str) -> str | None:
    """``10-244-1-5`` → ``10.244.1.5``, ``fd00--1`` → ``fd00::1``; None if it is no address."""
    for text in (label.replace("-", "."), label.replace("-", ":")):
        try:
            return str(ipaddress.ip_address(text))
        except ValueError:
            continue
    return None


def _reverse_ip(name: str) -> str | None:
    """The address a PTR name asks for (``5.1.244.10.in-addr.arpa.`` → ``10.244.1.5``), None if incomplete."""
    labels = name.rstrip(".").split(".")
    if name.endswith(".in-addr.arpa.") and len(labels) == 6:
        text = ".".join(reversed(labels[:4]))
    elif name.endswith(".ip6.arpa.") and len(labels) == 34:
        nibbles = "".join(reversed(labels[:32]))
        text = ":".join(nibbles[i:i + 4] for i in range(0, 32, 4))
    else:
        return None
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


class ClusterRecords:
    """An index of Services and their EndpointSlices that answers DNS questions about them.

    Fed by the informers' handlers (``set_service``, ``delete_service``, ``set_slice``, ``delete_slice``); each
    change is visible to the next ``lookup``. Single-threaded: the event loop that runs the handlers also answers.
    """

    def __init__(self, zone: str = "cluster.local", ttl: int = 30) -> None:
        self.zone = fqdn(zone)
        self.ttl = ttl
        self.services: dict[ServiceKey, dict[str, Any]] = {}
        self.slices: dict[ServiceKey, dict[str, dict[str, Any]]] = {}  # service → slice name → slice
        self._reverse: dict[str, list[str]] | None = None  # address → names, rebuilt after a change
        self.serial = int(time.time())

    # ---- the informers' side ----------------------------------------------------------------------------
    def set_service(self, svc: Mapping[str, Any]) -> None:
        meta = svc["metadata"]
        self.services[(meta.get("namespace", "default"), meta["name"])] = dict(svc)
        self._changed()

    def delete_service(self, svc: Mapping[str, Any]) -> None:
        meta = svc["metadata"]
        self.services.pop((meta.get("namespace", "default"), meta["name"]), None)
        self._changed()

    def set_slice(self, eps: Mapping[str, Any]) -> None:
        meta = eps["metadata"]
        service = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if service:
            self.slices.setdefault((meta.get("namespace", "default"), service), {})[meta["name"]] = dict(eps)
            self._changed()

    def delete_slice(self, eps: Mapping[str, Any]) -> None:
        meta = eps["metadata"]
        key = (meta.get("namespace", "default"), (meta.get("labels") or {}).get(SERVICE_NAME_LABEL, ""))
        slices = self.slices.get(key)
        if slices is not None:
            slices.pop(meta["name"], None)
            if not slices:
                del self.slices[key]
        self._changed()

    def _changed(self) -> None:
        self._reverse = None
        self.serial = max(self.serial + 1, int(time.time()))

    # ---- the question's side ----------------------------------------------------------------------------
    def lookup(self, qname: str, qtype: str) -> Answer | None:
        """The answer to ``qname``/``qtype``; None when the name is not this server's (to be forwarded)."""
        name = fqdn(qname)
        if name.endswith((".in-addr.arpa.", ".ip6.arpa.")):
            return self._ptr(name, qtype)
        if name == self.zone:
            return self._apex(qtype)
        if not name.endswith("." + self.zone):
            return None
        labels = name[:-len(self.zone) - 1].split(".")
        if labels == ["dns-version"]:
            text = [Record(name, "TXT", self.ttl, SPEC_VERSION)]
            return self._answer(text if qtype == "TXT" else [], exists=True)
        if labels[-1] == "svc":
            return self._svc(name, labels[:-1], qtype)
        if labels[-1] == "pod":
            return self._pod(name, labels[:-1], qtype)
        return self._answer([], exists=False)

    def soa(self) -> Record:
        return Record(self.zone, "SOA", self.ttl, (f"ns.dns.{self.zone}", f"hostmaster.{self.zone}", self.serial,
                                                   7200, 1800, 86400, self.ttl))

    def _answer(self, answer: list[Record], *, exists: bool, additional: list[Record] | None = None) -> Answer:
        if answer:
            return Answer("NOERROR", answer, [], additional or [])
        return Answer("NOERROR" if exists else "NXDOMAIN", [], [self.soa()])

    def _apex(self, qtype: str) -> Answer:
        if qtype == "SOA":
            return Answer("NOERROR", [self.soa()])
        if qtype == "NS":
            return Answer("NOERROR", [Record(self.zone, "NS", self.ttl, f"ns.dns.{self.zone}")])
        return self._answer([], exists=True)

    def _pod(self, name: str, labels: list[str], qtype: str) -> Answer:
        if len(labels) <= 1:  # pod.<zone>, <ns>.pod.<zone>
            return self._answer([], exists=True)
        ip = _undash_ip(labels[0]) if len(labels) == 2 else None
        if ip is None:
            return self._answer([], exists=False)
        return self._answer([Record(name, qtype, self.ttl, ip)] if _family(ip) == qtype else [], exists=True)

    def _svc(self, name: str, labels: list[str], qtype: str) -> Answer:
        if not labels:  # svc.<zone>
            return self._answer([], exists=True)
        if len(labels) == 1:  # <ns>.svc.<zone>: known while it has Services (no namespace informer)
            return self._answer([], exists=any(ns == labels[0] for ns, _ in self.services))
        key = (labels[-1], labels[-2])
        svc = self.services.get(key)
        if svc is None:
            return self._answer([], exists=False)
        rest = labels[:-2]
        if not rest:
            return self._service(name, key, svc, qtype)
        if len(rest) == 1:
            return self._endpoint(name, key, rest[0], qtype)
        if len(rest) == 2 and rest[0].startswith("_") and rest[1].startswith("_"):
            srv = self._srv(key, svc, rest[0][1:], rest[1][1:])
            return self._answer(srv if qtype == "SRV" else [], exists=bool(srv), additional=self._targets(srv))
        return self._answer([], exists=False)

    def _service(self, name: str, key: ServiceKey, svc: Mapping[str, Any], qtype: str) -> Answer:
        spec = svc.get("spec") or {}
        if spec.get("type") == "ExternalName":
            return Answer("NOERROR", [Record(name, "CNAME", self.ttl, fqdn(spec.get("externalName", "")))])
        if qtype == "SRV":
            srv = self._srv(key, svc, None, None)
            return self._answer(srv, exists=True, additional=self._targets(srv))
        if qtype not in ("A", "AAAA"):
            return self._answer([], exists=True)
        if self._headless(svc):
            ips = [ip for _, ip, _ in self._ready_endpoints(key)]
        else:
            ips = list(spec.get("clusterIPs") or [spec.get("clusterIP")])
        return self._answer([Record(name, qtype, self.ttl, ip) for ip in dict.fromkeys(ips)
                             if ip and _family(ip) == qtype], exists=True)

    def _endpoint(self, name: str, key: ServiceKey, label: str, qtype: str) -> Answer:
        ips = [ip for endpoint, ip, _ in self._ready_endpoints(key) if endpoint_hostname(endpoint, ip) == label]
        if not ips:
            return self._answer([], exists=False)
        return self._answer([Record(name, qtype, self.ttl, ip) for ip in dict.fromkeys(ips) if _family(ip) == qtype],
                            exists=True)

    def _srv(self, key: ServiceKey, svc: Mapping[str, Any], port: str | None, proto: str | None) -> list[Record]:
        """SRV records for the named ports matching ``port``/``proto`` (None: any)."""
        spec = svc.get("spec") or {}
        base = f"{key[1]}.{key[0]}.svc.{self.zone}"
        records: list[Record] = []
        for p in spec.get("ports") or []:
            pname, pproto = str(p.get("name") or "").lower(), str(p.get("protocol") or "TCP").lower()
            if not pname or (port is not None and pname != port) or (proto is not None and pproto != proto):
                continue
            owner = f"_{pname}._{pproto}.{base}"
            if spec.get("type") == "ExternalName":
                records.append(Record(owner, "SRV", self.ttl, (0, 100, int(p.get("port", 0)),
                                                               fqdn(spec.get("externalName", "")))))
            elif not self._headless(svc):
                records.append(Record(owner, "SRV", self.ttl, (0, 100, int(p.get("port", 0)), base)))
            else:
                targets = {(endpoint_hostname(ep, ip), eport) for ep, ip, ports in self._ready_endpoints(key)
                           for eport in ports if eport[0] == pname and eport[1] == pproto}
                records += [Record(owner, "SRV", self.ttl, (0, 0, number, f"{host}.{base}"))
                            for host, (_, _, number) in sorted(targets)]
        weight = 100 // len(records) if records else 0  # CoreDNS shares a weight of 100 among the records
        return [r._replace(data=(0, weight, r.data[2], r.data[3])) for r in records]

    def _targets(self, srv: Iterable[Record]) -> list[Record]:
        """The addresses of SRV targets inside the zone, for the additional section."""
        extra: list[Record] = []
        for record in srv:
            target = record.data[3]
            for qtype in ("A", "AAAA"):
                found = self.lookup(target, qtype) if target.endswith(self.zone) else None
                extra += found.answer if found else []
        return list(dict.fromkeys(extra))

    @staticmethod
    def _headless(svc: Mapping[str, Any]) -> bool:
        return (svc.get("spec") or {}).get("clusterIP") == "None"

    def _ready_endpoints(self, key: ServiceKey) -> Iterator[tuple[dict[str, Any], str, list[tuple[str, str, int]]]]:
        """(endpoint, address, its slice's ports as (name, protocol, port)) for each ready endpoint address."""
        for eps in (self.slices.get(key) or {}).values():
            ports = [(str(p.get("name") or "").lower(), str(p.get("protocol") or "TCP").lower(), int(p.get("port", 0)))
                     for p in eps.get("ports") or []]
            for endpoint in eps.get("endpoints") or []:
                if _is_ready(endpoint):
                    for ip in endpoint.get("addresses") or []:
                        yield endpoint, ip, ports

    # ---- reverse ----------------------------------------------------------------------------------------
    def _ptr(self, name: str, qtype: str) -> Answer | None:
        ip = _reverse_ip(name)
        names = self.reverse().get(ip or "")
        if not names:
            return None
        return self._answer([Record(name, "PTR", self.ttl, n) for n in names] if qtype == "PTR" else [], exists=True)

    def reverse(self) -> dict[str, list[str]]:
        """Address → the names that point at it: ClusterIPs → their Service, endpoints → their endpoint name."""
        if self._reverse is None:
            index: dict[str, list[str]] = {}
            for (ns, svcname), svc in self.services.items():
                base = f"{svcname}.{ns}.svc.{self.zone}"
                spec = svc.get("spec") or {}
                for ip in spec.get("clusterIPs") or [spec.get("clusterIP")]:
                    if ip and ip != "None":
                        index.setdefault(str(ipaddress.ip_address(ip)), []).append(base)
                for endpoint, ip, _ in self._ready_endpoints((ns, svcname)):
                    host = f"{endpoint_hostname(endpoint, ip)}.{base}"
                    names = index.setdefault(str(ipaddress.ip_address(ip)), [])
                    if host not in names:
                        names.append(host)
            self._reverse = index
        return self._reverse
