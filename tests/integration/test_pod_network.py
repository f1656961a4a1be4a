"""Pod IPs with real processes: a controller-manager whose node IPAM controller gives each Node a podCIDR, a
scheduler, two kubelets. A tutorial's nginx Deployment (``containerPort: 80``, ``readinessProbe: httpGet port 80``)
becomes Ready; its pods have distinct IPs inside their node's podCIDR (``kubectl get pods -o wide``, the nodes'
``spec.podCIDR`` through jsonpath), each answers ``http://<podIP>:80/``, the Service's Endpoints list both; a
kubelet killed and restarted adopts its pod with the same IP; a deleted pod's IP is released and not reused at
once."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import Kubectl
from kubelab.etcd import free_port
from support.controllers import ControllerManager
from support.process import ComponentProcess
from support.scheduler import SchedulerProcess
from support.wait import wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="nginx's port 80 needs root (CI runs as root)")


class Kubelet:
    """A kubelet process with its own root dir, restartable on it (SIGKILL leaves its containers running)."""

    def __init__(self, api_url: str, name: str, label: str, root: Path) -> None:
        self.api_url = api_url
        self.args = ["--node-name", name, "--port", str(free_port()), "--root-dir", str(root / "root"),
                     "--node-labels", f"podnet={label}", "--node-lease-renew-interval", "1", "--runtime", "process"]
        self.log = root / "kubelet.log"
        self.proc = self._start()

    def _start(self) -> ComponentProcess:
        return ComponentProcess("kubelet", self.api_url, self.log, *self.args)

    def kill_and_restart(self) -> None:
        self.proc.kill()
        self.proc = self._start()

    def stop(self) -> None:
        self.proc.stop()


@pytest.fixture(scope="module")
def cluster(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Kubelet]]]:
    """A controller-manager (node IPAM, Deployments, ReplicaSets, Endpoints), a scheduler and two kubelets whose
    nodes carry a label unique to this module (other modules' nodes may linger in the shared apiserver)."""
    root = tmp_path_factory.mktemp("podnet")
    label = root.name.replace("_", "-").lower()
    cm = ControllerManager(api_url, root / "controller-manager.log", "--leader-elect=false",
                           "--controllers=nodeipam,deployment,replicaset,endpoint")
    scheduler = SchedulerProcess(api_url, root / "scheduler.log", "--leader-elect=false")
    kubelets = []
    for i in range(2):
        (root / f"k{i}").mkdir()
        kubelets.append(Kubelet(api_url, f"{label}-node{i}", label, root / f"k{i}"))
    try:
        yield label, kubelets
    finally:
        for kubelet in kubelets:
            kubelet.stop()
        scheduler.stop()
        cm.stop()


def deployment(label: str) -> dict[str, Any]:
    container = {"name": "nginx", "image": "nginx:1.25", "ports": [{"containerPort": 80}],
                 "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 1}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nginx"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "nginx"}},
                     "template": {"metadata": {"labels": {"app": "nginx"}},
                                  "spec": {"nodeSelector": {"podnet": label}, "terminationGracePeriodSeconds": 1,
                                           "containers": [container]}}}}


def ready_pods(client: httpx.Client, ns: str) -> list[dict[str, Any]]:
    items = client.get(f"/api/v1/namespaces/{ns}/pods", params={"labelSelector": "app=nginx"}).json()["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp") and any(
        c["type"] == "Ready" and c["status"] == "True" for c in p.get("status", {}).get("conditions") or [])]


def node_cidrs(kubectl: Kubectl, label: str) -> dict[str, str]:
    names = kubectl("get", "nodes", "-l", f"podnet={label}", "-o", "jsonpath={.items[*].metadata.name}").stdout
    cidrs = kubectl("get", "nodes", "-l", f"podnet={label}", "-o", "jsonpath={.items[*].spec.podCIDR}").stdout
    return dict(zip(names.split(), cidrs.split(), strict=False))


