"""``kubectl exec`` from releases that speak SPDY/3.1 (1.27–1.29, and 1.31 with its websocket executor switched
off): the apiserver ends SPDY and bridges the streams to the kubelet's websocket (``apiserver.spdy``), against a
real kubelet and pod."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import Kubectl, kubectl_release
from kubelab.etcd import free_port
from support.process import ComponentProcess, kill_containers
from support.wait import wait_for

SPDY_ONLY = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}  # 1.30+ try websockets first unless told not to


class SpdyKubectl(Kubectl):
    def __call__(self, *args: str, input: str | None = None, check: bool = True,
                 env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return super().__call__(*args, input=input, check=check, env={**SPDY_ONLY, **(env or {})}, timeout=timeout)


@pytest.fixture(params=["1.27", "1.29", "1.31"])
def old_kubectl(request: pytest.FixtureRequest, api_url: str, tmp_path: Path) -> Kubectl:
    return SpdyKubectl(kubectl_release(request.param), api_url, tmp_path)


@pytest.fixture(scope="module")
def box(api_url: str, module_ns: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One node's kubelet and a running pod ``box`` on it, shared by the module's tests."""
    root = tmp_path_factory.mktemp("spdy-kubelet")
    node = f"{module_ns}-node"
    kubelet = ComponentProcess("kubelet", api_url, root / "kubelet.log", "--port", str(free_port()), "--root-dir",
                               str(root / "root"), "--node-name", node, "--runtime", "process")
    try:
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "box", "namespace": module_ns},
                "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
                         "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "600"],
                                         "env": [{"name": "GREETING", "value": "hello"}]}]}}
        assert httpx.post(f"{api_url}/api/v1/namespaces/{module_ns}/pods", json=body).status_code == 201
        wait_for(lambda: httpx.get(f"{api_url}/api/v1/namespaces/{module_ns}/pods/box").json()
                 .get("status", {}).get("phase") == "Running", what="box Running")
        yield "box"
    finally:
        kubelet.stop()
        kill_containers(root / "root")


def test_exec_output_exit_code_and_stdin(old_kubectl: Kubectl, module_ns: str, box: str) -> None:
    echo = old_kubectl("exec", box, "-n", module_ns, "--", "echo", "hi")
    assert echo.stdout == "hi\n"
    shell = old_kubectl("exec", box, "-n", module_ns, "--", "sh", "-c", "echo $GREETING; echo err >&2; exit 3",
                        check=False)
    assert (shell.returncode, shell.stdout) == (3, "hello\n")
    assert "err" in shell.stderr.splitlines() and "command terminated with exit code 3" in shell.stderr
    piped = old_kubectl("exec", "-i", box, "-n", module_ns, "--", "cat", input="line one\nline two\n")
    assert piped.stdout == "line one\nline two\n"
    missing = old_kubectl("exec", box, "-n", module_ns, "--", "no-such-command", check=False)
    assert missing.returncode != 0 and "executable file not found" in missing.stderr


def test_errors_come_back_as_status(old_kubectl: Kubectl, module_ns: str, box: str) -> None:
    absent = old_kubectl("exec", "absent", "-n", module_ns, "--", "true", check=False)
    assert absent.returncode == 1 and 'pods "absent" not found' in absent.stderr
    wrong = old_kubectl("exec", box, "-c", "nope", "-n", module_ns, "--", "true", check=False)
    assert wrong.returncode == 1 and "container nope is not valid for pod box" in wrong.stderr


def test_tty_shell_with_resize(old_kubectl: Kubectl, module_ns: str, box: str) -> None:
    """``-it`` needs a terminal: ``script`` gives kubectl one (and with it the resize stream)."""
    if not shutil.which("script"):
        pytest.skip("script(1) is not installed")
    command = f"{old_kubectl.binary} -s {old_kubectl.server} exec -it {box} -n {module_ns} -- sh"
    done = subprocess.run(["script", "-qec", command, "/dev/null"], input="echo in-$((6*7)); exit 4\n",
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ.get("PATH", ""), "HOME": str(old_kubectl.home),
                               "KUBECONFIG": str(old_kubectl.home / "none"), **SPDY_ONLY})
    assert done.returncode == 4, done.stdout + done.stderr
    assert "in-42" in done.stdout
