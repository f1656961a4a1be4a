"""``kubectl attach`` and ``kubectl run -i/-it``: a container's own stdin, output and terminal, through the
apiserver's ``pods/{name}/attach`` (websocket from kubectl 1.32, SPDY/3.1 from 1.29) to the kubelet and the
container's shim, against a real kubelet and real processes."""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import Kubectl, kubectl_release
from support.kubelet import Node, create_pod, phase, running_node
from support.terminal import Terminal
from support.wait import wait_for


@pytest.fixture(params=["1.32", "1.29"])  # websockets; SPDY/3.1
def kube(request: pytest.FixtureRequest, api_url: str, tmp_path: Path) -> Kubectl:
    return Kubectl(kubectl_release(request.param), api_url, tmp_path)


@pytest.fixture(scope="module")
def node(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    with running_node(api_url, f"attach-{uuid.uuid4().hex[:10]}", tmp_path_factory.mktemp("attach-kubelet")) as node:
        yield node


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
