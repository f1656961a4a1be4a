"""What the rules are made from: one ``ServicePort`` per port of a Service, with its ready endpoints
(kube-proxy's ``ServicePortName`` → ``BaseServicePortInfo`` + ``Endpoint``), built from the informers' objects."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_AFFINITY_SECONDS = 10800  # ClientIPConfig.timeoutSeconds default


def chain_hash(text: str, length: int) -> str:
    """kube-proxy's chain-name hash: the first ``length`` base32 characters of the SHA-256 of ``text`` (16 in
    iptables mode's ``KUBE-SVC-…`` names, 8 in nftables mode's ``service-…-`` prefixes)."""
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()[:length]


@dataclass(frozen=True)
class Endpoint:
    ip: str
    port: int


@dataclass(frozen=True)
class ServicePort:
    """One port of one Service: ``namespace/name:port_name``, and everything the rules need."""

    namespace: str
    name: str
    port_name: str
    protocol: str  # TCP, UDP, SCTP
    cluster_ips: tuple[str, ...]
    port: int
    node_port: int = 0
    affinity_seconds: int = 0  # sessionAffinity ClientIP: its timeout, else 0
    endpoints: tuple[Endpoint, ...] = field(default=())

    @property
    def key(self) -> str:
        """kube-proxy's ``ServicePortName`` as its chain names carry it: ``ns/name/tcp/portname``."""
        return f"{self.namespace}/{self.name}/{self.protocol.lower()}/{self.port_name}"


def service_ports(service: Mapping[str, Any], slices: Iterable[Mapping[str, Any]]) -> list[ServicePort]:
    """The Service's ports with their ready endpoints (from its EndpointSlices, matched by port name and
    protocol); none for a headless Service, an ExternalName or one without a ClusterIP."""
    spec = service.get("spec") or {}
    meta = service["metadata"]
    cluster_ips = tuple(ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and ip != "None")
    if spec.get("type") == "ExternalName" or not cluster_ips:
        return []
    affinity = 0
    if spec.get("sessionAffinity") == "ClientIP":
        config = (spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}
        affinity = int(config.get("timeoutSeconds") or DEFAULT_AFFINITY_SECONDS)
    slices = list(slices)
    ports = []
    for port in spec.get("ports") or []:
        name, protocol = port.get("name") or "", port.get("protocol") or "TCP"
        endpoints: set[Endpoint] = set()
        for s in slices:
            if s.get("addressType", "IPv4") != "IPv4":
                continue
            number = next((p.get("port") for p in s.get("ports") or []
                           if (p.get("name") or "") == name and (p.get("protocol") or "TCP") == protocol), None)
            if number is None:
                continue
            for endpoint in s.get("endpoints") or []:
                if (endpoint.get("conditions") or {}).get("ready", True) is not False:
                    endpoints.update(Endpoint(ip, int(number)) for ip in endpoint.get("addresses") or [])
        ports.append(ServicePort(meta.get("namespace", "default"), meta["name"], name, protocol, cluster_ips,
                                 int(port["port"]), int(port.get("nodePort") or 0), affinity,
                                 tuple(sorted(endpoints, key=lambda e: (e.ip, e.port)))))
    return ports
