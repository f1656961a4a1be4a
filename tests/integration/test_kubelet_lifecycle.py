"""The pod lifecycle on a real kubelet process against the real apiserver: probes, init containers, env and the
downward API, volumes, lifecycle hooks and image changes. Probe periods are 1 s so each test takes seconds."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import Kubectl
from kubelab.etcd import free_port
from support.kubelet import sigterm_exit_code
from support.process import ComponentProcess
from support.wait import wait_for


@dataclass
class Node:
    name: str
    root: Path

    def container_dir(self, uid: str, container: str) -> Path:
        return self.root / "pods" / uid / "containers" / container


@pytest.fixture()
def node(api_url: str, ns: str, tmp_path: Path) -> Iterator[Node]:
    """A kubelet process for a node named after the test's namespace (node names are cluster-wide)."""
    name = f"{ns}-node"
    proc = ComponentProcess("kubelet", api_url, tmp_path / "kubelet.log", "--node-name", name,
                            "--port", str(free_port()), "--root-dir", str(tmp_path / "root"),
                            "--crashloop-backoff", "1", "--node-lease-renew-interval", "1", "--runtime", "process")
    try:
        yield Node(name, tmp_path / "root")
    finally:
        proc.stop()


def container(name: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "command": ["sh", "-c", script], **extra}


def create(client: httpx.Client, ns: str, name: str, node: Node, containers: list[dict[str, Any]],
           restart: str = "Always", **spec: Any) -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"nodeName": node.name, "restartPolicy": restart, "terminationGracePeriodSeconds": 5,
                     "containers": containers, **spec}}
    resp = client.post(f"/api/v1/namespaces/{ns}/pods", json=body)
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


