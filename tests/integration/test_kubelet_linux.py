"""The linux runtime as a user meets it: a pod's root is its image's, its hostname its name, its processes its own,
its memory limit enforced and its securityContext honoured — a real kubelet, real namespaces, overlayfs and
cgroups, driven by the real kubectl. Skipped where the host cannot create namespaces or mount overlayfs (not root,
no static busybox...), with the reason."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import ROOT, Kubectl
from kubelet.images import ImageStore
from kubelet.rootfs import static_busybox
from kubelet.runtime.cgroups import Cgroups
from kubelet.runtime.cri import ContainerMeta, SandboxConfig
from kubelet.runtime.leftovers import clean
from kubelet.runtime.linux import LinuxRuntime, unavailable
from kubelet.runtime.process import ContainerProcess, start_ticks
from support.kubelet import Node, create_pod, node_runtime, running_node
from support.wait import wait_for


@pytest.fixture(scope="module")
def node(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    root = tmp_path_factory.mktemp("linux-kubelet")
    why = unavailable(root / "probe")
    if why is not None:
        pytest.skip(f"this host cannot run Linux containers: {why}")
    name = f"linux-{uuid.uuid4().hex[:10]}"
    with running_node(api_url, name, root, runtime="linux") as node:
        yield node


def _status(api_url: str, ns: str, name: str) -> dict[str, Any]:
    return dict(httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/{name}").json().get("status") or {})


def _exec(kubectl: Kubectl, ns: str, pod: str, *command: str, check: bool = True) -> str:
    return kubectl("exec", "-n", ns, pod, "--", *command, check=check).stdout


def test_node_reports_the_linux_runtime(api_url: str, node: Node) -> None:
    assert node_runtime(api_url, node.name) == "linux"


def test_root_is_the_images_and_cp_lands_inside(kubectl: Kubectl, api_url: str, ns: str, node: Node,
                                                tmp_path: Path) -> None:
    """``ls /`` shows busybox's tree, not the host's; ``kubectl cp`` (tar in the container) writes into the pod's
    own root, so the host's /tmp does not get the file; the container's ID names the linux runtime."""
    create_pod(api_url, ns, node, "rootfs", {"name": "main", "command": ["sleep", "3600"]})
    listing = _exec(kubectl, ns, "rootfs", "ls", "/").split()
    assert {"bin", "etc", "proc", "tmp", "usr"} <= set(listing)
    assert "work" not in listing and "root" in listing
    assert _exec(kubectl, ns, "rootfs", "sh", "-c", "test -e /work/wt-linux || echo absent").strip() == "absent"
    marker = f"kubelab-cp-{uuid.uuid4().hex}"
    source = tmp_path / "f.txt"
    source.write_text("copied\n")
    kubectl("cp", str(source), f"{ns}/rootfs:/tmp/{marker}")
    assert _exec(kubectl, ns, "rootfs", "cat", f"/tmp/{marker}") == "copied\n"
    assert not Path(f"/tmp/{marker}").exists()
    status = _status(api_url, ns, "rootfs")
    assert status["containerStatuses"][0]["containerID"].startswith("linux://")


def test_hostname_and_processes_are_the_pods(kubectl: Kubectl, api_url: str, ns: str, node: Node) -> None:
    """The hostname is the pod's name; ``ps`` shows the container's own processes, PID 1 its command; with
    ``shareProcessNamespace`` the containers see each other's."""
    create_pod(api_url, ns, node, "named", {"name": "main", "command": ["sleep", "3600"]})
    assert _exec(kubectl, ns, "named", "hostname").strip() == "named"
    assert _exec(kubectl, ns, "named", "cat", "/etc/hostname").strip() == "named"
    ps = _exec(kubectl, ns, "named", "ps", "-o", "pid,args").splitlines()[1:]
    commands = [line.split(None, 1) for line in ps]
    assert commands[0] == ["1", "sleep 3600"], ps
    assert all("kubelet" not in c[1] and "etcd" not in c[1] for c in commands), ps
    assert len(commands) <= 3, ps  # sleep, ps (and the shell kubectl may not start)


