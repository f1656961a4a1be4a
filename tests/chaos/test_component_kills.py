"""Every component killed (``kill -9``) in turn under a steady write load, and restarted: nothing acknowledged is
lost, no watcher misses or repeats an event, the workloads converge, no container is orphaned.

This module runs its own etcd and apiserver (an API-only ``kubelab.Cluster``, whose ``kill`` and
``start_component`` it uses), controller-manager, scheduler and two kubelets (a kill must not disturb the
session's shared apiserver). While a writer updates ConfigMaps (each write with a counter, see
support/chaos.py for how it knows every committed version), a scaler moves two ReplicationControllers between
1 and 3 replicas and a watcher records every ConfigMap event, the test kills, one at a time with a pause, the
controller-manager, the scheduler, a kubelet, the apiserver and etcd (its data dir survives; it restarts with the
same flags), and starts each again itself (no supervisor). Then:

* every ConfigMap holds its last committed write, and the watcher — which re-watched from its last
  resourceVersion whenever its stream broke, and would relist on 410 as informers do — was sent each committed
  version exactly once, and nothing else;
* each RC has as many pods as its ``spec.replicas``, all Running, and one container process per pod: the
  restarted kubelet adopted its containers (same container IDs, no restarts) instead of starting new ones;
* after the RCs are deleted and everything is stopped, no process of the run remains: containers are found by a
  marker in their environment, and the kubelets, their shim zygotes and shims by their working directory (each
  kubelet starts in its own directory under the run's, and a shim works in its container's state directory).

Every wait is bounded; nothing asserts how long anything took.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import api_only
from kubelab.api import Cluster as ControlPlane
from kubelab.etcd import free_port
from support.chaos import ConfigMapWriter, ReplicaScaler, Watcher, container_pids, processes_in, processes_with
from support.controllers import ControllerManager
from support.process import ComponentProcess
from support.scheduler import SchedulerProcess
from support.wait import wait_for

pytestmark = pytest.mark.chaos

NODES = 2
CONFIGMAPS = 6
RCS = ["alpha", "beta"]
SCALE_SEQUENCE = [3, 1, 2]
WRITE_PERIOD = 0.05  # ~20 writes/s: steady, and bounded
SCALE_PERIOD = 2.0
PAUSE = 2.0  # load running between one restart and the next kill
DOWN = 1.0  # how long a killed component stays down
WAIT = 60.0  # the bound on each wait
LABELS = {"chaos": "writer"}


@dataclass
class Restartable:
    """A component that ``launch`` starts; ``kill`` is ``kill -9`` of its process, ``start`` starts it again with
    the same flags, and ``ready`` says when it serves again."""

    name: str
    launch: Callable[[], ComponentProcess]
    ready: Callable[[], bool]
    process: ComponentProcess | None = None

    def start(self) -> None:
        self.process = self.launch()

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()


@dataclass
class Cluster:
    """This module's control plane and nodes; ``marker`` is in every container's environment, ``tmp`` holds every
    file of the run (every kubelet, shim and container works below it)."""

    control: ControlPlane  # etcd and the apiserver: an API-only kubelab.Cluster
    components: dict[str, Restartable]
    namespace: str
    marker: str
    tmp: Path
    kubelet_ports: dict[str, int]

    @property
    def url(self) -> str:
        return self.control.api_url


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2, verify=False).status_code == 200  # kubelets: self-signed HTTPS
    except httpx.TransportError:
        return False


def _node_ready(api_url: str, name: str) -> bool:
    try:
        resp = httpx.get(f"{api_url}/api/v1/nodes/{name}", timeout=2)
    except httpx.TransportError:
        return False
    if resp.status_code != 200:
        return False
    node = resp.json()
    conditions = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
    return conditions.get("Ready") == "True" and bool(node["spec"].get("podCIDR"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("chaos")
    marker = uuid.uuid4().hex
    with api_only() as control:
        yield from _with_components(control, tmp, marker)


def _with_components(control: ControlPlane, tmp: Path, marker: str) -> Iterator[Cluster]:
    url = control.api_url
    components: dict[str, Restartable] = {}

    def add(name: str, launch: Callable[[], ComponentProcess], ready: Callable[[], bool]) -> None:
        components[name] = Restartable(name, launch, ready)

    cm_port, sched_port = free_port(), free_port()
    add("controller-manager",
        lambda: ControllerManager(url, tmp / "controller-manager.log", "--leader-elect=false",
                                  "--controllers=replicationcontroller,nodeipam,garbagecollector",
                                  "--healthz-port", str(cm_port)),
        lambda: _healthy(f"http://127.0.0.1:{cm_port}/healthz"))
    add("scheduler",
        lambda: SchedulerProcess(url, tmp / "scheduler.log", "--leader-elect=false", "--healthz-port", str(sched_port)),
        lambda: _healthy(f"http://127.0.0.1:{sched_port}/healthz"))
    kubelet_ports: dict[str, int] = {}
    for i in range(NODES):
        name, port, root = f"chaos-node{i}", free_port(), tmp / f"node{i}"
        kubelet_ports[name] = port
        root.mkdir()
        add(name,
            lambda name=name, port=port, root=root: ComponentProcess(
                "kubelet", url, tmp / f"{name}.log", "--node-name", name, "--port", str(port),
                "--root-dir", str(root), "--node-lease-renew-interval", "1", "--runtime", "process", cwd=root),
            lambda name=name, port=port: _healthy(f"https://127.0.0.1:{port}/healthz") and _node_ready(url, name))
    namespace = "chaos"
    cluster = Cluster(control, components, namespace, marker, tmp, kubelet_ports)
    try:
        for component in components.values():
            component.start()
        for component in components.values():
            wait_for(component.ready, WAIT, f"{component.name} to serve")
        resp = httpx.post(f"{url}/api/v1/namespaces", json={"metadata": {"name": namespace}})
        assert resp.status_code == 201, resp.text
        yield cluster
    finally:
        for component in components.values():
            component.stop()
        for pid in processes_with(f"CHAOS_CONTAINER={marker}") + processes_in(tmp):
            _kill(pid)  # whatever a failed run left behind


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def rc(name: str, marker: str) -> dict[str, Any]:
    labels = {"app": name}
    container = {"name": "main", "image": "busybox", "command": ["sleep", "3600"],
                 "env": [{"name": "CHAOS_CONTAINER", "value": marker},
                         {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
            "spec": {"replicas": 2, "selector": labels,
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"terminationGracePeriodSeconds": 1, "containers": [container]}}}}


def live_pods(client: httpx.Client, namespace: str, app: str) -> list[dict[str, Any]]:
    items = client.get(f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": f"app={app}"}).json()["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def converged(client: httpx.Client, namespace: str) -> dict[str, list[dict[str, Any]]] | None:
    """Each RC's pods once they number its ``spec.replicas`` and all run; None before."""
    out = {}
    for name in RCS:
        want = client.get(f"/api/v1/namespaces/{namespace}/replicationcontrollers/{name}").json()["spec"]["replicas"]
        pods = live_pods(client, namespace, name)
        if len(pods) != want or any(p.get("status", {}).get("phase") != "Running" for p in pods):
            return None
        out[name] = pods
    return out


