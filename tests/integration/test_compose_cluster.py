"""docker-compose.yml runs for real on podman: etcd, the apiserver, the controller-manager, the scheduler and two
kubelets come up as containers (podman-compose, docker-compose.podman.yml over docker-compose.yml, the image
tools/build-image.sh builds from Debian packages), and the walkthrough's ReplicationController applied with kubectl
through the apiserver's published port gets its three pods Running on the compose nodes.

The image is built in set-up (`make image`, .ci/run), never here; without podman, podman-compose or that image the
module is skipped with the reason. Everything the project creates (containers, its network, its volumes) is removed
when the module ends, also when it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import Kubectl
from kubelab.etcd import free_port
from support.wait import wait_for

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "localhost/kubelab:latest"
FILES = ["-f", str(ROOT / "docker-compose.yml"), "-f", str(ROOT / "docker-compose.podman.yml")]
RC = ROOT / "examples" / "01-creation-flow" / "rc-web.yaml"
ENV = {**os.environ, "CONTAINERS_CONF": str(ROOT / "tools" / "podman" / "containers.conf")}


def _podman(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, env=ENV, timeout=timeout)


def _skip_reason() -> str | None:
    if shutil.which("podman") is None or shutil.which("podman-compose") is None:
        return "podman and podman-compose are not installed (Debian: apt-get install podman podman-compose runc)"
    if not Path("/usr/lib/podman/aardvark-dns").exists():
        return ("no aardvark-dns: the compose network cannot resolve service names "
                "(Debian: apt-get install netavark aardvark-dns; tools/podman/containers.conf asks for netavark)")
    if os.geteuid() != 0:
        return "the compose cluster runs on rootful podman (the compose network is a netavark bridge)"
    if _podman("image", "exists", IMAGE).returncode != 0:
        return f"no {IMAGE} image: build it in set-up with `make image` (tools/build-image.sh)"
    return None


SKIP = _skip_reason()
pytestmark = [pytest.mark.kubectl, pytest.mark.skipif(SKIP is not None, reason=SKIP or "")]


def _compose(project: str, port: int, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**ENV, "KUBELAB_API_PORT": f"127.0.0.1:{port}"}
    return subprocess.run(["podman-compose", "-p", project, *FILES, *args], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=timeout)


def _leftovers(project: str) -> list[str]:
    """The project's containers, volumes and network still on the host (podman-compose labels them)."""
    label = f"label=io.podman.compose.project={project}"
    containers = _podman("ps", "-a", "-q", "--filter", label).stdout.split()
    volumes = _podman("volume", "ls", "-q", "--filter", label).stdout.split()
    network = [f"{project}_default"] if _podman("network", "exists", f"{project}_default").returncode == 0 else []
    return containers + volumes + network


def _remove(project: str, port: int) -> None:
    """`podman-compose down -v`, then anything it left (a container it did not know, the network)."""
    _compose(project, port, "down", "-v", timeout=120)
    label = f"label=io.podman.compose.project={project}"
    containers = _podman("ps", "-a", "-q", "--filter", label).stdout.split()
    if containers:
        _podman("rm", "-f", "-v", *containers)
    volumes = _podman("volume", "ls", "-q", "--filter", label).stdout.split()
    if volumes:
        _podman("volume", "rm", "-f", *volumes)
    _podman("network", "rm", "-f", f"{project}_default")


@pytest.fixture(scope="module")
def compose_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The compose cluster's published apiserver URL; the project is torn down when the module ends."""
    project, port = f"kubelab-t{uuid.uuid4().hex[:8]}", free_port()
    logs = tmp_path_factory.mktemp("compose")
    try:
        up = _compose(project, port, "up", "-d", "--no-build", timeout=150)
        (logs / "up.log").write_text(up.stdout + up.stderr)
        assert up.returncode == 0, up.stderr[-3000:]
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _healthy(url), timeout=60, what=f"the compose apiserver at {url} (logs in {logs})")
        yield url
    finally:
        for name in ("etcd", "apiserver", "controller-manager", "scheduler", "node01", "node02"):
            done = _podman("logs", f"{project}_{name}_1")
            (logs / f"{name}.log").write_text(done.stdout + done.stderr)
        _remove(project, port)
        left = _leftovers(project)
        assert not left, f"podman still has {left} of {project}"


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_the_walkthrough_rc_runs_on_the_compose_nodes(compose_api: str, kubectl_bin: str, tmp_path: Path) -> None:
    kubectl = Kubectl(kubectl_bin, compose_api, tmp_path)

    def ready_nodes() -> set[str]:
        nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
        return {n["metadata"]["name"] for n in nodes
                if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))}

    assert wait_for(lambda: ready_nodes() == {"node01", "node02"}, timeout=60, what="node01 and node02 Ready")
    assert kubectl("apply", "-f", str(RC)).stdout.strip() == "replicationcontroller/web created"

    def running() -> list[dict[str, str]] | None:
        pods = json.loads(kubectl("get", "pods", "-l", "app=web", "-o", "json").stdout)["items"]
        phases = [{"node": p["spec"].get("nodeName", ""), "phase": p["status"].get("phase", "")} for p in pods]
        return phases if len(phases) == 3 and all(p["phase"] == "Running" for p in phases) else None

    pods = wait_for(running, timeout=60, what="the three web pods Running")
    assert {p["node"] for p in pods} <= {"node01", "node02"}
    table = kubectl("get", "pods", "-l", "app=web", "-o", "wide").stdout
    assert table.count("Running") == 3, table
