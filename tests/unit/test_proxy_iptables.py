"""kube-proxy's iptables mode without iptables: the chains and rules, what a partial sync rewrites, what a full
sync cleans up, and how ``--proxy-mode auto`` chooses."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from proxy import iptables, mode
from proxy.iptables import Renderer, Saved, endpoint_chain, external_chain, service_chain
from proxy.model import Endpoint, ServicePort
from proxy.proxier import Run

CIDR = "10.244.0.0/16"


def _port(*ips: str, name: str = "web", affinity: int = 0, node_port: int = 30080) -> ServicePort:
    return ServicePort("ns", name, "http", "TCP", ("10.96.0.5",), 80, node_port, affinity,
                       tuple(Endpoint(ip, 8080) for ip in ips))


def _rules(script: str, chain: str) -> list[str]:
    return [line.removeprefix(f"-A {chain} ") for line in script.splitlines() if line.startswith(f"-A {chain} ")]


def test_chain_names_are_kube_proxys_hashes() -> None:
    """kube-proxy's own names for ``ns/web:http`` tcp and its endpoint (the hash of the ServicePortName's string
    and the protocol): a user comparing with a real cluster's ``iptables-save`` finds the same shape."""
    sp = _port("10.244.0.2")
    assert service_chain(sp).startswith("KUBE-SVC-") and len(service_chain(sp)) == len("KUBE-SVC-") + 16
    assert external_chain(sp)[len("KUBE-EXT-"):] == service_chain(sp)[len("KUBE-SVC-"):]
    assert endpoint_chain(sp, sp.endpoints[0]) != endpoint_chain(sp, Endpoint("10.244.0.3", 8080))
    assert iptables.port_name(sp) == "ns/web:http"
    assert iptables.port_name(ServicePort("ns", "db", "", "TCP", ("10.96.0.9",), 5432)) == "ns/db"


def test_three_endpoints_are_chosen_with_equal_chances() -> None:
    sp = _port("10.244.0.2", "10.244.1.2", "10.244.2.2")
    script = Renderer(CIDR).sync({sp.key: sp}, ["172.18.0.2"], Saved())
    svc = _rules(script, service_chain(sp))
    assert svc[0] == ('-m comment --comment "ns/web:http cluster IP" -m tcp -p tcp -d 10.96.0.5/32 --dport 80 '
                      f"! -s {CIDR} -j KUBE-MARK-MASQ")
    assert "--probability 0.3333333333 " in svc[1] and "--probability 0.5000000000 " in svc[2]
    assert "statistic" not in svc[3] and svc[3].endswith(f"-j {endpoint_chain(sp, sp.endpoints[2])}")
    sep = _rules(script, endpoint_chain(sp, sp.endpoints[1]))
    assert sep == ["-m comment --comment ns/web:http -s 10.244.1.2/32 -j KUBE-MARK-MASQ",
                   "-m comment --comment ns/web:http -m tcp -p tcp -j DNAT --to-destination 10.244.1.2:8080"]
    assert ('-m comment --comment "ns/web:http cluster IP" -m tcp -p tcp -d 10.96.0.5/32 --dport 80 '
            f"-j {service_chain(sp)}") in _rules(script, "KUBE-SERVICES")


def test_a_node_port_goes_through_its_external_chain_on_node_ips_only() -> None:
    sp = _port("10.244.0.2")
    script = Renderer(CIDR).sync({sp.key: sp}, ["172.18.0.3", "172.18.0.2"], Saved())
    assert _rules(script, "KUBE-NODEPORTS") == [
        f"-m comment --comment ns/web:http -m tcp -p tcp --dport 30080 -j {external_chain(sp)}"]
    assert _rules(script, external_chain(sp))[-1] == f"-j {service_chain(sp)}"
    assert "KUBE-MARK-MASQ" in _rules(script, external_chain(sp))[0]
    nodeports = [r for r in _rules(script, "KUBE-SERVICES") if r.endswith("-j KUBE-NODEPORTS")]
    assert [r.split(" -d ")[1] for r in nodeports] == ["172.18.0.2/32 -j KUBE-NODEPORTS",
                                                        "172.18.0.3/32 -j KUBE-NODEPORTS"]
    assert _rules(script, "KUBE-SERVICES")[-1].endswith("-j KUBE-NODEPORTS")  # must be the last rule


def test_client_ip_affinity_uses_recent_lists_per_endpoint() -> None:
    sp = _port("10.244.0.2", "10.244.1.2", affinity=300)
    script = Renderer(CIDR).sync({sp.key: sp}, [], Saved())
    sep = endpoint_chain(sp, sp.endpoints[0])
    svc = _rules(script, service_chain(sp))
    assert f"-m recent --name {sep} --rcheck --seconds 300 --reap -j {sep}" in svc[1]
    assert f"-m recent --name {sep} --set -m tcp -p tcp -j DNAT" in _rules(script, sep)[1]