def running_by_node(client: httpx.Client, namespace: str) -> dict[str, list[dict[str, Any]]]:
    """The RCs' Running pods by node."""
    out: dict[str, list[dict[str, Any]]] = {}
    for pod in (p for name in RCS for p in live_pods(client, namespace, name)):
        if pod.get("status", {}).get("phase") == "Running":
            out.setdefault(pod["spec"]["nodeName"], []).append(pod)
    return out


def container_ids(pods: list[dict[str, Any]]) -> dict[str, tuple[str, int]]:
    """Pod name → (its container's ID, restart count)."""
    return {p["metadata"]["name"]: (p["status"]["containerStatuses"][0]["containerID"],
                                    p["status"]["containerStatuses"][0]["restartCount"]) for p in pods}


def test_kill_each_component_under_load(cluster: Cluster) -> None:
    with httpx.Client(base_url=cluster.url, timeout=10) as client:
        run_under_chaos(cluster, client)


def run_under_chaos(cluster: Cluster, client: httpx.Client) -> None:
    ns, url = cluster.namespace, cluster.url
    for name in RCS:
        assert client.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=rc(name, cluster.marker)
                           ).status_code == 201
    watcher = Watcher(url, f"/api/v1/namespaces/{ns}/configmaps", "chaos=writer")
    watcher.start()
    wait_for(lambda: watcher.rv, WAIT, "the watcher's first list")
    writer = ConfigMapWriter(url, ns, [f"cm-{i}" for i in range(CONFIGMAPS)], LABELS, WRITE_PERIOD)
    scaler = ReplicaScaler(url, ns, RCS, SCALE_SEQUENCE, SCALE_PERIOD)
    writer.start()
    scaler.start()

    adopted: dict[str, tuple[str, int]] = {}
    for name in ["controller-manager", "scheduler", "kubelet", "apiserver", "etcd"]:
        time.sleep(PAUSE)
        if name == "kubelet":
            scaler.paused.set()  # no pod of the node may go while its kubelet is away
            adopted = kill_and_restart_kubelet(cluster, client)
            scaler.paused.clear()
        else:
            kill_and_restart(cluster, name)

    time.sleep(PAUSE)
    scaler.stop()
    writer.stop()
    assert writer.committed and writer.refused < len(writer.committed)

    # Every write the writer saw commit is there, with its last value.
    for name, version in writer.last().items():
        obj = client.get(f"/api/v1/namespaces/{ns}/configmaps/{name}").json()
        assert (obj["data"]["counter"], obj["metadata"]["resourceVersion"]) == (str(version.counter), version.rv)

    # The watcher was sent each committed version once: no loss, no duplicate, nothing uncommitted.
    final_rv = max(int(v.rv) for v in writer.committed)
    wait_for(lambda: watcher.rv and int(watcher.rv) >= final_rv, WAIT, "the watcher to catch up")
    watcher.stop()
    seen = Counter(watcher.log.versions)
    duplicates = {v: n for v, n in seen.items() if n > 1}
    missed = [v for v in writer.committed if v not in seen]
    unknown = [v for v in seen if v not in set(writer.committed)]
    assert (duplicates, missed, unknown) == ({}, [], []), \
        f"relists: {watcher.log.relists}, re-watches: {watcher.log.rewatches}"
    assert watcher.log.breaks >= 1  # the apiserver's death broke the stream: the watcher resumed

    # The RCs converge: replicas pods, all Running, each one container process; the kubelet adopted its own.
    pods_by_rc = wait_for(lambda: converged(client, ns), WAIT, "each RC's pods to run")
    pods = [p for group in pods_by_rc.values() for p in group]
    now = container_ids(pods)
    assert {pod: now[pod] for pod in adopted if pod in now} == {pod: (cid, 0) for pod, (cid, _) in adopted.items()
                                                                 if pod in now}
    wait_for(lambda: len(processes_with(f"CHAOS_CONTAINER={cluster.marker}")) == len(pods), WAIT,
             f"one container process per pod ({len(pods)})")

    # Deleted RCs take their pods; stopped kubelets leave no container and no shim behind.
    for name in RCS:
        assert client.delete(f"/api/v1/namespaces/{ns}/replicationcontrollers/{name}").status_code == 200
    wait_for(lambda: not client.get(f"/api/v1/namespaces/{ns}/pods").json()["items"], WAIT, "the pods to go")
    for component in cluster.components.values():
        component.stop()
    wait_for(lambda: not processes_with(f"CHAOS_CONTAINER={cluster.marker}"), WAIT, "no container process left")
    wait_for(lambda: not processes_in(cluster.tmp), WAIT, "no kubelet, shim or container left")


