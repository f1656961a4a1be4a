"""kube-proxy's model and nft transactions without nft: which endpoints count, what a sync changes."""

from __future__ import annotations

from typing import Any

from proxy.model import Endpoint, ServicePort, service_ports
from proxy.nftables import Renderer, endpoint_chain, service_chain


def _service(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "ns"},
            "spec": {"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"],
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080}], **spec}}


def _slice(*endpoints: tuple[str, bool], port: int = 8080) -> dict[str, Any]:
    return {"metadata": {"name": "web-abc", "namespace": "ns", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4", "ports": [{"name": "http", "port": port, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": {"ready": ready}} for ip, ready in endpoints]}


def test_only_ready_endpoints_of_the_matching_port_count() -> None:
    [sp] = service_ports(_service(), [_slice(("10.244.0.2", True), ("10.244.1.2", False))])
    assert sp.key == "ns/web/tcp/http" and sp.node_port == 30080
    assert sp.endpoints == (Endpoint("10.244.0.2", 8080),)


def test_headless_and_external_name_services_get_no_rules() -> None:
    assert service_ports(_service(clusterIP="None", clusterIPs=["None"]), [_slice(("10.244.0.2", True))]) == []
    assert service_ports(_service(type="ExternalName", externalName="example.com"), []) == []


def test_client_ip_affinity_takes_its_timeout() -> None:
    [sp] = service_ports(_service(sessionAffinity="ClientIP",
                                  sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}}), [])
    assert sp.affinity_seconds == 60


def _port(*ips: str, affinity: int = 0) -> ServicePort:
    return ServicePort("ns", "web", "http", "TCP", ("10.96.0.5",), 80, 30080, affinity,
                       tuple(Endpoint(ip, 8080) for ip in ips))


def test_the_first_sync_replaces_the_table_and_balances_over_the_endpoints() -> None:
    renderer = Renderer("10.244.0.0/16")
    sp = _port("10.244.0.2", "10.244.1.2")
    script = renderer.sync({sp.key: sp}, ["172.18.0.2"])
    assert script.startswith("add table ip kube-proxy\ndelete table ip kube-proxy\n")
    assert f"numgen random mod 2 vmap {{ 0 : goto {endpoint_chain(sp, sp.endpoints[0])}" in script
    assert "meta l4proto tcp dnat to 10.244.1.2:8080" in script
    assert f"10.96.0.5 . tcp . 80 : goto {service_chain(sp)}" in script
    assert "add element ip kube-proxy nodeport-ips { 172.18.0.2 }" in script
    renderer.applied()
    assert renderer.sync({sp.key: sp}, ["172.18.0.2"]) == ""  # nothing changed: no transaction


def test_a_change_rerenders_only_that_service_and_drops_a_gone_endpoint() -> None:
    renderer = Renderer("10.244.0.0/16")
    web, other = _port("10.244.0.2", "10.244.1.2"), ServicePort("ns", "db", "", "TCP", ("10.96.0.9",), 5432,
                                                                  endpoints=(Endpoint("10.244.0.7", 5432),))
    renderer.sync({web.key: web, other.key: other}, [])
    renderer.applied()
    smaller = _port("10.244.0.2")
    script = renderer.sync({smaller.key: smaller, other.key: other}, [])
    assert "db" not in script and "delete table" not in script
    assert f"delete chain ip kube-proxy {endpoint_chain(web, web.endpoints[1])}" in script
    assert script.index(f"flush chain ip kube-proxy {service_chain(web)}") < \
        script.index(f"delete chain ip kube-proxy {endpoint_chain(web, web.endpoints[1])}")


def test_affinity_sends_a_known_client_to_its_endpoint() -> None:
    renderer = Renderer("10.244.0.0/16")
    sp = _port("10.244.0.2", affinity=300)
    script = renderer.sync({sp.key: sp}, [])
    assert "flags dynamic,timeout ; timeout 300s" in script
    assert "update @affinity-" in script and "ip saddr @affinity-" in script


def test_a_failed_sync_makes_the_next_one_full() -> None:
    renderer = Renderer("10.244.0.0/16")
    sp = _port("10.244.0.2")
    renderer.sync({sp.key: sp}, [])
    renderer.applied()
    renderer.sync({}, [])
    renderer.failed()
    assert renderer.sync({}, []).startswith("add table ip kube-proxy\ndelete table")
