"""The kubelet's runtime side against the real apiserver: image pulls and ``status.images``, exec with the real
kubectl (v5) and the Python client (v4), a kubelet killed with SIGKILL that adopts its containers on restart,
and hollow nodes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import Kubectl
from kubelab.etcd import free_port
from kubelet.runtime.leftovers import clean
from support.process import ComponentProcess
from support.wait import wait_for


class KubeletProcess:
    """One node's kubelet, which a test may kill (SIGKILL) and start again on the same root dir."""

    def __init__(self, api_url: str, name: str, root: Path, log: Path, extra: list[str] | None = None) -> None:
        self.api_url = api_url
        self.argv = ["--port", str(free_port()), "--root-dir", str(root), "--crashloop-backoff", "1",
                     "--node-lease-renew-interval", "1",
                     "--runtime", "process",  # the process runtime's adoption and pulls (the default is auto)
                     *(["--node-name", name] if name else []), *(extra or [])]
        self.root = root
        self.log = log
        self.proc: ComponentProcess | None = None

    def start(self) -> None:
        self.proc = ComponentProcess("kubelet", self.api_url, self.log, *self.argv)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()
        clean(self.root)  # whatever a killed kubelet left running


@pytest.fixture()
def kubelet(api_url: str, ns: str, tmp_path: Path) -> Iterator[KubeletProcess]:
    node = KubeletProcess(api_url, f"{ns}-node", tmp_path / "root", tmp_path / "kubelet.log")
    node.start()
    try:
        yield node
    finally:
        node.stop()


def pod(ns: str, name: str, node: str, command: list[str], image: str = "busybox", restart: str = "Always",
        **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"nodeName": node, "restartPolicy": restart, "terminationGracePeriodSeconds": 2,
                     "containers": [{"name": "main", "image": image, "command": command, **extra}]}}