def kill_and_restart_kubelet(cluster: Cluster, client: httpx.Client) -> dict[str, tuple[str, int]]:
    """``kill -9`` the kubelet of the node that runs the most pods and start it again: it adopts its containers —
    the same processes keep running, and each pod keeps its container ID with no restart."""
    ns, marker = cluster.namespace, f"CHAOS_CONTAINER={cluster.marker}"
    running = wait_for(lambda: running_by_node(client, ns), WAIT, "a running pod")
    node = max(running, key=lambda name: len(running[name]))
    before = container_ids(running[node])
    pids = {pod: container_pids(marker).get(pod) for pod in before}
    kill_and_restart(cluster, node)
    port = cluster.kubelet_ports[node]
    for pod in before:  # the restarted kubelet knows the pod's container again
        wait_for(lambda pod=pod: _healthy(f"https://127.0.0.1:{port}/containerLogs/{ns}/{pod}/main"), WAIT,
                 f"{node} to serve {pod}'s log")
    assert {pod: container_pids(marker).get(pod) for pod in before} == pids
    now = container_ids(running_by_node(client, ns)[node])  # (the RC may have placed a new pod there meanwhile)
    assert {pod: now.get(pod) for pod in before} == before
    return before


def kill_and_restart(cluster: Cluster, name: str) -> None:
    """``kill -9`` one component, leave it down for ``DOWN`` seconds under load, start it again and wait until it
    serves. etcd restarts on its data dir, ports and flags; the apiserver on its port."""
    if name in ("etcd", "apiserver"):
        cluster.control.kill(name)
        time.sleep(DOWN)
        cluster.control.start_component(name)
        if name == "etcd":
            wait_for(lambda: _healthy(f"{cluster.url}/readyz"), WAIT, "the apiserver to reach etcd again")
    else:
        component = cluster.components[name]
        component.kill()
        time.sleep(DOWN)
        component.start()
        wait_for(component.ready, WAIT, f"{name} to serve again")