def test_memory_hog_is_oom_killed(api_url: str, ns: str, node: Node) -> None:
    """An allocation over ``limits.memory`` ends as ``OOMKilled`` with exit code 137, as on Kubernetes."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hog", "namespace": ns},
            "spec": {"nodeName": node.name, "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "hog", "image": "python",
                                     "command": ["python3", "-c", "a = bytearray(300 * 1024 * 1024); print(len(a))"],
                                     "resources": {"limits": {"memory": "64Mi"}}}]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    wait_for(lambda: _status(api_url, ns, "hog").get("phase") == "Failed", what="the hog Failed")
    terminated = _status(api_url, ns, "hog")["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)


def test_security_context(kubectl: Kubectl, api_url: str, ns: str, node: Node) -> None:
    """runAsUser and fsGroup show in ``id``; readOnlyRootFilesystem refuses a write outside the volumes;
    allowPrivilegeEscalation false sets no_new_privs; a non-root user holds no capabilities."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "secure", "namespace": ns},
            "spec": {"nodeName": node.name, "terminationGracePeriodSeconds": 1,
                     "securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000},
                     "volumes": [{"name": "scratch", "emptyDir": {}}],
                     "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"],
                                     "volumeMounts": [{"name": "scratch", "mountPath": "/data"}],
                                     "securityContext": {"readOnlyRootFilesystem": True,
                                                         "allowPrivilegeEscalation": False}}]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    wait_for(lambda: _status(api_url, ns, "secure").get("phase") == "Running", what="secure Running")
    ident = _exec(kubectl, ns, "secure", "id")
    assert "uid=1000" in ident and "gid=3000" in ident and "2000" in ident, ident
    refused = kubectl("exec", "-n", ns, "secure", "--", "touch", "/x", check=False)
    assert refused.returncode != 0 and "Read-only file system" in refused.stderr, refused
    _exec(kubectl, ns, "secure", "sh", "-c", "echo ok > /data/f")
    assert _exec(kubectl, ns, "secure", "cat", "/data/f") == "ok\n"
    status = _exec(kubectl, ns, "secure", "cat", "/proc/self/status")
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    assert fields["NoNewPrivs"].strip() == "1" and int(fields["CapEff"].strip(), 16) == 0