def test_a_service_without_endpoints_is_rejected_in_the_filter_table() -> None:
    sp = _port()
    script = Renderer(CIDR).sync({sp.key: sp}, [], Saved())
    filter_part, nat_part = script.split("*nat")
    assert ('-A KUBE-SERVICES -m comment --comment "ns/web:http has no endpoints" -m tcp -p tcp -d 10.96.0.5/32 '
            "--dport 80 -j REJECT") in filter_part
    assert "--dport 30080 -j REJECT" in filter_part and "KUBE-SVC-" not in nat_part


def test_the_first_sync_adds_missing_jumps_and_deletes_stale_chains() -> None:
    saved = Saved.parse("*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-OLDOLDOLDOLDOLDO - [0:0]\n"
                        ":KUBE-MARK-DROP - [0:0]\n"
                        '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\nCOMMIT\n')
    script = Renderer(CIDR).sync({}, [], saved)
    assert '-I PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES' not in script
    assert '-I OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES' in script
    assert '-I POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING' in script
    assert ":KUBE-SVC-OLDOLDOLDOLDOLDO - [0:0]" in script and script.rstrip().endswith(
        "-X KUBE-SVC-OLDOLDOLDOLDOLDO\nCOMMIT")
    assert "KUBE-MARK-DROP" not in script  # not a chain of ours to delete


def test_a_partial_sync_rewrites_only_the_changed_service() -> None:
    renderer = Renderer(CIDR)
    web, db = _port("10.244.0.2", "10.244.1.2"), _port("10.244.0.7", name="db", node_port=0)
    renderer.sync({web.key: web, db.key: db}, [], Saved())
    renderer.applied()
    assert renderer.sync({web.key: web, db.key: db}, []) == ""  # nothing changed: nothing to restore
    smaller = _port("10.244.0.2")
    script = renderer.sync({smaller.key: smaller, db.key: db}, [])
    assert f":{service_chain(db)}" not in script and f"-j {service_chain(db)}" in script  # kept, still jumped to
    gone = endpoint_chain(web, web.endpoints[1])
    assert f":{gone} - [0:0]" in script and f"-X {gone}" in script
    assert f":{service_chain(web)} - [0:0]" in script and "-I " not in script
    renderer.applied()
    script = renderer.sync({db.key: db}, [])
    assert {f"-X {service_chain(web)}", f"-X {external_chain(web)}",
            f"-X {endpoint_chain(web, web.endpoints[0])}"} <= set(script.splitlines())


def test_a_failed_sync_makes_the_next_one_full() -> None:
    renderer = Renderer(CIDR)
    sp = _port("10.244.0.2")
    renderer.sync({sp.key: sp}, [], Saved())
    renderer.applied()
    renderer.sync({}, [])
    renderer.failed()
    script = renderer.sync({sp.key: sp}, [], Saved())  # unchanged since the last applied sync, yet rewritten
    assert f":{service_chain(sp)} - [0:0]" in script and "-I PREROUTING" in script


def test_cleanup_removes_only_kube_chains_and_jumps() -> None:
    saved = Saved.parse("*nat\n:POSTROUTING ACCEPT [0:0]\n:KUBE-POSTROUTING - [0:0]\n:OTHER - [0:0]\n"
                        '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING\n'
                        "COMMIT\n")
    assert iptables.cleanup(saved).splitlines() == [
        "*nat", ":KUBE-POSTROUTING - [0:0]",
        '-D POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
        "-X KUBE-POSTROUTING", "COMMIT"]
    assert iptables.cleanup(Saved()) == ""


def _runner(fails: Sequence[str]) -> Run:
    def run(argv: Sequence[str], stdin: str) -> str:
        if argv[0] in fails:
            raise RuntimeError(f"{argv[0]}: Operation not supported")
        return ""
    return run


def test_auto_mode_prefers_nftables_then_iptables_and_userspace_without_a_network(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert mode.resolve("auto", "", None)[0] == "userspace"
    assert mode.resolve("auto", "kubelab-x", _runner([]))[0] == "nftables"
    monkeypatch.setattr(mode, "find", lambda name: f"/usr/sbin/{name}")
    chosen, why = mode.resolve("auto", "kubelab-x", _runner(["nft"]))
    assert chosen == "iptables" and "Operation not supported" in why
    monkeypatch.setattr(mode, "find", lambda name: None)
    with pytest.raises(RuntimeError, match="neither nft"):
        mode.resolve("auto", "kubelab-x", _runner(["nft"]))
    assert mode.resolve("iptables", "", None)[0] == "iptables"