def get(client: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    resp = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    return dict(resp.json()) if resp.status_code == 200 else {}


def status(client: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    return dict(get(client, ns, name).get("status") or {})


def condition(client: httpx.Client, ns: str, name: str, kind: str) -> str:
    return next((c["status"] for c in status(client, ns, name).get("conditions") or [] if c["type"] == kind), "")


def container_status(client: httpx.Client, ns: str, name: str, container: str = "main",
                     key: str = "containerStatuses") -> dict[str, Any]:
    return next((s for s in status(client, ns, name).get(key) or [] if s["name"] == container), {})


def events(client: httpx.Client, ns: str, name: str) -> list[tuple[str, str]]:
    items = client.get(f"/api/v1/namespaces/{ns}/events",
                       params={"fieldSelector": f"involvedObject.name={name}"}).json()["items"]
    return [(e["reason"], e["message"]) for e in items]


def test_liveness_failure_restarts_the_container(client: httpx.Client, ns: str, node: Node) -> None:
    probe = {"exec": {"command": ["cat", "healthy"]}, "periodSeconds": 1, "failureThreshold": 1}
    create(client, ns, "live", node, [container("main", "touch healthy; sleep 1; rm healthy; exec sleep 3600",
                                                livenessProbe=probe)])
    wait_for(lambda: container_status(client, ns, "live").get("restartCount", 0) >= 1, what="a restart")
    found = events(client, ns, "live")
    assert any(r == "Unhealthy" and m.startswith("Liveness probe failed: cat: ") for r, m in found), found
    assert ("Killing", "Container main failed liveness probe, will be restarted") in found
    last = container_status(client, ns, "live")["lastState"]["terminated"]
    assert last["exitCode"] == sigterm_exit_code(str(client.base_url), node.name) and last["reason"] == "Error"


def test_readiness_gates_ready(client: httpx.Client, kubectl: Kubectl, ns: str, node: Node) -> None:
    probe = {"exec": {"command": ["test", "-f", "ready"]}, "periodSeconds": 1, "failureThreshold": 1}
    create(client, ns, "ready", node, [container("main", "exec sleep 3600", readinessProbe=probe)])
    wait_for(lambda: status(client, ns, "ready").get("phase") == "Running", what="Running")
    assert container_status(client, ns, "ready")["ready"] is False
    assert condition(client, ns, "ready", "Ready") == condition(client, ns, "ready", "ContainersReady") == "False"
    kubectl("exec", "ready", "-n", ns, "--", "touch", "ready")  # in the container's working directory
    wait_for(lambda: condition(client, ns, "ready", "Ready") == "True", what="Ready")
    assert container_status(client, ns, "ready")["ready"] is True
    assert condition(client, ns, "ready", "ContainersReady") == "True"
    kubectl("exec", "ready", "-n", ns, "--", "rm", "ready")
    wait_for(lambda: condition(client, ns, "ready", "Ready") == "False", what="not Ready again")
    assert container_status(client, ns, "ready")["restartCount"] == 0  # readiness never restarts
    assert any(r == "Unhealthy" and m.startswith("Readiness probe failed") for r, m in events(client, ns, "ready"))


def test_startup_probe_holds_back_liveness(client: httpx.Client, kubectl: Kubectl, ns: str, node: Node) -> None:
    startup = {"exec": {"command": ["test", "-f", "started"]}, "periodSeconds": 1, "failureThreshold": 30}
    liveness = {"exec": {"command": ["false"]}, "periodSeconds": 1, "failureThreshold": 1}
    create(client, ns, "slow", node, [container("main", "exec sleep 3600", startupProbe=startup,
                                                livenessProbe=liveness)])
    wait_for(lambda: container_status(client, ns, "slow").get("state", {}).get("running"), what="running")
    cs = container_status(client, ns, "slow")
    assert cs["started"] is False and cs["ready"] is False
    kubectl("exec", "slow", "-n", ns, "--", "touch", "started")
    wait_for(lambda: container_status(client, ns, "slow").get("restartCount", 0) >= 1, what="liveness restart")
    assert ("Killing", "Container main failed liveness probe, will be restarted") in events(client, ns, "slow")


def test_init_containers_run_in_order(client: httpx.Client, kubectl: Kubectl, ns: str, node: Node) -> None:
    mounts = [{"name": "work", "mountPath": "/work"}]
    inits = [container("first", "sleep 2; echo one >> /work/order", volumeMounts=mounts),
             container("second", "echo two >> /work/order", volumeMounts=mounts)]
    main = container("main", "cat /work/order; exec sleep 3600", volumeMounts=mounts)
    create(client, ns, "init", node, [main], initContainers=inits, volumes=[{"name": "work", "emptyDir": {}}])
    wait_for(lambda: container_status(client, ns, "init", "first", "initContainerStatuses")
             .get("state", {}).get("running"), what="the first init container running")
    row = kubectl("get", "pod", "init", "-n", ns).stdout.splitlines()[1].split()
    assert row[1:3] == ["0/1", "Init:0/2"]
    assert status(client, ns, "init")["phase"] == "Pending"
    assert condition(client, ns, "init", "Initialized") == "False"
    assert container_status(client, ns, "init")["state"]["waiting"]["reason"] == "PodInitializing"
    wait_for(lambda: status(client, ns, "init").get("phase") == "Running", what="Running")
    assert condition(client, ns, "init", "Initialized") == "True"
    inits_done = status(client, ns, "init")["initContainerStatuses"]
    assert [(s["name"], s["state"]["terminated"]["reason"], s["ready"]) for s in inits_done] == \
        [("first", "Completed", True), ("second", "Completed", True)]
    wait_for(lambda: kubectl("logs", "init", "-n", ns).stdout == "one\ntwo\n", what="main's output")
    assert kubectl("get", "pod", "init", "-n", ns).stdout.splitlines()[1].split()[1:3] == ["1/1", "Running"]
    assert kubectl("logs", "init", "-c", "second", "-n", ns).stdout == ""
    described = kubectl("describe", "pod", "init", "-n", ns).stdout
    assert "Init Containers:" in described and re.search(r"Initialized\s+True", described)
    started = client.get(f"/api/v1/namespaces/{ns}/events",
                         params={"fieldSelector": "involvedObject.name=init,reason=Started"}).json()["items"]
    assert sorted(e["involvedObject"].get("fieldPath") for e in started) == \
        ["spec.containers{main}", "spec.initContainers{first}", "spec.initContainers{second}"]


def test_failed_init_container_with_restart_never_fails_the_pod(client: httpx.Client, kubectl: Kubectl, ns: str,
                                                               node: Node) -> None:
    create(client, ns, "badinit", node, [container("main", "echo never")], "Never",
           initContainers=[container("setup", "exit 2")])
    wait_for(lambda: status(client, ns, "badinit").get("phase") == "Failed", what="Failed")
    init = container_status(client, ns, "badinit", "setup", "initContainerStatuses")
    assert init["state"]["terminated"]["exitCode"] == 2
    assert "waiting" in container_status(client, ns, "badinit")["state"]  # main never started
    assert kubectl("get", "pod", "badinit", "-n", ns).stdout.splitlines()[1].split()[2] == "Init:Error"


def test_empty_dir_is_shared_and_removed_with_the_pod(client: httpx.Client, kubectl: Kubectl, ns: str,
                                                      node: Node) -> None:
    mounts = [{"name": "cache", "mountPath": "/cache"}]
    pod = create(client, ns, "share", node, [
        container("writer", "echo hello > /cache/msg; exec sleep 3600", volumeMounts=mounts),
        container("reader", "while [ ! -f /cache/msg ]; do sleep 0.1; done; cat /cache/msg; exec sleep 3600",
                  volumeMounts=mounts),
    ], volumes=[{"name": "cache", "emptyDir": {}}])
    wait_for(lambda: kubectl("logs", "share", "-c", "reader", "-n", ns, check=False).stdout == "hello\n",
             what="the reader's output")
    volume = node.root / "pods" / pod["metadata"]["uid"] / "volumes" / "kubernetes.io~empty-dir" / "cache"
    assert (volume / "msg").read_text() == "hello\n"
    assert not Path("/cache/msg").exists()
    client.delete(f"/api/v1/namespaces/{ns}/pods/share")
    wait_for(lambda: not get(client, ns, "share"), what="the deletion")
    assert not volume.exists()


def test_env_values_appear_in_logs(client: httpx.Client, kubectl: Kubectl, ns: str, node: Node) -> None:
    client.post(f"/api/v1/namespaces/{ns}/configmaps", json={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"level": "debug"}})
    field = [("POD_NAME", "metadata.name"), ("POD_NS", "metadata.namespace"), ("POD_UID", "metadata.uid"),
             ("APP", "metadata.labels['app']"), ("NOTE", "metadata.annotations['note']"),
             ("NODE", "spec.nodeName"), ("POD_IP", "status.podIP"), ("HOST_IP", "status.hostIP")]
    env = [{"name": n, "valueFrom": {"fieldRef": {"fieldPath": p}}} for n, p in field]
    env += [{"name": "MEM_MI", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
            {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "level"}}},
            {"name": "GREETING", "value": "hi $(POD_NAME)"}]
    script = ("echo $POD_NAME $POD_NS $POD_UID $APP $NOTE $NODE $POD_IP $HOST_IP $MEM_MI $LEVEL; "
              "echo $(GREETING) '$$(GREETING)' $HOSTNAME")  # $$ escapes: the shell gets a quoted $(GREETING)
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "envs", "namespace": ns, "labels": {"app": "demo"}, "annotations": {"note": "n1"}},
            "spec": {"nodeName": node.name, "restartPolicy": "Never", "containers": [{
                "name": "main", "image": "busybox", "command": ["sh", "-c", script], "env": env,
                "resources": {"limits": {"memory": "64Mi"}}}]}}
    uid = client.post(f"/api/v1/namespaces/{ns}/pods", json=body).json()["metadata"]["uid"]
    wait_for(lambda: status(client, ns, "envs").get("phase") == "Succeeded", what="Succeeded")
    ip = status(client, ns, "envs")["podIP"]
    assert kubectl("logs", "envs", "-n", ns).stdout == \
        f"envs {ns} {uid} demo n1 {node.name} {ip} {ip} 64 debug\nhi envs $(GREETING) envs\n"