def test_volumes_mount_at_their_path_read_only_and_sub_path(kubectl: Kubectl, api_url: str, ns: str,
                                                            node: Node) -> None:
    """Two containers share an emptyDir at their own mountPaths; ``readOnly`` refuses writes; ``subPath``
    mounts a directory of the volume."""
    mounts = [{"name": "shared", "mountPath": "/out"}]
    reader = [{"name": "shared", "mountPath": "/in", "readOnly": True},
              {"name": "shared", "mountPath": "/sub", "subPath": "part"}]
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "vols", "namespace": ns},
            "spec": {"nodeName": node.name, "terminationGracePeriodSeconds": 1,
                     "volumes": [{"name": "shared", "emptyDir": {}}],
                     "containers": [
                         {"name": "writer", "image": "busybox", "volumeMounts": mounts,
                          "command": ["sh", "-c", "mkdir -p /out/part && echo hi > /out/part/x && sleep 3600"]},
                         {"name": "reader", "image": "busybox", "volumeMounts": reader, "command": ["sleep", "3600"]}]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    wait_for(lambda: _status(api_url, ns, "vols").get("phase") == "Running", what="vols Running")
    wait_for(lambda: kubectl("exec", "-n", ns, "vols", "-c", "reader", "--", "cat", "/sub/x",
                             check=False).stdout == "hi\n", what="the writer's file under the subPath")
    assert kubectl("exec", "-n", ns, "vols", "-c", "reader", "--", "cat", "/in/part/x").stdout == "hi\n"
    refused = kubectl("exec", "-n", ns, "vols", "-c", "reader", "--", "touch", "/in/y", check=False)
    assert refused.returncode != 0 and "Read-only file system" in refused.stderr


def test_pod_deletion_removes_its_sandbox_and_cgroups(api_url: str, ns: str, node: Node) -> None:
    """Once a pod is gone, its pause process and its cgroups are gone too."""
    create_pod(api_url, ns, node, "gone", {"name": "main", "command": ["sleep", "3600"]})
    uid = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/gone").json()["metadata"]["uid"]
    sandbox = node.root / "root" / "sandboxes" / uid
    pause = json.loads((sandbox / "pid.json").read_text())["pid"]
    cgroups = Cgroups(node.name).pod_dirs(uid)
    assert cgroups and all(d.is_dir() for d in cgroups)
    httpx.delete(f"{api_url}/api/v1/namespaces/{ns}/pods/gone")
    wait_for(lambda: not sandbox.exists() and not any(d.exists() for d in cgroups), what="sandbox and cgroups gone")
    wait_for(lambda: start_ticks(pause) is None, what="the pause process gone")  # killed, and reaped



def _pod_leftovers(api_url: str, ns: str, node: Node, pod: str) -> tuple[list[int], list[Path]]:
    """The pod's pause and container pids and its cgroups, all there while it runs."""
    uid = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/{pod}").json()["metadata"]["uid"]
    root = node.root / "root"
    containers = [d for d in root.glob("containers/*") if json.loads((d / "meta.json").read_text())["pod_uid"] == uid]
    pids = [json.loads(p.read_text())["pid"] for p in [root / "sandboxes" / uid / "pid.json",
                                                         *(d / "pid.json" for d in containers)]]
    cgroups = Cgroups(node.name).pod_dirs(uid)
    assert len(pids) == 2 and all(start_ticks(p) is not None for p in pids)
    assert cgroups and all(d.is_dir() for d in cgroups)
    return pids, cgroups


def test_a_stopped_kubelet_leaves_nothing_and_clean_removes_what_a_killed_one_left(
        api_url: str, ns: str, node: Node, tmp_path: Path) -> None:
    """SIGTERM: the kubelet stops its pods, their pause processes and cgroups go with them. SIGKILL: they run on
    (as under a real kubelet), and ``leftovers.clean`` of its root directory removes them — a test harness's
    clean-up, which touches only that kubelet's pods (found by UID)."""
    for d in ("stopped", "killed"):
        (tmp_path / d).mkdir()
    with running_node(api_url, f"stop-{uuid.uuid4().hex[:8]}", tmp_path / "stopped", runtime="linux") as stopped, \
            running_node(api_url, f"kill-{uuid.uuid4().hex[:8]}", tmp_path / "killed", runtime="linux") as killed:
        create_pod(api_url, ns, stopped, "stopped", {"name": "main", "command": ["sleep", "3600"]})
        create_pod(api_url, ns, killed, "killed", {"name": "main", "command": ["sleep", "3600"]})
        create_pod(api_url, ns, node, "bystander", {"name": "main", "command": ["sleep", "3600"]})
        stopped_pids, stopped_cgroups = _pod_leftovers(api_url, ns, stopped, "stopped")
        killed_pids, killed_cgroups = _pod_leftovers(api_url, ns, killed, "killed")
        bystander_pids, bystander_cgroups = _pod_leftovers(api_url, ns, node, "bystander")
        assert stopped.kubelet.stop() == 0
        assert not any(d.exists() for d in stopped_cgroups)
        wait_for(lambda: all(start_ticks(p) is None for p in stopped_pids), what="the stopped kubelet's pod gone")
        killed.kubelet.kill()
        assert all(start_ticks(p) is not None for p in killed_pids) and all(d.is_dir() for d in killed_cgroups)
        uid = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/killed").json()["metadata"]["uid"]
        assert clean(killed.root / "root") == [uid]
        assert not any(d.exists() for d in killed_cgroups)
        assert not list((killed.root / "root" / "sandboxes").iterdir())
        wait_for(lambda: all(start_ticks(p) is None for p in killed_pids), what="the killed kubelet's pod gone")
    assert all(start_ticks(p) is not None for p in bystander_pids) and all(d.is_dir() for d in bystander_cgroups)

def _layer(files: dict[str, bytes | str]) -> bytes:
    """A layer tarball: ``path: bytes`` is a file (mode 755), ``path: "->target"`` a symlink."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path, content in files.items():
            info = tarfile.TarInfo(path)
            if isinstance(content, str):
                info.type, info.linkname = tarfile.SYMTYPE, content.removeprefix("->")
                tar.addfile(info)
            else:
                info.size, info.mode = len(content), 0o755
                tar.addfile(info, io.BytesIO(content))
    return out.getvalue()


def _docker_save(path: Path, tag: str, config: dict[str, Any], layers: list[bytes]) -> None:
    """A ``docker save`` tarball: manifest.json, the config blob and one directory per layer."""
    config_body = json.dumps({"architecture": "amd64", "os": "linux", "config": config}).encode()
    config_name = hashlib.sha256(config_body).hexdigest() + ".json"
    names = [f"{hashlib.sha256(layer).hexdigest()}/layer.tar" for layer in layers]
    manifest = json.dumps([{"Config": config_name, "RepoTags": [tag], "Layers": names}]).encode()
    with tarfile.open(path, "w") as tar:
        for name, body in [("manifest.json", manifest), (config_name, config_body), *zip(names, layers, strict=False)]:
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))


def test_loaded_image_runs_with_its_own_entrypoint(api_url: str, ns: str, node: Node, tmp_path: Path) -> None:
    """``kubelab image load`` of a ``docker save`` tarball the test builds (a static busybox, a script, a second
    layer whose whiteout deletes a file of the first): the Node lists it in ``status.images``, and a pod runs its
    Entrypoint/Cmd with its Env, WorkingDir and User, on a root without the deleted file."""
    busybox = static_busybox()
    assert busybox is not None
    base = _layer({"bin/busybox": Path(busybox).read_bytes(), "bin/sh": "->/bin/busybox",
                   "app/hello.sh": b"echo $GREETING from $(pwd) as $(id -u); ls /app; cat /etc/motd\n",
                   "app/old.txt": b"deleted above\n", "etc/motd": b"motd of layer one\n"})
    top = _layer({"app/.wh.old.txt": b"", "etc/motd": b"motd of layer two\n", "app/new.txt": b"added\n"})
    tag = f"example.com/kubelab/hello:{uuid.uuid4().hex[:8]}"
    archive = tmp_path / "hello.tar"
    _docker_save(archive, tag, {"Entrypoint": ["/bin/sh"], "Cmd": ["/app/hello.sh"], "Env": ["GREETING=hi"],
                                "WorkingDir": "/app", "User": "1000"}, [base, top])
    done = subprocess.run([sys.executable, "-m", "kubelab", "image", "load", str(archive),
                           "--root-dir", str(node.root / "root")], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and f'Image: "{tag}" loaded' in done.stdout, done
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "loaded", "namespace": ns},
            "spec": {"nodeName": node.name, "restartPolicy": "Never",
                     "containers": [{"name": "main", "image": tag, "imagePullPolicy": "IfNotPresent"}]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    wait_for(lambda: _status(api_url, ns, "loaded").get("phase") == "Succeeded", what="the loaded image's pod done")
    logs = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/loaded/log").text
    assert logs.splitlines() == ["hi from /app as 1000", "hello.sh", "new.txt", "motd of layer two"], logs

    def listed() -> bool:
        images = httpx.get(f"{api_url}/api/v1/nodes/{node.name}").json()["status"].get("images") or []
        return any(tag in image["names"] for image in images)
    wait_for(listed, timeout=30, what="the loaded image in the Node's status.images")


def test_shared_process_namespace_and_debug_target(kubectl: Kubectl, api_url: str, ns: str, node: Node) -> None:
    """``shareProcessNamespace``: each container's ``ps`` shows the other's processes, the sandbox as PID 1; an
    ephemeral container with ``targetContainerName`` (``kubectl debug --target``) sees its target's."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "shared", "namespace": ns},
            "spec": {"nodeName": node.name, "terminationGracePeriodSeconds": 1, "shareProcessNamespace": True,
                     "containers": [{"name": "a", "image": "busybox", "command": ["sleep", "3601"]},
                                    {"name": "b", "image": "busybox", "command": ["sleep", "3602"]}]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    wait_for(lambda: _status(api_url, ns, "shared").get("phase") == "Running", what="shared Running")
    ps = kubectl("exec", "-n", ns, "shared", "-c", "a", "--", "ps", "-o", "pid,args").stdout
    assert "sleep 3601" in ps and "sleep 3602" in ps and "\n    1 " in ps, ps

    create_pod(api_url, ns, node, "target", {"name": "main", "command": ["sleep", "3603"]})
    url = f"{api_url}/api/v1/namespaces/{ns}/pods/target/ephemeralcontainers"
    pod = httpx.get(url).json()
    pod["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox", "targetContainerName": "main",
                                           "command": ["ps", "-o", "pid,args"]}]
    assert httpx.put(url, json=pod).status_code == 200

    def debugger_log() -> str:
        resp = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/target/log", params={"container": "debugger"})
        return resp.text if resp.status_code == 200 and "sleep" in resp.text else ""
    log = wait_for(debugger_log, what="the debugger's ps")
    assert "    1 sleep 3603" in log, log


def test_copy_of_the_image_where_there_is_no_overlayfs(tmp_path: Path) -> None:
    """Without overlayfs each container runs on a copy of its image's tree: its writes stay in its copy."""
    why = unavailable(tmp_path / "probe")
    if why is not None:
        pytest.skip(f"this host cannot run Linux containers: {why}")
    store = ImageStore(tmp_path / "images")
    runtime = LinuxRuntime(tmp_path, store, f"copy-{uuid.uuid4().hex[:8]}", overlay=False)
    pod = {"metadata": {"name": "copied", "namespace": "default", "uid": uuid.uuid4().hex}, "spec": {}}
    meta = ContainerMeta(pod["metadata"]["uid"], "default", "copied", sandbox=SandboxConfig.from_pod(pod, "127.0.0.1"))
    container = {"name": "main", "image": "busybox", "command": ["sh", "-c", "echo mine > /tmp/f; cat /proc/mounts"]}

    async def run() -> ContainerProcess:
        started = await runtime.start(container, tmp_path / "main", {}, tmp_path / "main.log", meta)
        assert isinstance(started, ContainerProcess)
        assert await started.wait() == 0
        return started
    try:
        (tmp_path / "main").mkdir()
        done = asyncio.run(run())
        log = (tmp_path / "main.log").read_text()
        assert " / " in log and "overlay" not in log, log
        assert (done.dir / "rootfs" / "tmp" / "f").read_text() == "mine\n"
        assert not (store.root / "rootfs" / "busybox" / "tmp" / "f").exists()
    finally:
        runtime.remove_pods(set())


def test_termination_message(api_url: str, ns: str, node: Node) -> None:
    """What a container writes to /dev/termination-log is its terminated state's ``message``."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bye", "namespace": ns},
            "spec": {"nodeName": node.name, "restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox",
                                     "command": ["sh", "-c", "echo disk full > /dev/termination-log; exit 3"]}]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    wait_for(lambda: _status(api_url, ns, "bye").get("phase") == "Failed", what="bye Failed")
    terminated = _status(api_url, ns, "bye")["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"], terminated["message"]) == (3, "Error", "disk full\n")


def test_termination_message_falls_back_to_the_log(api_url: str, ns: str, node: Node) -> None:
    """``FallbackToLogsOnError``: a failed container that wrote no termination message gets its log's end."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "logmsg", "namespace": ns},
            "spec": {"nodeName": node.name, "restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", "echo oops; exit 1"],
                                     "terminationMessagePolicy": "FallbackToLogsOnError"}]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    wait_for(lambda: _status(api_url, ns, "logmsg").get("phase") == "Failed", what="logmsg Failed")
    assert _status(api_url, ns, "logmsg")["containerStatuses"][0]["state"]["terminated"]["message"] == "oops\n"


