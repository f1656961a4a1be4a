"""CoreDNS's metrics (its ``metrics`` plugin and ``plugin/metrics/vars``): the names, labels and buckets a
Prometheus scraping CoreDNS on kubeadm expects, served at ``/metrics`` on the health port (CoreDNS serves them on
``:9153``), with the client's ``rest_client_*`` and the process's ``process_*`` from the same registry.

One counter increment per query and one per reply, one histogram observation per query: the lookup stays in
memory and never waits on them.
"""

from __future__ import annotations

from apimachinery.metrics import Counter, Gauge, Histogram, exponential_buckets

__all__ = ["observe"]

VERSION = "1.11.3"  # the CoreDNS of kube 1.32, whose behaviour this server follows

REQUESTS = Counter("coredns_dns_requests_total", "Counter of DNS requests made per zone, protocol and family.",
                   ["server", "zone", "view", "proto", "family", "type"])
RESPONSES = Counter("coredns_dns_responses_total", "Counter of response status codes.",
                    ["server", "zone", "view", "rcode", "plugin"])
DURATION = Histogram("coredns_dns_request_duration_seconds", "Histogram of the time (in seconds) each request took.",
                     ["server", "zone", "view", "type"], buckets=exponential_buckets(0.00025, 2, 16))
BUILD_INFO = Gauge("coredns_build_info", "A metric with a constant '1' value labeled by version, revision, and "
                   "goversion from which CoreDNS was built.", ["version", "revision", "goversion"])
BUILD_INFO.labels(VERSION, "kubelab", "none").set(1)

RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def observe(server: str, zone: str, proto: str, qtype: str, reply: bytes | None, seconds: float, plugin: str) -> None:
    """One query answered (``reply``; None: dropped) by ``plugin`` (``kubernetes``, ``forward``, or "")."""
    REQUESTS.labels(server, zone, "", proto, "1", qtype).inc()
    DURATION.labels(server, zone, "", qtype).observe(seconds)
    if reply is not None and len(reply) >= 4:
        RESPONSES.labels(server, zone, "", RCODES.get(reply[3] & 0x0F, str(reply[3] & 0x0F)), plugin).inc()