def test_missing_config_map_is_a_config_error(client: httpx.Client, ns: str, node: Node) -> None:
    env = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "later", "key": "k"}}}]
    create(client, ns, "cfg", node, [container("main", "echo $X", env=env)], "Never")

    def reason() -> str:
        return str(container_status(client, ns, "cfg").get("state", {}).get("waiting", {}).get("reason", ""))

    wait_for(lambda: reason() == "CreateContainerConfigError", what="CreateContainerConfigError")
    assert ("Failed", 'Error: configmap "later" not found') in events(client, ns, "cfg")
    client.post(f"/api/v1/namespaces/{ns}/configmaps", json={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later"}, "data": {"k": "v"}})
    wait_for(lambda: status(client, ns, "cfg").get("phase") == "Succeeded", what="the retry to succeed")


def test_pre_stop_runs_before_sigterm(client: httpx.Client, ns: str, node: Node, tmp_path: Path) -> None:
    out = tmp_path / "out"
    script = "trap 'echo term >> /out/log; exit 0' TERM; while true; do sleep 0.1; done"
    hook = {"preStop": {"exec": {"command": ["sh", "-c", "echo prestop >> /out/log"]}}}
    create(client, ns, "stop", node, [container("main", script, lifecycle=hook,
                                                volumeMounts=[{"name": "out", "mountPath": "/out"}])],
           volumes=[{"name": "out", "hostPath": {"path": str(out), "type": "DirectoryOrCreate"}}])
    wait_for(lambda: status(client, ns, "stop").get("phase") == "Running", what="Running")
    client.delete(f"/api/v1/namespaces/{ns}/pods/stop")
    wait_for(lambda: not get(client, ns, "stop"), what="the deletion")
    assert (out / "log").read_text() == "prestop\nterm\n"


def test_failed_post_start_hook_kills_the_container(client: httpx.Client, ns: str, node: Node) -> None:
    hook = {"postStart": {"exec": {"command": ["sh", "-c", "exit 1"]}}}
    create(client, ns, "post", node, [container("main", "exec sleep 3600", lifecycle=hook)])
    wait_for(lambda: container_status(client, ns, "post").get("restartCount", 0) >= 1, what="a restart")
    found = events(client, ns, "post")
    assert ("FailedPostStartHook", "PostStartHook failed") in found
    assert ("Killing", "FailedPostStartHook") in found


def test_image_change_restarts_the_container(client: httpx.Client, kubectl: Kubectl, ns: str, node: Node) -> None:
    create(client, ns, "upgrade", node, [container("main", "exec sleep 3600")])
    wait_for(lambda: container_status(client, ns, "upgrade").get("state", {}).get("running"), what="running")
    kubectl("set", "image", "pod/upgrade", "main=busybox:1.36", "-n", ns)

    def upgraded() -> bool:
        cs = container_status(client, ns, "upgrade")
        return cs.get("image") == "busybox:1.36" and "running" in cs.get("state", {})

    wait_for(upgraded, what="the new image running")
    cs = container_status(client, ns, "upgrade")
    assert cs["restartCount"] == 1
    assert cs["lastState"]["terminated"]["exitCode"] == sigterm_exit_code(str(client.base_url), node.name)
    assert ("Killing", "Container main definition changed, will be restarted") in events(client, ns, "upgrade")
    assert status(client, ns, "upgrade")["phase"] == "Running"


def test_http_and_tcp_probes(client: httpx.Client, ns: str, node: Node) -> None:
    port = free_port()
    server = {"name": "main", "image": "python", "command": ["python3", "-m", "http.server", str(port)],
              "ports": [{"name": "web", "containerPort": port}],
              "readinessProbe": {"httpGet": {"path": "/", "port": "web"}, "periodSeconds": 1},
              "livenessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1, "initialDelaySeconds": 1}}
    create(client, ns, "web", node, [server])
    wait_for(lambda: condition(client, ns, "web", "Ready") == "True", what="Ready through httpGet")
    assert container_status(client, ns, "web")["restartCount"] == 0
    assert not [m for r, m in events(client, ns, "web") if r == "Killing"]
