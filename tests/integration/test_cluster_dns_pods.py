"""Pods meet the cluster DNS: a kubelet on the linux runtime told ``--cluster-dns <the server>`` writes each pod's
resolv.conf by its ``dnsPolicy`` (and ``dnsConfig``), and a busybox pod with ``hostNetwork: true`` and
``dnsPolicy: ClusterFirstWithHostNet`` resolves ``web.<ns>.svc.cluster.local`` with ``nslookup`` through
``kubelab dns`` on 127.0.0.x:53 (a hostNetwork pod shares the host's loopback; other pods will reach the server
through the kube-dns ClusterIP once kube-proxy routes it). Skipped, with the reason, where the linux runtime cannot
run or port 53 cannot be bound (not root)."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from conftest import Kubectl
from kubelet.runtime.linux import unavailable
from support.clusterdns import DnsProcess, FakeUpstream, loopback_address
from support.kubelet import Node, phase, running_node
from support.wait import wait_for

HOST_RESOLV = "nameserver 192.0.2.53\nsearch corp.example\noptions edns0\n"


@pytest.fixture(scope="module")
def dns_server(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DnsProcess]:
    address = loopback_address()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind((address, 53))
    except OSError as err:
        pytest.skip(f"cannot bind {address}:53 for busybox's nslookup: {err}")
    upstream = FakeUpstream()
    proc = DnsProcess(api_url, tmp_path_factory.mktemp("dns") / "dns.log", address, "--forward",
                      f"{upstream.address}:{upstream.port}", "--publish-service", "false", port=53)
    try:
        proc.wait_ready()
        yield proc
    finally:
        assert proc.stop() == 0, proc.log()
        upstream.close()


@pytest.fixture(scope="module")
def node(api_url: str, dns_server: DnsProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    root = tmp_path_factory.mktemp("dns-kubelet")
    why = unavailable(root / "probe")
    if why is not None:
        pytest.skip(f"this host cannot run Linux containers: {why}")
    (root / "host-resolv.conf").write_text(HOST_RESOLV)
    flags = ["--cluster-dns", dns_server.address, "--cluster-domain", "cluster.local",
             "--resolv-conf", str(root / "host-resolv.conf")]
    with running_node(api_url, f"dns-{uuid.uuid4().hex[:10]}", root, runtime="linux", flags=flags) as node:
        yield node


def run_pod(api_url: str, ns: str, node: Node, name: str, **spec: Any) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"nodeName": node.name, "terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}], **spec}}
    resp = httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body)
    assert resp.status_code == 201, resp.text
    wait_for(lambda: phase(api_url, ns, name) == "Running", what=f"{name} Running")


def resolv_conf(kubectl: Kubectl, ns: str, pod: str) -> str:
    return kubectl("exec", "-n", ns, pod, "--", "cat", "/etc/resolv.conf").stdout


def test_nslookup_in_a_host_network_pod(kubectl: Kubectl, api_url: str, ns: str, node: Node,
                                        dns_server: DnsProcess) -> None:
    resp = httpx.post(f"{api_url}/api/v1/namespaces/{ns}/services",
                      json={"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
    assert resp.status_code == 201, resp.text
    cluster_ip = resp.json()["spec"]["clusterIP"]
    run_pod(api_url, ns, node, "lookup", hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet",
            hostAliases=[{"ip": "10.1.2.3", "hostnames": ["legacy.db"]}])
    assert resolv_conf(kubectl, ns, "lookup") == (
        f"search {ns}.svc.cluster.local svc.cluster.local cluster.local corp.example\n"
        f"nameserver {dns_server.address}\noptions ndots:5\n")
    out = kubectl("exec", "-n", ns, "lookup", "--", "nslookup", f"web.{ns}.svc.cluster.local").stdout
    assert f"Address: {cluster_ip}" in out or f"Address 1: {cluster_ip}" in out, out
    hosts = kubectl("exec", "-n", ns, "lookup", "--", "cat", "/etc/hosts").stdout
    assert hosts.endswith("# Entries added by HostAliases.\n10.1.2.3\tlegacy.db\n"), hosts


def test_resolv_conf_by_dns_policy(kubectl: Kubectl, api_url: str, ns: str, node: Node,
                                   dns_server: DnsProcess) -> None:
    run_pod(api_url, ns, node, "first")
    assert resolv_conf(kubectl, ns, "first") == (
        f"search {ns}.svc.cluster.local svc.cluster.local cluster.local corp.example\n"
        f"nameserver {dns_server.address}\noptions ndots:5\n")
    run_pod(api_url, ns, node, "default", dnsPolicy="Default")
    assert resolv_conf(kubectl, ns, "default") == "search corp.example\nnameserver 192.0.2.53\noptions edns0\n"
    run_pod(api_url, ns, node, "hostnet", hostNetwork=True)  # ClusterFirst on the host network: Default
    assert resolv_conf(kubectl, ns, "hostnet") == "search corp.example\nnameserver 192.0.2.53\noptions edns0\n"
    run_pod(api_url, ns, node, "none", dnsPolicy="None", dnsConfig={
        "nameservers": ["1.2.3.4"], "searches": ["ns1.svc.cluster-domain.example", "my.dns.search.suffix"],
        "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]})
    assert resolv_conf(kubectl, ns, "none") == ("search ns1.svc.cluster-domain.example my.dns.search.suffix\n"
                                                "nameserver 1.2.3.4\noptions ndots:2 edns0\n")


def test_cut_nameservers_are_an_event(api_url: str, ns: str, node: Node) -> None:
    run_pod(api_url, ns, node, "many", dnsConfig={"nameservers": ["1.1.1.1", "2.2.2.2", "3.3.3.3"]})

    def warning() -> str:
        events = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/events",
                           params={"fieldSelector": "involvedObject.name=many"}).json()["items"]
        return next((e["message"] for e in events if e["reason"] == "DNSConfigForming"), "")
    message = wait_for(warning, what="the DNSConfigForming event")
    assert message.startswith("Nameserver limits were exceeded, some nameservers have been omitted, the applied "
                              "nameserver line is: ") and message.endswith(" 1.1.1.1 2.2.2.2")

