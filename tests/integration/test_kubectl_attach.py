"""``kubectl attach`` and ``kubectl run -i/-it``: a container's own stdin, output and terminal, through the
apiserver's ``pods/{name}/attach`` (websocket from kubectl 1.32, SPDY/3.1 from 1.29) to the kubelet and the
container's shim, against a real kubelet and real processes."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import Kubectl, kubectl_release
from kubelab.etcd import free_port
from support.process import ComponentProcess
from support.wait import wait_for

PROMPT_HINT = b"If you don't see a command prompt"


@pytest.fixture(params=["1.32", "1.29"])  # websockets; SPDY/3.1
def kube(request: pytest.FixtureRequest, api_url: str, tmp_path: Path) -> Kubectl:
    return Kubectl(kubectl_release(request.param), api_url, tmp_path)


class Node:
    """One kubelet, restartable on the same root directory (it adopts its running containers)."""

    def __init__(self, api_url: str, name: str, root: Path) -> None:
        self.api_url, self.name, self.root = api_url, name, root
        self.port = free_port()
        self.kubelet = self._start()

    def _start(self) -> ComponentProcess:
        return ComponentProcess("kubelet", self.api_url, self.root / "kubelet.log", "--port", str(self.port),
                                "--root-dir", str(self.root / "root"), "--node-name", self.name)

    def restart(self, ns: str, pod: str, container: str) -> None:
        """Kill the kubelet (``kill -9``: a stopped kubelet stops its pods) and start it again; wait until it
        serves ``pod`` again (it adopted the pod's container)."""
        self.kubelet.kill()
        self.kubelet = self._start()

        def serving() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{self.port}/containerLogs/{ns}/{pod}/{container}").is_success
            except httpx.TransportError:
                return False
        wait_for(serving, what=f"the restarted kubelet to serve {pod}")

    def overrides(self) -> str:
        """For ``kubectl run --overrides``: there is no scheduler here, the pod names its node."""
        return json.dumps({"spec": {"nodeName": self.name, "terminationGracePeriodSeconds": 1}})


@pytest.fixture(scope="module")
def node(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    node = Node(api_url, f"attach-{uuid.uuid4().hex[:10]}", tmp_path_factory.mktemp("attach-kubelet"))
    try:
        yield node
    finally:
        node.kubelet.stop()
        for state in (node.root / "root" / "containers").glob("*/pid.json"):
            try:
                os.killpg(json.loads(state.read_text())["pid"], signal.SIGKILL)
            except (ProcessLookupError, PermissionError, ValueError):
                pass


def create_pod(api_url: str, ns: str, node: Node, name: str, *containers: dict[str, object]) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"nodeName": node.name, "terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
                     "containers": [{"image": "busybox", **c} for c in containers]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    wait_for(lambda: phase(api_url, ns, name) == "Running", what=f"{name} Running")


def phase(api_url: str, ns: str, name: str) -> str | None:
    resp = httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/{name}")
    return resp.json().get("status", {}).get("phase") if resp.status_code == 200 else None


class Terminal:
    """kubectl on a pseudo-terminal of a known size, as a user's shell runs it."""

    def __init__(self, kube: Kubectl, *args: str, rows: int = 33, cols: int = 91) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(kube.home), "KUBECONFIG": str(kube.home / "none")}
        self.proc = subprocess.Popen([kube.binary, "-s", kube.server, *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        self.output = b""

    def read_until(self, pattern: bytes, timeout: float = 30.0) -> bytes:
        """Output until ``pattern`` appears (the terminal may close first: then the assertion says why)."""
        def seen() -> bool:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.output += os.read(self.master, 65536)
                except OSError:  # EIO: kubectl exited and the terminal closed
                    return True
            return pattern in self.output
        wait_for(seen, timeout, what=f"{pattern!r} on the terminal")
        assert pattern in self.output, self.output.decode(errors="replace")
        return self.output

    def type_until_echoed(self) -> None:
        """Type a probe until the container answers: the attach is up and input reaches it."""
        self.read_until(PROMPT_HINT)
        try:
            wait_for(self._probe, what="the container to answer on the terminal")
        except AssertionError:
            raise AssertionError(f"no answer on the terminal:\n{self.output.decode(errors='replace')}") from None

    def _probe(self) -> bool:
        os.write(self.master, b"echo ready-$((20+22))\r")
        try:
            self.read_until(b"ready-42\r\n", timeout=1.0)
        except AssertionError:
            return False
        return True

    def type(self, text: bytes) -> None:
        os.write(self.master, text)

    def finish(self) -> tuple[int, str]:
        """kubectl's exit code and everything it wrote, once it exits."""
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.output += chunk
        code = self.proc.wait(30)
        os.close(self.master)
        return code, self.output.decode(errors="replace")


def test_run_it_rm_is_an_interactive_shell(kube: Kubectl, ns: str, node: Node) -> None:
    """``kubectl run -it --rm tmp --image=busybox --restart=Never -- sh``: typed lines reach the shell, its
    answers come back on the terminal, ``exit 3`` ends kubectl with code 3 and the pod is deleted."""
    name = f"tmp-{kube.binary[-2:]}"
    term = Terminal(kube, "run", "-it", "--rm", name, "-n", ns, "--image=busybox", "--restart=Never",
                    f"--overrides={node.overrides()}", "--", "sh")
    term.type_until_echoed()
    term.type(b"stty size; echo hi-$((6*7)); exit 3\r")
    code, output = term.finish()
    assert code == 3, output
    assert "33 91" in output and "hi-42" in output
    assert "couldn't attach" not in output
    wait_for(lambda: phase(kube.server, ns, name) is None, what=f"{name} deleted")


def test_run_i_pipes_stdin_and_the_pod_succeeds_after_eof(kube: Kubectl, ns: str, node: Node) -> None:
    """``kubectl run -i t2 -- cat`` with stdin piped: the container reads it (stdinOnce: the end of kubectl's
    stdin is its EOF), the output comes back, and the pod Succeeds."""
    name = f"t2-{kube.binary[-2:]}"
    result = kube("run", "-i", name, "-n", ns, "--image=busybox", "--restart=Never",
                  f"--overrides={node.overrides()}", "--", "cat", input="line one\nline two\n")
    assert result.stdout == "line one\nline two\n", result.stderr
    assert "couldn't attach" not in result.stderr
    assert wait_for(lambda: phase(kube.server, ns, name) == "Succeeded", what=f"{name} Succeeded")
    rm = kube("run", "-i", "--rm", f"{name}-rm", "-n", ns, "--image=busybox", "--restart=Never",
              f"--overrides={node.overrides()}", "--", "cat", input="again\n")
    assert rm.stdout.startswith("again\n") and f'pod "{name}-rm" deleted' in rm.stdout


def test_attach_streams_a_running_containers_output(kube: Kubectl, api_url: str, ns: str, node: Node) -> None:
    """``kubectl attach POD -c C``: the output the container writes from then on, stdout and stderr apart."""
    name = f"ticker-{kube.binary[-2:]}"
    ticking = 'i=0; while true; do i=$((i+1)); echo tick-$i; echo tock-$i >&2; sleep 0.2; done'
    create_pod(api_url, ns, node, name, {"name": "tick", "command": ["sh", "-c", ticking]},
               {"name": "idle", "command": ["sleep", "600"]})
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(kube.home), "KUBECONFIG": str(kube.home / "none")}
    proc = subprocess.Popen([kube.binary, "-s", kube.server, "attach", name, "-c", "tick", "-n", ns],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        assert all(re.fullmatch(rb"tick-\d+\n", line) for line in lines), lines
        numbers = [int(line[5:]) for line in lines]
        assert numbers == list(range(numbers[0], numbers[0] + 3))
        assert any(re.fullmatch(rb"tock-\d+\n", proc.stderr.readline()) for _ in range(5))
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]


def test_attach_it_to_a_tty_container_and_after_a_kubelet_restart(kube: Kubectl, api_url: str, ns: str,
                                                                  node: Node) -> None:
    """``kubectl attach -it`` to a container with ``stdin``/``tty``: its shell on the user's terminal, at the
    terminal's size (resize); the shim serves attach from the container's state directory, so a restarted
    kubelet attaches to the container it adopted."""
    name = f"shell-{kube.binary[-2:]}"
    create_pod(api_url, ns, node, name, {"name": "sh", "command": ["sh"], "stdin": True, "tty": True})
    node.restart(ns, name, "sh")
    term = Terminal(kube, "attach", "-it", name, "-n", ns, rows=40, cols=120)
    term.type_until_echoed()
    term.type(b"stty size; test -t 0 && echo on-a-tty; exit 4\r")
    code, output = term.finish()
    assert code == 0, output  # attach ends with the session; the exit code is the pod's
    assert "40 120" in output and "on-a-tty" in output
    assert wait_for(lambda: phase(api_url, ns, name) == "Failed", what=f"{name} Failed")


def test_attach_errors_are_status_responses(api_url: str, ns: str, node: Node) -> None:
    """Before upgrading, the apiserver checks the request as kube-apiserver's ``streamLocation`` does."""
    create_pod(api_url, ns, node, "two", {"name": "a", "command": ["sleep", "600"]},
               {"name": "b", "command": ["sleep", "600"]})
    headers = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1", "X-Stream-Protocol-Version": "v4.channel.k8s.io"}
    base = f"{api_url}/api/v1/namespaces/{ns}/pods"
    cases = [
        ("two/attach?container=nope&stdout=true", 400, "container nope is not valid for pod two"),
        ("two/attach?stdout=true", 400, "a container name must be specified for pod two, choose one of: [a b]"),
        ("absent/attach?stdout=true", 404, 'pods "absent" not found'),
    ]
    for path, code, message in cases:
        resp = httpx.post(f"{base}/{path}", headers=headers)
        assert (resp.status_code, resp.json()["message"]) == (code, message)
        assert resp.json()["kind"] == "Status"