def get_pod(client: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    resp = client.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    return resp.json() if resp.status_code == 200 else {}


def container_status(client: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    statuses = get_pod(client, ns, name).get("status", {}).get("containerStatuses") or [{}]
    return statuses[0]


def running(client: httpx.Client, ns: str, name: str) -> bool:
    return get_pod(client, ns, name).get("status", {}).get("phase") == "Running"


def events(client: httpx.Client, ns: str, name: str) -> list[tuple[str, str]]:
    items = client.get(f"/api/v1/namespaces/{ns}/events",
                       params={"fieldSelector": f"involvedObject.name={name}"}).json()["items"]
    return [(e["reason"], e["message"]) for e in sorted(items, key=lambda e: e["metadata"]["creationTimestamp"])]


# --- images ----------------------------------------------------------------------------------------------------
def test_first_pull_then_already_present_and_node_images(client: httpx.Client, ns: str,
                                                          kubelet: KubeletProcess) -> None:
    node = f"{ns}-node"
    wait_for(lambda: client.get(f"/api/v1/nodes/{node}").status_code == 200, what="node")
    client.post(f"/api/v1/namespaces/{ns}/pods", json=pod(ns, "first", node, ["true"], "busybox:1.36", "Never"))
    wait_for(lambda: ("Pulled" in dict(events(client, ns, "first"))), what="Pulled")
    messages = dict(events(client, ns, "first"))
    assert messages["Pulling"] == 'Pulling image "busybox:1.36"'
    assert messages["Pulled"].startswith('Successfully pulled image "busybox:1.36" in ')
    assert messages["Pulled"].endswith(" including waiting). Image size: 4261574 bytes.")
    items = client.get(f"/api/v1/namespaces/{ns}/events", params={"fieldSelector": "involvedObject.name=first"})
    assert {e["involvedObject"].get("fieldPath") for e in items.json()["items"]} == {"spec.containers{main}"}

    def node_images() -> dict[str, int]:
        images = client.get(f"/api/v1/nodes/{node}").json()["status"].get("images") or []
        return {name: image["sizeBytes"] for image in images for name in image["names"]}

    assert wait_for(lambda: node_images().get("docker.io/library/busybox:1.36"), what="status.images") == 4261574
    client.post(f"/api/v1/namespaces/{ns}/pods", json=pod(ns, "second", node, ["true"], "busybox:1.36", "Never"))
    wait_for(lambda: "Pulled" in dict(events(client, ns, "second")), what="Pulled")
    assert dict(events(client, ns, "second"))["Pulled"] == 'Container image "busybox:1.36" already present on machine'
    assert "Pulling" not in dict(events(client, ns, "second"))


def test_unknown_image_err_image_pull_then_back_off(client: httpx.Client, ns: str, kubelet: KubeletProcess) -> None:
    client.post(f"/api/v1/namespaces/{ns}/pods", json=pod(ns, "noimg", f"{ns}-node", ["true"], "no-such-image:1.0"))
    seen: set[str] = set()

    def both_reasons() -> bool:
        seen.add(container_status(client, ns, "noimg").get("state", {}).get("waiting", {}).get("reason", ""))
        return {"ErrImagePull", "ImagePullBackOff"} <= seen

    wait_for(both_reasons, what="ErrImagePull and ImagePullBackOff")
    reasons = [reason for reason, _ in events(client, ns, "noimg")]
    assert {"Pulling", "Failed", "BackOff"} <= set(reasons)
    assert any(m.startswith('Failed to pull image "no-such-image:1.0": ') for _, m in events(client, ns, "noimg"))
    assert get_pod(client, ns, "noimg")["status"]["phase"] == "Pending"


def test_never_pull_policy_without_the_image(client: httpx.Client, ns: str, kubelet: KubeletProcess) -> None:
    body = pod(ns, "never", f"{ns}-node", ["true"], "python:3.99", imagePullPolicy="Never")
    client.post(f"/api/v1/namespaces/{ns}/pods", json=body)
    waiting = wait_for(lambda: container_status(client, ns, "never").get("state", {}).get("waiting", {})
                       .get("reason") == "ErrImageNeverPull" and container_status(client, ns, "never"),
                       what="ErrImageNeverPull")
    assert waiting["state"]["waiting"]["message"] == \
        'Container image "python:3.99" is not present with pull policy of Never'


# --- secrets ---------------------------------------------------------------------------------------------------
def test_pod_reads_a_secret_through_env_and_a_volume(client: httpx.Client, kubectl: Kubectl, ns: str,
                                                     kubelet: KubeletProcess) -> None:
    node = f"{ns}-node"
    body = pod(ns, "reader", node, ["sh", "-c", "echo env=$PASSWORD $DB_user; echo file=$(cat /etc/creds/password); "
                                                "echo item=$(cat /etc/item/u.txt); sleep 600"],
               env=[{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}],
               envFrom=[{"secretRef": {"name": "db"}, "prefix": "DB_"}],
               volumeMounts=[{"name": "creds", "mountPath": "/etc/creds"}, {"name": "item", "mountPath": "/etc/item"}])
    body["spec"]["volumes"] = [{"name": "creds", "secret": {"secretName": "db"}},
                               {"name": "item", "secret": {"secretName": "db", "items": [{"key": "user",
                                                                                          "path": "u.txt"}]}}]
    assert client.post(f"/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    # No secret yet: the volume cannot be set up (FailedMount), and Kubernetes' words for it.
    wait_for(lambda: ("FailedMount", 'MountVolume.SetUp failed for volume "creds" : secret "db" not found')
             in events(client, ns, "reader"), what="FailedMount")
    kubectl("-n", ns, "create", "secret", "generic", "db", "--from-literal=password=s3cr3t",
            "--from-literal=user=admin")
    wait_for(lambda: running(client, ns, "reader"), what="reader running")
    expected = "env=s3cr3t admin\nfile=s3cr3t\nitem=admin\n"
    wait_for(lambda: kubectl("-n", ns, "logs", "reader").stdout == expected, what="the secret in the logs")


def test_missing_secret_is_create_container_config_error(client: httpx.Client, ns: str,
                                                         kubelet: KubeletProcess) -> None:
    env = [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "absent", "key": "k"}}}]
    client.post(f"/api/v1/namespaces/{ns}/pods", json=pod(ns, "noenv", f"{ns}-node", ["true"], env=env))
    waiting = wait_for(lambda: (w := container_status(client, ns, "noenv").get("state", {}).get("waiting", {}))
                       .get("reason") == "CreateContainerConfigError" and w, what="CreateContainerConfigError")
    assert waiting == {"reason": "CreateContainerConfigError", "message": 'secret "absent" not found'}
    assert ("Failed", 'Error: secret "absent" not found') in events(client, ns, "noenv")