class _Plugin:
    """A network plugin that only records what the runtime tells it (``linux.PodNetwork``)."""

    isolated = True

    def __init__(self) -> None:
        self.netns: list[str | None] = []
        self.removed: list[str] = []

    def setup(self, pod_uid: str, sandbox: SandboxConfig, netns: str | None) -> list[str]:
        self.netns.append(netns)
        return []

    def teardown(self, pod_uid: str) -> None:
        self.removed.append(pod_uid)


def test_a_network_plugin_gets_the_sandboxs_own_network_namespace(tmp_path: Path) -> None:
    """With an ``isolated`` network plugin the sandbox holds a network namespace of its own, which the plugin is
    given before the container starts and the container joins (only ``lo`` there)."""
    why = unavailable(tmp_path / "probe")
    if why is not None:
        pytest.skip(f"this host cannot run Linux containers: {why}")
    plugin = _Plugin()
    runtime = LinuxRuntime(tmp_path, ImageStore(tmp_path / "images"), f"net-{uuid.uuid4().hex[:8]}", network=plugin)
    uid = uuid.uuid4().hex
    pod = {"metadata": {"name": "netns", "namespace": "default", "uid": uid}, "spec": {}}
    meta = ContainerMeta(uid, "default", "netns", sandbox=SandboxConfig.from_pod(pod, "127.0.0.1"))
    container = {"name": "main", "image": "busybox",
                 "command": ["sh", "-c", "ls /sys/class/net; readlink /proc/self/ns/net"]}

    async def run() -> None:
        started = await runtime.start(container, tmp_path / "main", {}, tmp_path / "main.log", meta)
        assert await started.wait() == 0
    try:
        (tmp_path / "main").mkdir()
        asyncio.run(run())
        netns = plugin.netns[0]
        assert netns is not None and netns.endswith("/ns/net")
        lines = [line.split(" ", 3)[3] for line in (tmp_path / "main.log").read_text().splitlines()]
        assert lines[0] == "lo", lines
        assert lines[1] != os.readlink("/proc/self/ns/net")
    finally:
        runtime.remove_pods(set())
    assert plugin.removed == [uid]