def test_nginx_deployment_pods_have_their_own_ips(client: httpx.Client, kubectl: Kubectl, ns: str,
                                                  cluster: tuple[str, list[Kubelet]]) -> None:
    label, kubelets = cluster
    cidrs = wait_for(lambda: (c := node_cidrs(kubectl, label)) and len(c) == 2 and c, what="both podCIDRs")
    assert len(set(cidrs.values())) == 2
    assert all(ipaddress.ip_network(c).subnet_of(ipaddress.ip_network("127.16.0.0/12")) for c in cidrs.values())
    assert client.post(f"/apis/apps/v1/namespaces/{ns}/deployments", json=deployment(label)).status_code == 201
    client.post(f"/api/v1/namespaces/{ns}/services", json={"metadata": {"name": "nginx"}, "spec": {
        "selector": {"app": "nginx"}, "ports": [{"port": 80, "targetPort": 80}]}})
    pods = wait_for(lambda: p if len(p := ready_pods(client, ns)) == 2 else None, what="2 Ready nginx pods")
    wide = kubectl("get", "pods", "-n", ns, "-o", "wide").stdout.splitlines()
    at = {name: wide[0].index(name) for name in ("NAME", "IP", "NODE", "NOMINATED")}  # columns by position
    rows = [{"NAME": line[:at["IP"]].split()[0], "IP": line[at["IP"]:at["NODE"]].strip(),
             "NODE": line[at["NODE"]:at["NOMINATED"]].strip()} for line in wide[1:]]
    ips = {r["NAME"]: r["IP"] for r in rows}
    assert len(set(ips.values())) == 2
    for row in rows:
        assert ipaddress.ip_address(row["IP"]) in ipaddress.ip_network(cidrs[row["NODE"]])
        assert httpx.get(f"http://{row['IP']}:80/", timeout=5).status_code == 200
    for pod in pods:
        assert pod["status"]["podIPs"] == [{"ip": ips[pod["metadata"]["name"]]}]
        assert pod["status"]["hostIP"] != pod["status"]["podIP"]
    addresses = wait_for(lambda: sorted(a["ip"] for s in client.get(f"/api/v1/namespaces/{ns}/endpoints/nginx")
                                        .json().get("subsets") or [] for a in s.get("addresses") or []) or None,
                         what="Endpoints")
    assert addresses == sorted(ips.values()) and len(set(addresses)) == 2
    name = rows[0]["NAME"]
    assert "Serving HTTP on " + ips[name] + " port 80" in kubectl("logs", name, "-n", ns).stdout


def test_restarted_kubelet_keeps_the_pod_ip_and_deleted_pods_release_it(
        client: httpx.Client, kubectl: Kubectl, ns: str, cluster: tuple[str, list[Kubelet]]) -> None:
    label, kubelets = cluster
    node = f"{label}-node0"
    pod = {"metadata": {"name": "web"}, "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                                                 "containers": [{"name": "nginx", "image": "nginx"}]}}
    client.post(f"/api/v1/namespaces/{ns}/pods", json=pod)

    def ip() -> str:
        return str(client.get(f"/api/v1/namespaces/{ns}/pods/web").json().get("status", {}).get("podIP", ""))

    def serves(address: str) -> bool:
        try:
            return httpx.get(f"http://{address}/", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    first = wait_for(lambda: (a := ip()) and serves(a) and a, what="web serving on its pod IP")
    kubelets[0].kill_and_restart()
    wait_for(lambda: "containers from before the restart" in kubelets[0].log.read_text(),
             what="the restarted kubelet to find its container")
    wait_for(lambda: serves(first), what="web still serving")
    assert ip() == first
    pod_env = {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    client.delete(f"/api/v1/namespaces/{ns}/pods/web")
    wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/web").status_code == 404, what="web gone")
    again = {"metadata": {"name": "env"}, "spec": {"nodeName": node, "restartPolicy": "Never", "containers": [
        {"name": "c", "image": "busybox", "command": ["sh", "-c", "echo $MY_IP"], "env": [pod_env]}]}}
    client.post(f"/api/v1/namespaces/{ns}/pods", json=again)
    wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/env").json().get("status", {}).get("phase")
             == "Succeeded", what="env pod done")
    new_ip = client.get(f"/api/v1/namespaces/{ns}/pods/env").json()["status"]["podIP"]
    assert new_ip != first  # round-robin: a released IP is not handed out at once
    assert kubectl("logs", "env", "-n", ns).stdout == f"{new_ip}\n"
