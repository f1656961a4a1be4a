"""A real kubelet process for the integration tests that drive containers through it (attach, debug): a node the
tests bind their pods to by ``spec.nodeName`` (there is no scheduler), restartable on the same root directory."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from kubelab.addons import ADDONS, PROVISIONER_ROLE
from kubelab.clusterpki import LOCAL_PATH_PROVISIONER
from kubelab.etcd import free_port
from kubelet.runtime.leftovers import clean
from support.process import ComponentProcess, impersonating_kubeconfig
from support.wait import wait_for


class Node:
    """One kubelet, restartable on the same root directory (it adopts its running containers)."""

    def __init__(self, api_url: str, name: str, root: Path, runtime: str = "process",
                 flags: Sequence[str] = ()) -> None:
        self.api_url, self.name, self.root, self.runtime, self.flags = api_url, name, root, runtime, tuple(flags)
        self.port = free_port()
        self.kubelet = self._start()

    def _start(self) -> ComponentProcess:
        """As ``system:node:<name>`` (the Node authorizer and NodeRestriction judge it), its local-path provisioner
        as ``kubelab:local-path-provisioner`` with the rights ``kubelab up`` gives it."""
        provisioner = provisioner_kubeconfig(self.api_url, self.root / "provisioner.kubeconfig")
        return ComponentProcess("kubelet", self.api_url, self.root / "kubelet.log", "--port", str(self.port),
                                "--root-dir", str(self.root / "root"), "--node-name", self.name,
                                "--runtime", self.runtime, "--provisioner-kubeconfig", str(provisioner),
                                *self.flags, act_as=(f"system:node:{self.name}", "system:nodes"))

    def restart(self, ns: str, pod: str, container: str) -> None:
        """Kill the kubelet (``kill -9``: a stopped kubelet stops its pods) and start it again; wait until it
        serves ``pod`` again (it adopted the pod's container)."""
        self.kubelet.kill()
        self.kubelet = self._start()

        def serving() -> bool:
            try:
                # the kubelet's API is HTTPS with its self-signed certificate (no --tls-cert-file here)
                return httpx.get(f"https://127.0.0.1:{self.port}/containerLogs/{ns}/{pod}/{container}",
                                 verify=False).is_success
            except httpx.TransportError:
                return False
        wait_for(serving, what=f"the restarted kubelet to serve {pod}")

    def overrides(self) -> str:
        """For ``kubectl run --overrides``: there is no scheduler here, the pod names its node."""
        return json.dumps({"spec": {"nodeName": self.name, "terminationGracePeriodSeconds": 1}})


def provisioner_kubeconfig(api_url: str, path: Path) -> Path:
    """A kubeconfig acting as the local-path provisioner, its ClusterRole and binding made as ``kubelab up`` does."""
    for collection, obj in ADDONS:
        if obj["metadata"]["name"] == PROVISIONER_ROLE:  # its role and binding only (the tests make their classes)
            httpx.post(f"{api_url}{collection}", json=obj)
    return impersonating_kubeconfig(path, api_url, LOCAL_PATH_PROVISIONER.user, ())


@contextmanager
def running_node(api_url: str, name: str, root: Path, runtime: str = "process",
                 flags: Sequence[str] = ()) -> Iterator[Node]:
    """A kubelet (with extra ``flags``) for the ``with`` block; afterwards it is stopped and every container it
    left is killed."""
    node = Node(api_url, name, root, runtime, flags)
    try:
        yield node
    finally:
        node.kubelet.stop()
        clean(node.root / "root")  # whatever a kubelet killed rather than stopped left (its pods, by UID)


def node_runtime(api_url: str, node: str) -> str:
    """The node's container runtime as its status names it: ``linux`` or ``process`` (``docker``)."""
    def version() -> str:
        resp = httpx.get(f"{api_url}/api/v1/nodes/{node}")
        info = resp.json()["status"]["nodeInfo"] if resp.status_code == 200 else {}
        return str(info.get("containerRuntimeVersion") or "")
    return wait_for(version, what=f"node {node} registered").split("://")[0]


def sigterm_exit_code(api_url: str, node: str) -> int:
    """The exit code of a container whose ``sleep`` got SIGTERM: 143 for a host process; in a Linux container
    ``sleep`` is PID 1 of its namespace, which ignores a signal it has no handler for, so the kubelet's SIGKILL
    after the grace period ends it (137), as on Kubernetes."""
    return 137 if node_runtime(api_url, node) == "linux" else 143


def create_pod(api_url: str, ns: str, node: Node, name: str, *containers: dict[str, object]) -> None:
    """A busybox pod on ``node`` (``restartPolicy: Never``, 1 s of grace); returns once it is Running."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"nodeName": node.name, "terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
                     "containers": [{"image": "busybox", **c} for c in containers]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    wait_for(lambda: phase(api_url, ns, name) == "Running", what=f"{name} Running")


def phase(api_url: str, ns: str, name: str) -> str | None:
    resp = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/{name}")
    return resp.json().get("status", {}).get("phase") if resp.status_code == 200 else None
