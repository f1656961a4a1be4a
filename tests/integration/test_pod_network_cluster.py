"""``kubelab up --pod-network bridge`` as a user meets it (``kubelab.Cluster(pod_network="bridge")``: the launcher's
own code): linux kubelets on the cluster network, kube-proxy started and healthy with the rest; a pod's
``KUBERNETES_SERVICE_HOST`` is the ``kubernetes`` Service's ClusterIP 10.96.0.1, through which a Python client in
the pod verifies the apiserver's certificate and reads ``/version`` with its service account token; every Service
of the pod's namespace is in its environment (``enableServiceLinks``; none with ``false``); stopping the cluster
leaves no namespace, host link, veth, nft table or state file behind. Skipped where the host cannot build it."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyroute2 import IPRoute

import kubelab
from conftest import KUBECTL, Kubectl
from kubelet.network import STATE_DIR, ClusterNetwork, default_name, name_exists, usable
from kubelet.runtime.linux import unavailable
from support.wait import wait_for

IN_CLUSTER = """
import os, ssl, urllib.request
host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
request = urllib.request.Request(f"https://{host}:{port}/version",
                                 headers={"Authorization": "Bearer " + open(sa + "token").read()})
body = urllib.request.urlopen(request, context=ssl.create_default_context(cafile=sa + "ca.crt")).read()
print(host, port, body.decode())
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[kubelab.Cluster, ClusterNetwork]]:
    root = tmp_path_factory.mktemp("bridge-cluster")
    why = unavailable(root / "probe") or usable()
    if why is not None:
        pytest.skip(f"this host cannot build a pod network: {why}")
    data_dir = root / f"data-{uuid.uuid4().hex[:6]}"
    network = ClusterNetwork(default_name(data_dir))
    running = kubelab.Cluster(nodes=2, data_dir=data_dir, pod_network="bridge")
    try:
        running.start()
        yield running, network
    finally:
        running.stop()


@pytest.fixture()
def kube(cluster: tuple[kubelab.Cluster, ClusterNetwork], tmp_path: Path) -> Kubectl:
    return Kubectl(KUBECTL, cluster[0].api_url, tmp_path)


def _pod(kube: Kubectl, ns: str, name: str, image: str, command: list[str], **spec: Any) -> None:
    kube("create", "namespace", ns, check=False)
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"terminationGracePeriodSeconds": 0, "restartPolicy": "Never", **spec,
                     "containers": [{"name": "main", "image": image, "command": command}]}}
    kube("apply", "-f", "-", input=json.dumps(body))


def test_the_proxy_runs_with_the_rest(cluster: tuple[kubelab.Cluster, ClusterNetwork]) -> None:
    running, network = cluster
    proxy = next(r for r in running.running.state.processes if r.name == "proxy")
    assert proxy.health_url and httpx.get(proxy.health_url).status_code == 200
    table = subprocess.run(["nsenter", f"--net={network.path}", "nft", "list", "table", "ip", "kube-proxy"],
                           capture_output=True, text=True)
    assert "10.96.0.1 . tcp . 443" in table.stdout


def test_a_pod_reaches_the_apiserver_through_the_kubernetes_service(kube: Kubectl) -> None:
    ns = f"t-{uuid.uuid4().hex[:8]}"
    _pod(kube, ns, "incluster", "python", ["python3", "-u", "-c", IN_CLUSTER])

    def logs() -> str:
        return kube("logs", "-n", ns, "incluster", check=False).stdout
    line = wait_for(lambda: "gitVersion" in logs() and logs(), timeout=60, what="the in-cluster client's answer")
    host, port, _ = line.split(" ", 2)
    assert (host, port) == ("10.96.0.1", "443")


def test_service_links_name_every_service_of_the_namespace(kube: Kubectl) -> None:
    ns = f"t-{uuid.uuid4().hex[:8]}"
    kube("create", "namespace", ns)
    kube("create", "service", "clusterip", "my-db", "-n", ns, "--tcp", "5432:5432")
    ip = kube("get", "service", "my-db", "-n", ns, "-o", "jsonpath={.spec.clusterIP}").stdout
    _pod(kube, ns, "linked", "busybox", ["sleep", "3600"])
    _pod(kube, ns, "unlinked", "busybox", ["sleep", "3600"], enableServiceLinks=False)
    for pod in ("linked", "unlinked"):
        wait_for(lambda pod=pod: kube("get", "pod", pod, "-n", ns, "-o", "jsonpath={.status.phase}").stdout
                 == "Running", what=f"{pod} Running")
    env = kube("exec", "-n", ns, "linked", "--", "env").stdout.splitlines()
    assert f"MY_DB_SERVICE_HOST={ip}" in env and "MY_DB_SERVICE_PORT=5432" in env
    assert f"MY_DB_PORT_5432_TCP=tcp://{ip}:5432" in env and "KUBERNETES_SERVICE_HOST=10.96.0.1" in env
    unlinked = kube("exec", "-n", ns, "unlinked", "--", "env").stdout
    assert "MY_DB_SERVICE_HOST" not in unlinked and "KUBERNETES_SERVICE_HOST=10.96.0.1" in unlinked


def test_stopping_the_cluster_leaves_nothing_behind(cluster: tuple[kubelab.Cluster, ClusterNetwork]) -> None:
    """Last in the module: it stops the cluster."""
    running, network = cluster
    assert name_exists(network.name)
    running.stop()
    assert not name_exists(network.name)
    with IPRoute() as ipr:
        assert not ipr.link_lookup(ifname=network.host_link)
    assert "kube-proxy" not in subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
    assert not (STATE_DIR / network.name).exists()
