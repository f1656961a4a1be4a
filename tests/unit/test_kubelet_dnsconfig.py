"""The pods' resolv.conf by dnsPolicy (kubelet/dnsconfig.py), as kube's ``pkg/kubelet/network/dns`` forms it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubelet.dnsconfig import ResolverSettings, parse_resolv_conf, pod_dns
from kubelet.runtime.cri import SandboxConfig

HOST = "# host\nnameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch corp.example. lab.example\noptions edns0 ndots:1\n"


@pytest.fixture()
def settings(tmp_path: Path) -> ResolverSettings:
    (tmp_path / "resolv.conf").write_text(HOST)
    return ResolverSettings(("10.96.0.10",), "cluster.local", str(tmp_path / "resolv.conf"))


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "shop", "uid": "u1"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def form(settings: ResolverSettings, p: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    events: list[tuple[str, str]] = []
    text = pod_dns(settings, p, lambda reason, message: events.append((reason, message))).render()
    return text, events


def test_cluster_first(settings: ResolverSettings) -> None:
    text, events = form(settings, pod(dnsPolicy="ClusterFirst"))
    assert text == ("search shop.svc.cluster.local svc.cluster.local cluster.local corp.example lab.example\n"
                    "nameserver 10.96.0.10\noptions ndots:5\n")
    assert events == []


def test_host_network_falls_back_to_default_unless_with_host_net(settings: ResolverSettings) -> None:
    default, _ = form(settings, pod(dnsPolicy="Default"))
    assert default == "search corp.example lab.example\nnameserver 192.0.2.53\nnameserver 192.0.2.54\n" \
                      "options edns0 ndots:1\n"
    assert form(settings, pod(dnsPolicy="ClusterFirst", hostNetwork=True))[0] == default
    with_host_net, _ = form(settings, pod(dnsPolicy="ClusterFirstWithHostNet", hostNetwork=True))
    assert "nameserver 10.96.0.10\n" in with_host_net and "search shop.svc.cluster.local " in with_host_net


def test_none_takes_dns_config_only(settings: ResolverSettings) -> None:
    text, _ = form(settings, pod(dnsPolicy="None", dnsConfig={
        "nameservers": ["1.2.3.4"], "searches": ["ns1.svc.cluster-domain.example"],
        "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]}))
    assert text == "search ns1.svc.cluster-domain.example\nnameserver 1.2.3.4\noptions ndots:2 edns0\n"


def test_dns_config_merges_into_cluster_first(settings: ResolverSettings) -> None:
    text, _ = form(settings, pod(dnsConfig={"nameservers": ["10.96.0.10", "1.1.1.1"], "searches": ["extra.example"],
                                            "options": [{"name": "ndots", "value": "2"}, {"name": "timeout",
                                                                                          "value": "1"}]}))
    config = parse_resolv_conf(text)
    assert config.servers == ["10.96.0.10", "1.1.1.1"]
    assert config.searches[-1] == "extra.example"
    assert config.options == ["ndots:2", "timeout:1"]


def test_limits_are_enforced_with_kubes_events(settings: ResolverSettings) -> None:
    searches = [f"d{i}.example" for i in range(40)]
    text, events = form(settings, pod(dnsPolicy="None", dnsConfig={
        "nameservers": ["1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"], "searches": searches}))
    config = parse_resolv_conf(text)
    assert config.servers == ["1.1.1.1", "2.2.2.2", "3.3.3.3"] and config.searches == searches[:32]
    assert events == [
        ("DNSConfigForming", "Nameserver limits were exceeded, some nameservers have been omitted, the applied "
                             "nameserver line is: 1.1.1.1 2.2.2.2 3.3.3.3"),
        ("DNSConfigForming", "Search Line limits were exceeded, some search paths have been omitted, the applied "
                             f"search line is: {' '.join(searches[:32])}")]
    long = [f"{'x' * 60}-{i}.example" for i in range(31)]
    _, events = form(settings, pod(dnsPolicy="None", dnsConfig={"nameservers": ["1.1.1.1"], "searches": long}))
    assert len(" ".join(long)) > 2048 and len(events) == 1
    assert len(events[0][1].split(": ", 1)[1]) <= 2048


def test_no_cluster_dns_falls_back_with_an_event(settings: ResolverSettings) -> None:
    text, events = form(ResolverSettings((), "cluster.local", settings.resolv_conf), pod())
    assert "nameserver 192.0.2.53" in text
    assert events == [("MissingClusterDNS", 'pod: "web_shop(u1)". kubelet does not have ClusterDNS IP configured and '
                       'cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.')]
    empty, _ = form(ResolverSettings((), "cluster.local", ""), pod(dnsPolicy="Default"))
    assert empty == "search .\nnameserver 127.0.0.1\n"


def test_hosts_file_of_a_host_network_pod_keeps_the_nodes_and_adds_aliases() -> None:
    p = pod(hostNetwork=True, hostAliases=[{"ip": "10.0.0.9", "hostnames": ["db", "db.local"]}])
    config = SandboxConfig.from_pod(p, "127.0.0.1", resolv_conf="nameserver 10.96.0.10\n")
    assert config.hosts.startswith(Path("/etc/hosts").read_text().rstrip("\n"))
    assert config.hosts.endswith("# Entries added by HostAliases.\n10.0.0.9\tdb\tdb.local\n")
    assert config.resolv_conf == "nameserver 10.96.0.10\n"
    sub = SandboxConfig.from_pod(pod(hostname="web-0", subdomain="web"), "10.244.1.5", cluster_domain="k8s.test")
    assert "10.244.1.5\tweb-0.web.shop.svc.k8s.test\tweb-0\n" in sub.hosts