# --- exec ------------------------------------------------------------------------------------------------------
def test_kubectl_exec(client: httpx.Client, kubectl: Kubectl, ns: str, kubelet: KubeletProcess) -> None:
    env = [{"name": "GREETING", "value": "hello"}]
    client.post(f"/api/v1/namespaces/{ns}/pods", json=pod(ns, "box", f"{ns}-node", ["sleep", "600"], env=env))
    wait_for(lambda: running(client, ns, "box"), what="Running")
    assert kubectl("exec", "box", "-n", ns, "--", "echo", "hi").stdout == "hi\n"
    shell = kubectl("exec", "box", "-n", ns, "--", "sh", "-c", "echo $GREETING $HOSTNAME; echo err >&2; exit 3",
                    check=False)
    assert (shell.returncode, shell.stdout) == (3, "hello box\n")
    assert "err" in shell.stderr
    assert kubectl("exec", "-i", "box", "-n", ns, "--", "cat", input="line one\nline two\n").stdout == \
        "line one\nline two\n"
    missing = kubectl("exec", "box", "-n", ns, "--", "no-such-command", check=False)
    assert missing.returncode != 0 and "executable file not found" in missing.stderr


V4_CLIENT = """
import sys
from kubernetes import client as k8s
from kubernetes.stream import stream
config = k8s.Configuration()
config.host = sys.argv[1]
with k8s.ApiClient(config) as api:
    resp = stream(k8s.CoreV1Api(api).connect_get_namespaced_pod_exec, "v4", sys.argv[2],
                  command=["sh", "-c", "echo four; exit 4"], stderr=True, stdin=False, stdout=True, tty=False,
                  _preload_content=False)
    resp.run_forever(timeout=20)
    print(repr(resp.read_stdout()), resp.returncode)
    resp.close()
"""


def test_exec_v4_with_the_python_client(api_url: str, client: httpx.Client, ns: str,
                                        kubelet: KubeletProcess) -> None:
    """The kubernetes Python client speaks ``v4.channel.k8s.io`` (run apart: it leaves sockets to the GC)."""
    client.post(f"/api/v1/namespaces/{ns}/pods", json=pod(ns, "v4", f"{ns}-node", ["sleep", "600"]))
    wait_for(lambda: running(client, ns, "v4"), what="Running")
    result = subprocess.run([sys.executable, "-c", V4_CLIENT, api_url, ns], capture_output=True, text=True,
                            timeout=60, check=True)
    assert result.stdout == "'four\\n' 4\n"


# --- kubelet restart -------------------------------------------------------------------------------------------
def test_killed_kubelet_adopts_its_containers(client: httpx.Client, kubectl: Kubectl, ns: str,
                                              kubelet: KubeletProcess) -> None:
    marker = f"sleep 6{os.getpid() % 1000:03d}"
    client.post(f"/api/v1/namespaces/{ns}/pods",
                json=pod(ns, "keep", f"{ns}-node", ["sh", "-c", f"echo started; exec {marker}"]))
    wait_for(lambda: running(client, ns, "keep"), what="Running")
    line = wait_for(lambda: kubectl("logs", "keep", "-n", ns).stdout, what="the container's log")
    # The host's pid of the container (inside a Linux container it is PID 1 of its own namespace).
    pid = json.loads(next((kubelet.root / "containers").glob("*/pid.json")).read_text())["pid"]
    before = container_status(client, ns, "keep")
    kubelet.kill()
    kubelet.start()
    wait_for(lambda: kubectl("exec", "keep", "-n", ns, "--", "true", check=False).returncode == 0,
             what="the restarted kubelet to serve exec")
    assert Path(f"/proc/{pid}").exists()
    same = [p for p in Path("/proc").glob("[0-9]*") if _cmdline(p) == marker]
    assert [int(p.name) for p in same] == [pid]  # neither duplicated nor lost
    after = get_pod(client, ns, "keep")
    assert after["status"]["phase"] == "Running"
    assert container_status(client, ns, "keep")["restartCount"] == 0
    assert container_status(client, ns, "keep")["state"] == before["state"]
    assert kubectl("logs", "keep", "-n", ns).stdout == line  # started once


