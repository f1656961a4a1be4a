"""`kubelab up --apiservers 2`: two apiserver processes on one etcd behind one HTTPS port (SO_REUSEPORT).

As a user checks it: both are supervised and shown by `kubelab status`, the real kubectl works through the
kubeconfig's one server, each process holds a listening socket of that port, connections to it reach both (each
apiserver's own ``apiserver_request_total`` counts some of them), and the second, killed, is restarted on the
shared port. Free ports and an own data dir.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kubeclient.config import load_kubeconfig
from kubelab.api import find_kubectl
from kubelab.etcd import find_etcd, free_port
from kubelab.net import listening_sockets
from kubelab.state import load_state
from support.launcher import assert_nothing_left, kubelab
from support.wait import wait_for

PROBES = 40  # connections to the shared port: all reaching one of two processes has odds of 2**-39


@pytest.fixture()
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data dir that is always brought down, whatever the test did."""
    path = tmp_path / "data"
    yield path
    state = load_state(path)
    if state is not None:
        kubelab("down", "--data-dir", str(path), "--timeout", "2")
        assert_nothing_left(state)


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if m := re.fullmatch(r"socket:\[(\d+)\]", target):
            inodes.add(int(m.group(1)))
    return inodes


def _configmap_gets(port: int) -> float:
    """This apiserver's count of GETs of configmaps, from its own /metrics on its own plain port."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("apiserver_request_total{") and 'resource="configmaps"' in line
               and 'verb="GET"' in line)


def test_up_with_two_apiservers_behind_one_port(data_dir: Path) -> None:
    try:
        find_etcd()
        kubectl = find_kubectl()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    port, secure_port = free_port(), free_port()
    up = kubelab("up", "--detach", "--data-dir", str(data_dir), "--port", str(port), "--secure-port",
                 str(secure_port), "--nodes", "0", "--apiservers", "2", timeout=180)
    assert up.returncode == 0, up.stdout + up.stderr
    assert "2 apiservers" in up.stdout, up.stdout

    status = kubelab("status", "--data-dir", str(data_dir))
    assert status.returncode == 0, status.stdout + status.stderr
    rows = {line.split()[0]: line.split() for line in status.stdout.splitlines()[2:] if line.strip()}
    assert rows["apiserver"][2:4] == [str(port), "ok"], status.stdout
    assert rows["apiserver-2"][3] == "ok" and rows["apiserver-2"][2] not in (str(port), str(secure_port)), rows
    state = load_state(data_dir)
    assert state is not None and state.secure_url == f"https://127.0.0.1:{secure_port}"
    apiservers = {r.name: r for r in state.processes if r.component == "apiserver"}
    assert set(apiservers) == {"apiserver", "apiserver-2"}

    # Each process listens on the one secure port.
    shared = listening_sockets(secure_port)
    assert len(shared) == 2, shared
    for record in apiservers.values():
        assert _socket_inodes(record.pid) & shared, f"{record.name} does not listen on {secure_port}"

    # The real kubectl through the kubeconfig's one server.
    kubeconfig = str(data_dir / "kubeconfig")
    run = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "create", "configmap", "probe",
                          "--from-literal", "k=v"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    got = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "get", "configmap", "probe", "-o",
                          "jsonpath={.data.k}"], capture_output=True, text=True, timeout=60)
    assert (got.returncode, got.stdout) == (0, "v"), got.stderr

    # Fresh connections to the shared port reach both processes.
    before = {name: _configmap_gets(r.port or 0) for name, r in apiservers.items()}
    config = load_kubeconfig(kubeconfig)
    for _ in range(PROBES):
        with httpx.Client(verify=config.ssl_context(), timeout=10) as client:  # a new connection each time
            resp = client.get(f"https://127.0.0.1:{secure_port}/api/v1/namespaces/default/configmaps/probe")
            assert resp.status_code == 200 and resp.json()["data"] == {"k": "v"}, resp.text
    served = {name: _configmap_gets(r.port or 0) - before[name] for name, r in apiservers.items()}
    assert sum(served.values()) >= PROBES and all(count > 0 for count in served.values()), served

    # Each is supervised: apiserver-2 killed is restarted on the same shared port.
    os.kill(apiservers["apiserver-2"].pid, signal.SIGKILL)

    def restarted() -> bool:
        out = kubelab("status", "--data-dir", str(data_dir)).stdout
        row = next((line.split() for line in out.splitlines() if line.startswith("apiserver-2 ")), [])
        return row[3:5] == ["ok", "1"] and len(listening_sockets(secure_port)) == 2

    wait_for(restarted, timeout=90, what="apiserver-2 restarted and listening on the shared port")
    state = load_state(data_dir)
    assert state is not None

    down = kubelab("down", "--data-dir", str(data_dir))
    assert down.returncode == 0, down.stdout + down.stderr
    assert_nothing_left(state)
