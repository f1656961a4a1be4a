"""``kubelab dns`` as a real process over the real apiserver, asked with dnspython on 127.0.0.x: a Service's A
record is its ClusterIP, a headless Service resolves to its ready endpoints (a StatefulSet pod by its hostname),
SRV for named ports, pod A records, NXDOMAIN with the zone's SOA, other names forwarded to a fake upstream (and
cached), the records follow a Service changed or deleted, and ``kube-system/kube-dns`` points at the server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import httpx
import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

import kubelab
from kubelab.etcd import free_port
from support.clusterdns import DnsProcess, FakeUpstream, loopback_address, values
from support.wait import wait_for

ZONE = "cluster.local"


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    fake = FakeUpstream()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def server(api_url: str, upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DnsProcess]:
    proc = DnsProcess(api_url, tmp_path_factory.mktemp("dns") / "dns.log", loopback_address(),
                      "--forward", f"{upstream.address}:{upstream.port}")
    try:
        proc.wait_ready()
        yield proc
    finally:
        assert proc.stop() == 0, proc.log()
        # the session's apiserver is shared: leave no kube-dns pointing at a server that is gone
        httpx.delete(f"{api_url}/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices/kube-dns")
        httpx.delete(f"{api_url}/api/v1/namespaces/kube-system/services/kube-dns")


def create(api_url: str, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    resp = httpx.post(f"{api_url}{path}", json=obj)
    assert resp.status_code == 201, resp.text
    body: dict[str, Any] = resp.json()
    return body


def service(api_url: str, ns: str, name: str, **spec: Any) -> dict[str, Any]:
    body = {"metadata": {"name": name}, "spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}], **spec}}
    return create(api_url, f"/api/v1/namespaces/{ns}/services", body)


def endpoint_slice(api_url: str, ns: str, service_name: str, endpoints: list[dict[str, Any]]) -> None:
    create(api_url, f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", {
        "metadata": {"name": f"{service_name}-x1", "labels": {"kubernetes.io/service-name": service_name}},
        "addressType": "IPv4", "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})


def answered(server: DnsProcess, name: str, rdtype: str = "A", expected: list[str] | None = None) -> list[str]:
    """Wait for ``name`` to have an answer (the watch event may still be on its way), and return it."""
    def check() -> list[str] | None:
        found = values(server.query(name, rdtype), rdtype)
        return found if found and (expected is None or found == expected) else None
    result: list[str] = wait_for(check, timeout=10, what=f"{name} {rdtype} {expected or ''}")
    return result


def test_service_resolves_to_its_cluster_ip(server: DnsProcess, api_url: str, ns: str) -> None:
    ip = service(api_url, ns, "web")["spec"]["clusterIP"]
    assert answered(server, f"web.{ns}.svc.{ZONE}") == [ip]
    reply = server.query(f"web.{ns}.svc.{ZONE}", "A", tcp=True)
    assert values(reply) == [ip] and reply.answer[0].ttl == 30


def test_headless_service_and_statefulset_hostnames(server: DnsProcess, api_url: str, ns: str) -> None:
    service(api_url, ns, "db", clusterIP="None")
    endpoint_slice(api_url, ns, "db", [
        {"addresses": ["10.244.1.5"], "hostname": "db-0", "conditions": {"ready": True}},
        {"addresses": ["10.244.2.6"], "hostname": "db-1", "conditions": {"ready": True}},
        {"addresses": ["10.244.3.7"], "conditions": {"ready": False}}])
    assert answered(server, f"db.{ns}.svc.{ZONE}") == ["10.244.1.5", "10.244.2.6"]
    assert values(server.query(f"db-1.db.{ns}.svc.{ZONE}", "A")) == ["10.244.2.6"]
    srv = server.query(f"_http._tcp.db.{ns}.svc.{ZONE}", "SRV")
    assert values(srv, "SRV") == [f"0 50 8080 db-0.db.{ns}.svc.{ZONE}.", f"0 50 8080 db-1.db.{ns}.svc.{ZONE}."]
    assert sorted(rd.to_text() for rrset in srv.additional for rd in rrset) == ["10.244.1.5", "10.244.2.6"]
    assert values(server.query("6.2.244.10.in-addr.arpa.", "PTR"), "PTR") == [f"db-1.db.{ns}.svc.{ZONE}."]


def test_srv_for_a_cluster_ip_service(server: DnsProcess, api_url: str, ns: str) -> None:
    service(api_url, ns, "api")
    assert answered(server, f"_http._tcp.api.{ns}.svc.{ZONE}", "SRV") == [f"0 100 80 api.{ns}.svc.{ZONE}."]


def test_pod_records_and_version(server: DnsProcess) -> None:
    assert values(server.query(f"10-244-1-9.default.pod.{ZONE}", "A")) == ["10.244.1.9"]
    assert values(server.query(f"dns-version.{ZONE}", "TXT"), "TXT") == ['"1.1.0"']


def test_nxdomain_and_nodata_carry_the_soa(server: DnsProcess, api_url: str, ns: str) -> None:
    reply = server.query(f"nothing.{ns}.svc.{ZONE}", "A")
    assert reply.rcode() == dns.rcode.NXDOMAIN and not reply.answer
    (soa,) = reply.authority
    assert soa.rdtype == dns.rdatatype.SOA and soa.name.to_text() == f"{ZONE}."
    assert soa[0].mname.to_text() == f"ns.dns.{ZONE}." and soa[0].rname.to_text() == f"hostmaster.{ZONE}."
    service(api_url, ns, "mail")
    answered(server, f"mail.{ns}.svc.{ZONE}")
    nodata = server.query(f"mail.{ns}.svc.{ZONE}", "MX")
    assert nodata.rcode() == dns.rcode.NOERROR and not nodata.answer and nodata.authority


def test_other_names_are_forwarded_and_cached(server: DnsProcess, upstream: FakeUpstream) -> None:
    reply = server.query(FakeUpstream.NAME, "A")
    assert values(reply) == [FakeUpstream.IP]
    asked = upstream.queries
    assert values(server.query(FakeUpstream.NAME, "A")) == [FakeUpstream.IP]
    assert upstream.queries == asked  # from the cache
    missing = server.query("missing.example.", "A")
    assert missing.rcode() == dns.rcode.NXDOMAIN


def test_external_name_is_chased_upstream(server: DnsProcess, api_url: str, ns: str) -> None:
    service(api_url, ns, "outside", type="ExternalName", externalName=FakeUpstream.NAME.rstrip("."))
    assert answered(server, f"outside.{ns}.svc.{ZONE}", "CNAME") == [FakeUpstream.NAME]
    assert values(server.query(f"outside.{ns}.svc.{ZONE}", "A")) == [FakeUpstream.IP]


def test_records_follow_changes(server: DnsProcess, api_url: str, ns: str) -> None:
    service(api_url, ns, "moving", type="ExternalName", externalName="old.example.org")
    assert answered(server, f"moving.{ns}.svc.{ZONE}", "CNAME") == ["old.example.org."]
    resp = httpx.patch(f"{api_url}/api/v1/namespaces/{ns}/services/moving",
                       json={"spec": {"externalName": "new.example.org"}},
                       headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 200, resp.text
    answered(server, f"moving.{ns}.svc.{ZONE}", "CNAME", ["new.example.org."])
    assert httpx.delete(f"{api_url}/api/v1/namespaces/{ns}/services/moving").status_code == 200
    wait_for(lambda: server.query(f"moving.{ns}.svc.{ZONE}", "A").rcode() == dns.rcode.NXDOMAIN, timeout=10,
             what="the deleted Service's name to be gone")


def test_kube_dns_service_points_at_the_server(server: DnsProcess, api_url: str) -> None:
    svc = httpx.get(f"{api_url}/api/v1/namespaces/kube-system/services/kube-dns").json()
    assert svc["spec"]["clusterIP"] == "10.96.0.10" and svc["metadata"]["labels"]["k8s-app"] == "kube-dns"
    assert [(p["name"], p["port"], p["protocol"]) for p in svc["spec"]["ports"]] == \
        [("dns", 53, "UDP"), ("dns-tcp", 53, "TCP"), ("metrics", 9153, "TCP")]
    path = f"{api_url}/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices/kube-dns"

    def points_at_server() -> bool:
        resp = httpx.get(path)
        if resp.status_code != 200:
            return False
        eps = resp.json()
        return (eps["endpoints"][0]["addresses"] == [server.address]
                and {p["port"] for p in eps["ports"]} == {server.port})
    wait_for(points_at_server, timeout=10, what="kube-dns's EndpointSlice")
    assert httpx.delete(path).status_code == 200
    wait_for(points_at_server, timeout=10, what="kube-dns's EndpointSlice to be re-created")
    assert values(server.query(f"kube-dns.kube-system.svc.{ZONE}", "A")) == ["10.96.0.10"]


def test_before_its_first_list_a_missing_cluster_name_is_a_server_failure(tmp_path: Path) -> None:
    """A DNS server whose apiserver is not there yet (nothing listens at its address) has synced nothing: a cluster
    name is SERVFAIL, which resolvers retry, not a NXDOMAIN they would cache, as CoreDNS answers before it synced;
    names outside the zone are still forwarded (here: to nobody, SERVFAIL too)."""
    proc = DnsProcess(f"http://127.0.0.1:{free_port()}", tmp_path / "dns.log", loopback_address())
    try:
        wait_for(lambda: "list failed" in proc.log(), what="the informers to try their first list")
        reply = proc.query(f"kubernetes.default.svc.{ZONE}", "A")
        assert reply.rcode() == dns.rcode.SERVFAIL and not reply.answer
        assert httpx.get(f"http://127.0.0.1:{proc.health_port}/readyz").status_code == 503
    finally:
        assert proc.stop() == 0, proc.log()


def test_the_launcher_runs_it_as_system_coredns(tmp_path: Path) -> None:
    """Under ``kubelab.Cluster`` (the launcher's engine: RBAC on, each component its own certificate) the server
    runs as ``system:coredns`` with kubeadm's roles, publishes kube-dns and answers for ``default/kubernetes``.
    A cluster of its own rather than ``kubelab_clusters``': no other test has this shape, and a shared one would
    hold its processes until the end of the session."""
    with kubelab.Cluster(nodes=0, components=["apiserver", "dns"], data_dir=tmp_path / "cluster") as cluster:
        path = f"{cluster.api_url}/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices/kube-dns"
        eps = wait_for(lambda: httpx.get(path).json() if httpx.get(path).status_code == 200 else None,
                       what="kube-dns's EndpointSlice")
        port = eps["ports"][0]["port"]
        query = dns.message.make_query(f"kubernetes.default.svc.{ZONE}", "A")
        reply = wait_for(lambda: values(dns.query.udp(query, "127.0.0.1", port=port, timeout=5)),
                         what="the kubernetes Service's A record")
        assert reply == ["10.96.0.1"]
        cert = x509.load_pem_x509_certificate((tmp_path / "cluster" / "pki" / "clients" / "dns.crt").read_bytes())
        assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:coredns"
