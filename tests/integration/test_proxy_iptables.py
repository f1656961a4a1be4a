"""kube-proxy's iptables mode (``python -m proxy --proxy-mode iptables``) on the linux runtime's pod network: a
Service over three pods on two nodes answers from all three through its ClusterIP (from a pod) and its NodePort
(from the host, at each node's InternalIP); sessionAffinity ClientIP sticks; the cluster network's ``iptables-save``
shows kube-proxy's chains (KUBE-SERVICES → KUBE-SVC-* → ``-m statistic`` → KUBE-SEP-* DNAT); a scaled-down Service
loses its endpoint's chain in an incremental sync. Without a cluster (a namespace of the test's own): what the
renderer writes is what ``iptables-restore --noflush`` takes, sync after sync, and the leftovers' cleanup leaves
nothing. Skipped where the host cannot make namespaces or has no iptables-restore."""

from __future__ import annotations

import ipaddress
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import Kubectl
from kubelet.network import ClusterNetwork
from proxy import iptables
from proxy.model import Endpoint, ServicePort
from proxy.proxier import run_in
from support.kubelet import Node
from support.podnet import SERVE, answers, bridge_nodes, get, internal_ip, make_service, run_pod
from support.process import ComponentProcess
from support.proxy import start_proxy
from support.wait import wait_for

pytestmark = pytest.mark.skipif(shutil.which("iptables-restore") is None,
                                reason="no iptables-restore (Debian: apt-get install iptables)")

WEB = ("web-0", "web-1", "web-2")


@pytest.fixture(scope="module")
def cluster(api_url: str, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[ClusterNetwork, list[Node], ComponentProcess]]:
    root = tmp_path_factory.mktemp("iptables")
    with bridge_nodes(api_url, root) as (network, nodes):
        wait_for(lambda: Path(network.path).exists(), what="the kubelets' cluster network")
        proxy = start_proxy(api_url, root / "proxy.log", "--proxy-mode", "iptables",
                            "--cluster-network", network.name)
        try:
            yield network, nodes, proxy
        finally:
            proxy.stop()


@pytest.fixture(scope="module")
def web(api_url: str, cluster: tuple[ClusterNetwork, list[Node], ComponentProcess], module_ns: str
        ) -> dict[str, Any]:
    """Three pods behind a NodePort Service, on both nodes, and a client pod."""
    _, (one, two), _ = cluster
    for name, node in zip(WEB, (one, two, one), strict=True):
        run_pod(api_url, module_ns, node, name, SERVE, {"app": "web"})
    run_pod(api_url, module_ns, two, "client", "exec sleep 3600")
    return make_service(api_url, module_ns, "web", {"app": "web"}, type="NodePort")


def test_the_proxy_says_which_mode_it_runs(cluster: tuple[ClusterNetwork, list[Node], ComponentProcess]) -> None:
    assert "kube-proxy in mode iptables: --proxy-mode" in cluster[2].log()


def test_a_service_answers_from_all_three_pods_through_its_cluster_ip(kubectl: Kubectl, module_ns: str,
                                                                      web: dict[str, Any]) -> None:
    ip = web["spec"]["clusterIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.96.0.0/12")
    url = f"http://{ip}/"
    wait_for(lambda: len(set(answers(kubectl, module_ns, "client", url, 6)) & set(WEB)) >= 2, what="the ClusterIP")
    assert set(answers(kubectl, module_ns, "client", url, 40)) == set(WEB)


def test_a_service_answers_from_all_three_pods_through_its_node_port(
        api_url: str, cluster: tuple[ClusterNetwork, list[Node], ComponentProcess], web: dict[str, Any]) -> None:
    network, nodes, _ = cluster
    node_port = web["spec"]["ports"][0]["nodePort"]
    for node in nodes:
        url = f"http://{internal_ip(api_url, node.name)}:{node_port}/"
        if not network.host_reaches(url.split("/")[2].split(":")[0]):
            pytest.skip("the host's routes to the cluster network belong to another cluster")
        wait_for(lambda url=url: get(url) in WEB, what=f"NodePort {url}")
        assert {get(url) for _ in range(40)} == set(WEB)


def _nat(network: ClusterNetwork) -> str:
    return run_in(network.path)(["iptables-save", "-t", "nat"], "")


