"""`kubelab up` with its defaults, as a new user runs it on a Linux host as root: ``--runtime auto`` becomes the
linux runtime and ``--pod-network auto`` the bridge network with kube-proxy. A real ``kubelab up --detach --nodes 2``
(free ports, its own data dir): ``kubelab status`` names the runtime, why, and the pod network; the Nodes say
``linux://…``; busybox pods on node01 and node02 reach each other by pod IP; a Service over them answers from both
through its ClusterIP; `kubelab down` leaves no cluster network behind. Skipped, with the reason, where the host
cannot run Linux containers on the bridge (there the defaults are the process runtime on the host network)."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import KUBECTL, Kubectl
from kubelab.etcd import free_port
from kubelab.runtimechoice import choose
from kubelet.network import default_name, name_exists
from support.launcher import kubelab
from support.wait import wait_for

SERVE = "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Kubectl, str]]:
    """(data dir, kubectl on the cluster's plain port, what `kubelab up` printed)."""
    root = tmp_path_factory.mktemp("defaults")
    chosen = choose("auto", "auto", root / "probe")
    if (chosen.runtime, chosen.pod_network) != ("linux", "bridge"):
        pytest.skip(f"the defaults here are {chosen.runtime} on the {chosen.pod_network} network: {chosen.why}")
    data_dir = root / "data"
    for _ in range(3):  # another cluster on this machine may take a port between `up` choosing and binding it
        port = free_port()
        up = kubelab("up", "--detach", "--data-dir", str(data_dir), "--port", str(port), "--nodes", "2", timeout=240)
        if up.returncode == 0 or "address already in use" not in up.stdout + up.stderr:
            break
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        (root / "home").mkdir()
        yield data_dir, Kubectl(KUBECTL, f"http://127.0.0.1:{port}", root / "home"), up.stdout
    finally:
        down = kubelab("down", "--data-dir", str(data_dir), timeout=120)
        assert down.returncode == 0, down.stdout + down.stderr
        assert not name_exists(default_name(data_dir)), "kubelab down left the cluster network"


def test_status_names_the_runtime_and_the_pod_network(cluster: tuple[Path, Kubectl, str]) -> None:
    data_dir, kubectl, printed = cluster
    assert ("runtime: linux (auto: root, namespaces, pivot_root and a static busybox; bridge pod network: root, nft "
            "and network namespaces), pod network: bridge") in printed
    status = kubelab("status", "--data-dir", str(data_dir)).stdout
    assert "runtime: linux (auto:" in status and "pod network: bridge" in status
    wait_for(lambda: "node01 linux://" in (s := kubelab("status", "--data-dir", str(data_dir)).stdout)
             and "node02 linux://" in s, timeout=60, what="both nodes' runtime in kubelab status")
    versions = kubectl("get", "nodes", "-o", "jsonpath={.items[*].status.nodeInfo.containerRuntimeVersion}").stdout
    assert versions.split() == ["linux://0.1.0", "linux://0.1.0"]
    assert "proxy" in status and "ok" in status.split("proxy", 1)[1].splitlines()[0]


def _pod(kubectl: Kubectl, name: str, node: str) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", SERVE]}]}}
    kubectl("apply", "-f", "-", input=json.dumps(body))


def _wget(kubectl: Kubectl, pod: str, url: str) -> str:
    return kubectl("exec", pod, "--", "sh", "-c", f"timeout 3 wget -qO- {url} || echo failed",
                   check=False).stdout.strip()


def test_pods_on_two_nodes_reach_each_other_and_a_service_answers(cluster: tuple[Path, Kubectl, str]) -> None:
    _, kubectl, _ = cluster
    _pod(kubectl, "a", "node01")
    _pod(kubectl, "b", "node02")
    kubectl("wait", "--for=condition=Ready", "pod/a", "pod/b", "--timeout=120s", timeout=150)
    ips = dict(line.split() for line in kubectl(
        "get", "pods", "-o", "jsonpath={range .items[*]}{.metadata.name} {.status.podIP}{\"\\n\"}{end}"
    ).stdout.splitlines())
    assert all(ipaddress.ip_address(ips[p]) in ipaddress.ip_network("10.244.0.0/16") for p in "ab")
    assert _wget(kubectl, "a", f"http://{ips['b']}:8080/") == "b"
    assert _wget(kubectl, "b", f"http://{ips['a']}:8080/") == "a"
    kubectl("expose", "pod", "a", "--name", "web", "--port", "80", "--target-port", "8080", "--selector", "app=web")
    cluster_ip = kubectl("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}").stdout
    assert ipaddress.ip_address(cluster_ip) in ipaddress.ip_network("10.96.0.0/12")
    url = f"http://{cluster_ip}/"
    wait_for(lambda: _wget(kubectl, "a", url) in ("a", "b"), what="the Service's ClusterIP to answer")
    assert {_wget(kubectl, "a", url) for _ in range(12)} == {"a", "b"}
