"""``kubelab.Cluster`` as a user's script drives it: nodes Ready through kubectl and the official client, logs,
a temporary data dir gone afterwards, API-only and hollow-node clusters, manifests and a snapshot to start from."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import kubernetes
import pytest

import kubelab
from kubelab import snapshot
from kubelab.pytest_plugin import Clusters
from kubelab.testing import ApplyError
from support.wait import wait_for

pytestmark = pytest.mark.kubectl


@pytest.fixture(autouse=True)
def environment(kubectl_bin: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The suite's kubectl (skipped without one) for Cluster.kubectl; no fsync, as `make test` runs etcd."""
    monkeypatch.setenv("KUBELAB_KUBECTL", kubectl_bin)
    monkeypatch.setenv("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")
    yield


def test_a_cluster_with_two_nodes_serves_kubectl_and_the_python_client(kubelab_clusters: Clusters) -> None:
    # The plugin's cluster of this shape (a kubelab.Cluster, shared with any module asking for the same shape).
    # extra_args reach their component (so the plugin gives each cluster's pods a range of its own): a /16 far above
    # those the plugin hands out.
    cluster = kubelab_clusters(nodes=2, extra_args={"controller-manager": ["--cluster-cidr", "127.250.0.0/16"]})
    assert sorted(cluster.nodes) == ["node01", "node02"]
    table = cluster.kubectl("get", "nodes", "--no-headers").stdout.splitlines()
    assert [line.split()[:2] for line in table] == [["node01", "Ready"], ["node02", "Ready"]]
    cidrs = cluster.kubectl("get", "nodes", "-o", "jsonpath={.items[*].spec.podCIDR}").stdout.split()
    assert sorted(cidrs) == ["127.250.0.0/24", "127.250.1.0/24"]
    v1 = kubernetes.client.CoreV1Api(cluster.api_client())
    assert {n.metadata.name for n in v1.list_node().items} == {"node01", "node02"}
    assert os.environ.get("KUBECONFIG") != str(cluster.kubeconfig)  # nothing global is touched
    assert "apiserver ready" in cluster.logs("apiserver")
    assert "node02" in cluster.logs("kubelet")
    with pytest.raises(KeyError, match="no process 'proxy'"):
        cluster.logs("proxy")
    # The default class's provisioner works under Node,RBAC: it runs in the kubelet as an identity of its own.
    cluster.kubectl("apply", "-f", "-", input=CLAIM_AND_POD)
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "data", "namespace": "default"}}
    assert cluster.wait_for(claim, "jsonpath={.status.phase}=Bound", timeout=30) is not None


CLAIM_AND_POD = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  containers: [{name: main, image: busybox, command: [sh, -c, "echo hi > /data/f && sleep 3600"],
                volumeMounts: [{name: data, mountPath: /data}]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
"""


# The tests below own their clusters: they check the library's own lifecycle (start, stop, what becomes of the
# data dir) and start-up options (manifests, a snapshot) that a shared cluster has used up before a test runs.

def test_api_only_hollow_nodes_and_manifests(tmp_path: Path) -> None:
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "app.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: team}\ndata: {level: high}\n---\n"
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n")
    with kubelab.Cluster(components=["apiserver", "kubelet"], nodes=0, hollow_nodes=3,
                         manifests=tmp_path / "manifests", data_dir=tmp_path / "data") as cluster:
        assert sorted(cluster.nodes) == ["hollow-node-0", "hollow-node-1", "hollow-node-2"]
        assert cluster.log_names() == ["etcd", "apiserver", "kubelet-hollow"]
        assert cluster.kubectl("get", "cm", "settings", "-n", "team", "-o", "jsonpath={.data.level}").stdout == "high"
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team"}}
        assert cluster.wait_for(cm, "jsonpath={.data.level}=high", timeout=10) is not None
        with pytest.raises(TimeoutError, match="not met within"):
            cluster.wait_for(cm, "jsonpath={.data.level}=low", timeout=0.5)
        (tmp_path / "bad.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n")
        with pytest.raises(ApplyError, match="Bad_Name"):
            cluster.apply(tmp_path / "bad.yaml")
    assert (tmp_path / "data" / "logs" / "apiserver.log").is_file()  # a data dir the caller chose is kept


def test_a_cluster_starts_from_a_snapshot(tmp_path: Path) -> None:
    with kubelab.Cluster(components=["apiserver"]) as first:
        first.kubectl("create", "configmap", "remembered", "--from-literal=answer=42")
        snapshot.save(first.data_dir, tmp_path / "snap.db")
    assert not first.data_dir.exists()  # a temporary data dir is gone with the cluster
    with kubelab.Cluster(components=["apiserver"], snapshot=tmp_path / "snap.db") as second:
        shown = second.kubectl("get", "cm", "remembered", "-o", "jsonpath={.data.answer}").stdout
        assert shown == "42"


def test_a_component_stopped_killed_and_started_again_keeps_its_port_and_data() -> None:
    """``stop_component``/``kill`` leave a process down, ``start_component``/``restart`` bring it back on its
    command line: the same URL, the same etcd data."""
    with kubelab.Cluster(nodes=0, components=["apiserver"]) as cluster:
        url = cluster.api_url
        httpx.post(f"{url}/api/v1/namespaces", json={"metadata": {"name": "kept"}}).raise_for_status()
        cluster.stop_component("apiserver")
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/healthz")
        cluster.start_component("apiserver")
        assert httpx.get(f"{url}/api/v1/namespaces/kept").status_code == 200
        cluster.kill("etcd")
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{cluster.etcd_url}/health")
        cluster.start_component("etcd")
        wait_for(lambda: httpx.get(f"{url}/readyz").status_code == 200, what="the apiserver to reach etcd again")
        cluster.restart("apiserver")
        assert httpx.get(f"{url}/api/v1/namespaces/kept").status_code == 200
        with pytest.raises(KeyError, match="no process 'scheduler'"):
            cluster.stop_component("scheduler")


def test_stop_removes_what_a_killed_kubelet_left(tmp_path: Path) -> None:
    """A kubelet killed (not stopped) leaves its containers running under their shims; the cluster's ``stop``
    removes them as ``kubelab down`` does, so a test harness that kills a node leaves no process behind."""
    with kubelab.Cluster(nodes=1, runtime="process", pod_network="host", data_dir=tmp_path / "data") as cluster:
        cluster.kubectl("run", "sleeper", "--image=busybox", "--restart=Never", "--", "sleep", "3600")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper", "namespace": "default"}}
        assert cluster.wait_for(pod, "jsonpath={.status.phase}=Running", timeout=60) is not None
        records = list((tmp_path / "data" / "kubelet").glob("*/containers/*/pid.json"))
        assert records, "the running container's record"
        pids = [int(json.loads(r.read_text())["pid"]) for r in records]
        cluster.kill("kubelet-node01")
        assert all(_alive(pid) for pid in pids), "a killed kubelet's containers run on"
    assert not [pid for pid in pids if _alive(pid)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