def test_the_rules_are_kube_proxys_chains(cluster: tuple[ClusterNetwork, list[Node], ComponentProcess],
                                          module_ns: str, web: dict[str, Any]) -> None:
    """What ``iptables-save`` in the cluster network shows a user: the Service's KUBE-SVC chain from
    KUBE-SERVICES, random choices over three KUBE-SEP chains that DNAT to the pods."""
    sp = ServicePort(module_ns, "web", "", "TCP", (web["spec"]["clusterIP"],), 80)
    svc = iptables.service_chain(sp)
    saved = wait_for(lambda: s if f"-A {svc} " in (s := _nat(cluster[0])) else None, what=f"{svc}")
    assert f"-j {svc}" in saved and '-A PREROUTING -m comment --comment "kubernetes service portals"' in saved
    rules = [line for line in saved.splitlines() if line.startswith(f"-A {svc} ")]
    assert sum("-m statistic --mode random --probability" in r for r in rules) == 2
    assert sum("-j KUBE-SEP-" in r for r in rules) == 3
    assert saved.count("-j DNAT --to-destination 10.244.") >= 3


def test_session_affinity_client_ip_sticks(api_url: str, kubectl: Kubectl, module_ns: str,
                                           web: dict[str, Any]) -> None:
    svc = make_service(api_url, module_ns, "sticky", {"app": "web"}, sessionAffinity="ClientIP")
    url = f"http://{svc['spec']['clusterIP']}/"
    wait_for(lambda: set(answers(kubectl, module_ns, "client", url, 1)) & set(WEB), what="the sticky Service")
    assert len(set(answers(kubectl, module_ns, "client", url, 20))) == 1


def test_a_deleted_endpoint_loses_its_chain(api_url: str, kubectl: Kubectl, module_ns: str,
                                            cluster: tuple[ClusterNetwork, list[Node], ComponentProcess],
                                            web: dict[str, Any]) -> None:
    pod = httpx.get(f"{api_url}/api/v1/namespaces/{module_ns}/pods/web-2").json()
    sp = ServicePort(module_ns, "web", "", "TCP", (web["spec"]["clusterIP"],), 80)
    gone = iptables.endpoint_chain(sp, Endpoint(pod["status"]["podIP"], 8080))
    assert f":{gone} " in _nat(cluster[0])
    httpx.delete(f"{api_url}/api/v1/namespaces/{module_ns}/pods/web-2")
    wait_for(lambda: f":{gone} " not in _nat(cluster[0]), what=f"{gone} deleted")
    assert set(answers(kubectl, module_ns, "client", f"http://{web['spec']['clusterIP']}/", 20)) <= {"web-0", "web-1"}


@pytest.fixture()
def scratch_netns() -> Iterator[str]:
    """A network namespace of the test's own (``ip netns``), deleted afterwards with its rules."""
    name = f"kubelab-ipt{uuid.uuid4().hex[:6]}"
    if subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode != 0:
        pytest.skip("cannot create a network namespace here")
    try:
        yield f"/run/netns/{name}"
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=True)


def test_iptables_restore_takes_every_sync_and_the_cleanup_leaves_nothing(scratch_netns: str) -> None:
    run = run_in(scratch_netns)

    def port(name: str, *ips: str, affinity: int = 0) -> ServicePort:
        return ServicePort("ns", name, "http", "TCP", ("10.96.0.5",), 80, 30080, affinity,
                           tuple(Endpoint(ip, 8080) for ip in ips))
    renderer = iptables.Renderer("10.244.0.0/16")
    states = [[port("web", "10.244.0.2", "10.244.1.2", affinity=60), port("empty")],
              [port("web", "10.244.0.2"), port("db", "10.244.0.7")],
              [port("db", "10.244.0.7")]]
    for i, ports in enumerate(states):
        saved = iptables.Saved.parse(run(["iptables-save"], "")) if i == 0 else None
        run(["iptables-restore", "--noflush"], renderer.sync({p.key: p for p in ports}, ["172.18.0.2"], saved))
        renderer.applied()
    nat = run(["iptables-save", "-t", "nat"], "")
    chains = {line.split()[0][1:] for line in nat.splitlines() if line.startswith(":KUBE-")}
    assert chains == {"KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ",
                      *renderer.current[port("db").key][1]}
    assert nat.count("-A PREROUTING ") == 1  # the jump rules are added once
    second = iptables.Renderer("10.244.0.0/16")  # a restarted proxy: a full sync over what the first left
    run(["iptables-restore", "--noflush"], second.sync({}, [], iptables.Saved.parse(run(["iptables-save"], ""))))
    assert "KUBE-SVC-" not in run(["iptables-save", "-t", "nat"], "")
    run(["iptables-restore", "--noflush"], iptables.cleanup(iptables.Saved.parse(run(["iptables-save"], ""))))
    assert "KUBE-" not in run(["iptables-save"], "")