def test_container_that_exits_while_the_kubelet_is_down(client: httpx.Client, ns: str,
                                                        kubelet: KubeletProcess) -> None:
    client.post(f"/api/v1/namespaces/{ns}/pods",
                json=pod(ns, "gone", f"{ns}-node", ["sleep", "600"], restart="Never"))
    wait_for(lambda: running(client, ns, "gone"), what="Running")
    kubelet.kill()
    pids = [json.loads(p.read_text())["pid"] for p in (kubelet.root / "containers").glob("*/pid.json")]
    assert len(pids) == 1
    os.kill(pids[0], signal.SIGKILL)  # SIGKILL: a Linux container's PID 1 ignores SIGTERM without a handler
    kubelet.start()
    wait_for(lambda: get_pod(client, ns, "gone")["status"]["phase"] == "Failed", what="Failed")
    terminated = container_status(client, ns, "gone")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "Error")


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


# --- hollow nodes ----------------------------------------------------------------------------------------------
def test_hollow_nodes(api_url: str, client: httpx.Client, ns: str, tmp_path: Path) -> None:
    prefix = f"{ns}-hollow-"
    hollow = KubeletProcess(api_url, "", tmp_path / "hollow", tmp_path / "hollow.log",
                            ["--hollow", "--count", "50", "--node-name-prefix", prefix])
    hollow.start()
    try:
        def hollow_nodes() -> list[dict[str, Any]]:
            items = client.get("/api/v1/nodes", params={"labelSelector": "kubelab.io/hollow=true"}).json()["items"]
            return [n for n in items if n["metadata"]["name"].startswith(prefix)]

        wait_for(lambda: len(hollow_nodes()) == 50, what="50 hollow nodes")
        assert all({c["type"]: c["status"] for c in n["status"]["conditions"]}["Ready"] == "True"
                   for n in hollow_nodes())
        leases = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{prefix}"
        first = wait_for(lambda: client.get(f"{leases}49").json().get("spec", {}).get("renewTime"), what="lease")
        wait_for(lambda: client.get(f"{leases}49").json()["spec"]["renewTime"] != first, what="lease renewal")
        wait_for(lambda: client.get(f"{leases}0").json()["spec"]["renewTime"] != first, what="lease renewal")
        for i in (0, 17, 49):
            client.post(f"/api/v1/namespaces/{ns}/pods", json=pod(ns, f"p{i}", f"{prefix}{i}", ["sleep", "600"]))
        for i in (0, 17, 49):
            wait_for(lambda i=i: running(client, ns, f"p{i}"), what=f"hollow pod p{i} Running")
        status = get_pod(client, ns, "p17")["status"]
        assert status["containerStatuses"][0]["ready"] and status["podIP"] == "10.64.0.17"
        assert not (tmp_path / "hollow" / "containers").exists()  # nothing ran
        client.delete(f"/api/v1/namespaces/{ns}/pods/p0")
        wait_for(lambda: client.get(f"/api/v1/namespaces/{ns}/pods/p0").status_code == 404, what="deletion")
    finally:
        hollow.stop()
        for i in range(50):
            client.delete(f"/api/v1/nodes/{prefix}{i}")
