"""The cluster's DNS records (clusterdns/records.py) against the Kubernetes DNS specification, without a socket."""

from __future__ import annotations

from typing import Any

import pytest

from clusterdns.records import ClusterRecords, Record


def svc(name: str, ns: str = "default", *, ip: str = "10.96.0.20", ports: list[dict[str, Any]] | None = None,
        **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns},
            "spec": {"clusterIP": ip, "clusterIPs": [ip], "type": "ClusterIP",
                     "ports": ports if ports is not None else [{"name": "http", "port": 80, "protocol": "TCP"}],
                     **spec}}


def eps(service: str, *endpoints: dict[str, Any], ns: str = "default", name: str = "",
        ports: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name or f"{service}-abcde", "namespace": ns,
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4", "endpoints": list(endpoints),
            "ports": ports if ports is not None else [{"name": "http", "port": 8080, "protocol": "TCP"}]}


def ep(ip: str, *, ready: bool = True, hostname: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"addresses": [ip], "conditions": {"ready": ready}}
    if hostname:
        out["hostname"] = hostname
    return out


@pytest.fixture()
def records() -> ClusterRecords:
    r = ClusterRecords("cluster.local", ttl=30)
    r.set_service(svc("web"))
    r.set_service(svc("db", ip="None", ports=[{"name": "pg", "port": 5432, "protocol": "TCP"}]))
    r.set_slice(eps("db", ep("10.244.1.5", hostname="db-0"), ep("10.244.2.6", hostname="db-1"),
                    ep("10.244.3.7", ready=False), ports=[{"name": "pg", "port": 5432, "protocol": "TCP"}]))
    r.set_service(svc("ext", ip="", ports=[], type="ExternalName", externalName="example.org"))
    return r


def values(records: ClusterRecords, name: str, qtype: str) -> list[Any]:
    answer = records.lookup(name, qtype)
    assert answer is not None and answer.rcode == "NOERROR", answer
    return [r.data for r in answer.answer]


def test_service_a_record_is_its_cluster_ip(records: ClusterRecords) -> None:
    answer = records.lookup("Web.Default.svc.cluster.local", "A")
    assert answer is not None
    assert answer.answer == [Record("web.default.svc.cluster.local.", "A", 30, "10.96.0.20")]


def test_headless_service_resolves_to_ready_endpoints_only(records: ClusterRecords) -> None:
    assert sorted(values(records, "db.default.svc.cluster.local.", "A")) == ["10.244.1.5", "10.244.2.6"]


def test_statefulset_pod_hostname(records: ClusterRecords) -> None:
    assert values(records, "db-1.db.default.svc.cluster.local", "A") == ["10.244.2.6"]
    not_ready = records.lookup("10-244-3-7.db.default.svc.cluster.local", "A")
    assert not_ready is not None and not_ready.rcode == "NXDOMAIN"


def test_srv_for_named_ports(records: ClusterRecords) -> None:
    assert values(records, "_http._tcp.web.default.svc.cluster.local", "SRV") == \
        [(0, 100, 80, "web.default.svc.cluster.local.")]
    answer = records.lookup("_pg._tcp.db.default.svc.cluster.local", "SRV")
    assert answer is not None
    assert sorted(r.data for r in answer.answer) == [(0, 50, 5432, "db-0.db.default.svc.cluster.local."),
                                                     (0, 50, 5432, "db-1.db.default.svc.cluster.local.")]
    assert sorted(r.data for r in answer.additional) == ["10.244.1.5", "10.244.2.6"]
    wrong = records.lookup("_pg._udp.db.default.svc.cluster.local", "SRV")
    assert wrong is not None and wrong.rcode == "NXDOMAIN"


def test_pod_a_record(records: ClusterRecords) -> None:
    assert values(records, "10-244-1-9.anyns.pod.cluster.local", "A") == ["10.244.1.9"]
    bad = records.lookup("not-an-ip.default.pod.cluster.local", "A")
    assert bad is not None and bad.rcode == "NXDOMAIN"


def test_external_name_is_a_cname(records: ClusterRecords) -> None:
    assert values(records, "ext.default.svc.cluster.local", "A") == ["example.org."]
    answer = records.lookup("ext.default.svc.cluster.local", "A")
    assert answer is not None and answer.answer[0].rtype == "CNAME"


def test_nxdomain_and_nodata_carry_the_soa(records: ClusterRecords) -> None:
    missing = records.lookup("nope.default.svc.cluster.local", "A")
    assert missing is not None and missing.rcode == "NXDOMAIN" and not missing.answer
    assert missing.authority[0].rtype == "SOA"
    assert missing.authority[0].data[:2] == ("ns.dns.cluster.local.", "hostmaster.cluster.local.")
    nodata = records.lookup("web.default.svc.cluster.local", "MX")
    assert nodata is not None and nodata.rcode == "NOERROR" and not nodata.answer
    assert nodata.authority[0].rtype == "SOA"
    aaaa = records.lookup("web.default.svc.cluster.local", "AAAA")
    assert aaaa is not None and aaaa.rcode == "NOERROR" and not aaaa.answer


def test_namespace_and_version(records: ClusterRecords) -> None:
    assert values(records, "dns-version.cluster.local", "TXT") == ["1.1.0"]
    ns = records.lookup("default.svc.cluster.local", "A")
    assert ns is not None and ns.rcode == "NOERROR"
    other = records.lookup("nowhere.svc.cluster.local", "A")
    assert other is not None and other.rcode == "NXDOMAIN"
    assert values(records, "cluster.local", "SOA")[0][0] == "ns.dns.cluster.local."


def test_names_outside_the_zone_are_not_ours(records: ClusterRecords) -> None:
    assert records.lookup("example.org", "A") is None
    assert records.lookup("9.9.9.9.in-addr.arpa", "PTR") is None


def test_ptr_for_cluster_ips_and_endpoints(records: ClusterRecords) -> None:
    assert values(records, "20.0.96.10.in-addr.arpa.", "PTR") == ["web.default.svc.cluster.local."]
    assert values(records, "5.1.244.10.in-addr.arpa.", "PTR") == ["db-0.db.default.svc.cluster.local."]


def test_changes_show_at_once(records: ClusterRecords) -> None:
    records.set_service(svc("web", ip="10.96.0.99"))
    assert values(records, "web.default.svc.cluster.local", "A") == ["10.96.0.99"]
    assert values(records, "99.0.96.10.in-addr.arpa.", "PTR") == ["web.default.svc.cluster.local."]
    records.delete_service(svc("web"))
    gone = records.lookup("web.default.svc.cluster.local", "A")
    assert gone is not None and gone.rcode == "NXDOMAIN"
    records.delete_slice(eps("db"))
    empty = records.lookup("db.default.svc.cluster.local", "A")
    assert empty is not None and empty.rcode == "NOERROR" and not empty.answer