def test_proc_knobs_are_read_only_unless_privileged(kubectl: Kubectl, api_url: str, ns: str, node: Node) -> None:
    """As runc: a root container cannot write the host's sysctls (/proc/sys: read-only, as /proc/sysrq-trigger
    where the kernel has one) and /proc/keys reads as /dev/null; a privileged one has them as they are."""
    create_pod(api_url, ns, node, "knobs", {"name": "main", "command": ["sleep", "3600"]})
    refused = kubectl("exec", "-n", ns, "knobs", "--", "sh", "-c",
                      "cat /proc/sys/kernel/hostname > /proc/sys/kernel/hostname", check=False)
    assert refused.returncode != 0 and "Read-only file system" in refused.stderr, refused
    mounts = _exec(kubectl, ns, "knobs", "cat", "/proc/mounts")
    assert " /proc/sys proc ro," in mounts and " /proc/keys " in mounts, mounts
    assert _exec(kubectl, ns, "knobs", "cat", "/proc/keys") == ""
    create_pod(api_url, ns, node, "privileged", {"name": "main", "command": ["sleep", "3600"],
                                                 "securityContext": {"privileged": True}})
    mounts = _exec(kubectl, ns, "privileged", "cat", "/proc/mounts")
    assert " /proc/sys " not in mounts and " /proc/keys " not in mounts, mounts
