"""`kubelab up/status/down` as a user runs them: real etcd, real processes, real signals.

One test drives the real apiserver. The others use
stand-in component packages put first on PYTHONPATH, so the launcher's own behaviour — start order,
the flags each component gets, kubelet ports and root dirs, health URLs printed in logs, Ctrl-C, leaving
nothing behind — is tested whatever state the real components are in.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml

from kubelab import process
from kubelab.etcd import EtcdServer, find_etcd, free_port
from kubelab.state import ClusterState, load_state
from support.launcher import assert_nothing_left, kubelab
from support.wait import wait_for

ROOT = Path(__file__).resolve().parents[2]


def _etcd_or_skip() -> str:
    try:
        return find_etcd()
    except FileNotFoundError as e:
        pytest.skip(str(e))


class Launcher:
    """A foreground `kubelab up` whose output is read by a thread, so waiting for a line has a timeout."""

    def __init__(self, data_dir: Path, port: int, nodes: int, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kubelab", "up", "--data-dir", str(data_dir), "--port", str(port)]
            + ["--nodes", str(nodes), "--pod-network", "host"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **env},
            cwd=data_dir.parent,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, *texts: str, timeout: float = 60) -> str:
        """The first line containing every text; fails with everything seen so far."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no line with {texts} within {timeout}s:\n{''.join(self.seen)}")
            if line is None:
                pytest.fail(f"kubelab up exited ({self.proc.wait()}) before {texts}:\n{''.join(self.seen)}")
            self.seen.append(line)
            if all(text in line for text in texts):
                return line

    def finish(self, timeout: float = 60) -> str:
        """Wait for the exit; the rest of the output."""
        self.proc.wait(timeout)
        self.reader.join(timeout)
        while (line := self.lines.get_nowait()) is not None:
            self.seen.append(line)
        return "".join(self.seen)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.reader.join(5)
            self.proc.stdout.close()


@contextmanager
def foreground_up(data_dir: Path, nodes: int, env: dict[str, str]) -> Iterator[tuple[Launcher, ClusterState]]:
    """A foreground `kubelab up`, once it is up, with the state it recorded; killed afterwards if still running."""
    launcher = Launcher(data_dir, free_port(), nodes, env)
    try:
        launcher.wait_for("Ctrl-C stops everything")
        state = load_state(data_dir)
        assert state is not None
        yield launcher, state
    finally:
        launcher.kill()


@pytest.fixture()
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data dir that is always brought down, whatever the test did."""
    path = tmp_path / "data"  # not "kubelab": in the cwd it would shadow the package as a namespace package
    yield path
    state = load_state(path)
    if state is not None:
        kubelab("down", "--data-dir", str(path), "--timeout", "2")
        assert_nothing_left(state)


# ---- with the real apiserver ---------------------------------------------------------------------


def test_up_detach_status_down_with_the_real_apiserver(data_dir: Path) -> None:
    _etcd_or_skip()
    port = free_port()
    up = kubelab("up", "--detach", "--data-dir", str(data_dir), "--port", str(port), "--nodes", "0")
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"http://127.0.0.1:{port}" in up.stdout

    r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
    assert (r.status_code, r.text.strip()) == (200, "ok")

    status = kubelab("status", "--data-dir", str(data_dir))
    assert status.returncode == 0, status.stdout + status.stderr
    lines = status.stdout.splitlines()
    assert lines[1].split() == ["COMPONENT", "PID", "PORT", "HEALTH", "RESTARTS", "UPTIME", "LAST", "EXIT"]
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert rows["etcd"][3] == "ok"
    assert rows["apiserver"][2:4] == [str(port), "ok"]
    for name in ("controller-manager", "scheduler", "ui"):  # on kube's ports, found from the URL they print
        assert rows[name][2].isdigit() and rows[name][3] == "ok", rows[name]
    console = re.search(r"web console: (http://127.0.0.1:\d+/)", up.stdout)
    assert console and f"web console: {console.group(1)}" in status.stdout, up.stdout + status.stdout
    assert "Nodes × pods" in httpx.get(console.group(1), timeout=5).text
    watches = wait_for(lambda: [w for w in httpx.get(f"http://127.0.0.1:{port}/debug/watches", timeout=5)
                                .json()["items"] if w["userAgent"].startswith("kubelab-console")] or None,
                       what="the console's watches")
    assert {w["user"] for w in watches} == {"kubelab:console"}  # its own certificate, over HTTPS
    cs = httpx.get(f"http://127.0.0.1:{port}/api/v1/componentstatuses", timeout=10).json()["items"]
    assert [(c["metadata"]["name"], c["conditions"][0]["status"]) for c in cs] == [
        ("controller-manager", "True"), ("etcd-0", "True"), ("scheduler", "True")]

    # kind's default StorageClass, served by the kubelets' local-path provisioner.
    sc = httpx.get(f"http://127.0.0.1:{port}/apis/storage.k8s.io/v1/storageclasses/standard", timeout=5).json()
    assert sc["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert (sc["provisioner"], sc["volumeBindingMode"], sc["reclaimPolicy"]) == (
        "kubelab.io/local-path", "WaitForFirstConsumer", "Delete")

    state = load_state(data_dir)
    assert state is not None
    kubeconfig = yaml.safe_load((data_dir / "kubeconfig").read_text())  # HTTPS, the CA and the admin certificate
    assert state.secure_url is not None and kubeconfig["clusters"][0]["cluster"]["server"] == state.secure_url
    assert set(kubeconfig["users"][0]["user"]) == {"client-certificate-data", "client-key-data"}

    # Secrets are encrypted at rest with the data dir's own key (a file only its owner reads).
    assert (data_dir / "encryption-config.yaml").stat().st_mode & 0o777 == 0o600
    created = httpx.post(f"http://127.0.0.1:{port}/api/v1/namespaces/default/secrets", timeout=10,
                         json={"metadata": {"name": "x"}, "stringData": {"password": "hunter2"}})
    assert created.status_code == 201, created.text
    raw = _etcd_value(state.etcd_url, data_dir / "pki", b"/registry/secrets/default/x")
    assert raw.startswith(b"k8s:enc:aescbc:v1:key1:") and b"hunter2" not in raw and b"aHVudGVyMg" not in raw
    # The audit log is on, with the data dir's policy: the secret's create at Metadata (no body), reads not at all.
    log = data_dir / "logs" / "audit.log"
    audit = wait_for(lambda: [json.loads(line) for line in log.read_text().splitlines()
                              if '"resource":"secrets"' in line] if log.exists() else [], what="the audit log")
    assert {(e["verb"], e["level"], e["stage"]) for e in audit} == {("create", "Metadata", "RequestReceived"),
                                                                    ("create", "Metadata", "ResponseComplete")}
    assert "requestObject" not in audit[-1] and f"audit log: {log}" in kubelab("status", "--data-dir",
                                                                              str(data_dir)).stdout
    down = kubelab("down", "--data-dir", str(data_dir))
    assert down.returncode == 0, down.stdout + down.stderr
    assert_nothing_left(state)
    assert load_state(data_dir) is None
    assert (data_dir / "etcd" / "member").is_dir()  # the data stays for the next `up`


def _etcd_value(url: str, pki: Path, key: bytes) -> bytes:
    """Straight from etcd (its v3 JSON gateway), as the apiserver's etcd client certificate may read it."""
    context = ssl.create_default_context(cafile=str(pki / "etcd" / "ca.crt"))
    context.load_cert_chain(str(pki / "apiserver-etcd-client.crt"), str(pki / "apiserver-etcd-client.key"))
    resp = httpx.post(f"{url}/v3/kv/range", json={"key": base64.b64encode(key).decode()}, timeout=5, verify=context)
    resp.raise_for_status()
    return base64.b64decode(resp.json()["kvs"][0]["value"])


# ---- with stand-in components --------------------------------------------------------------------

STAND_IN = """
import argparse, http.server, os, sys, time
parser = argparse.ArgumentParser()
for flag in ("--etcd-servers", "--etcd-cafile", "--etcd-certfile", "--etcd-keyfile", "--bind-address", "--master",
             "--node-name", "--root-dir", "--encryption-provider-config", "--healthz-port",
             "--controller-manager-healthz-url", "--scheduler-healthz-url", "--kubeconfig", "--secure-port",
             "--tls-cert-file", "--tls-private-key-file", "--client-ca-file", "--authorization-mode",
             "--service-account-key-file", "--service-account-signing-key-file", "--root-ca-file",
             "--cluster-signing-cert-file", "--cluster-signing-key-file", "--cluster-dns", "--cluster-domain",
             "--cluster-ip", "--provisioner-kubeconfig", "--kubelet-client-certificate",
             "--kubelet-client-key", "--kubelet-certificate-authority", "--anonymous-auth",
             "--controllers", "--audit-policy-file", "--audit-log-path", "--audit-log-maxsize",
             "--audit-log-maxbackup", "--audit-log-maxage", "--audit-log-format", "--audit-log"):
    parser.add_argument(flag)
parser.add_argument("--use-service-account-credentials", action="store_true")
parser.add_argument("--authentication-token-webhook", action="store_true")
parser.add_argument("--enable-bootstrap-token-auth", action="store_true")
parser.add_argument("--port", "--insecure-port", type=int)
args = parser.parse_args()
print("ARGS", " ".join(sys.argv[1:]), flush=True)
if os.environ.get("STAND_IN_FAIL") == os.path.basename(os.path.dirname(__file__)):
    print("2026-12-08 00:00:00,000 ERROR uvicorn.error: stand-in failing on purpose", flush=True)
    for n in range(30):  # more than a log's tail shows: the error must still be named
        print(f"2026-12-08 00:00:00,000 INFO uvicorn.error: shutting down step {n}", flush=True)
    sys.exit(3)

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *a):
        pass

if args.port:
    server = http.server.HTTPServer(("127.0.0.1", args.port), Health)
    print(f"healthz: http://127.0.0.1:{args.port}/healthz", flush=True)
    server.serve_forever()
while True:
    time.sleep(1)
"""


@pytest.fixture()
def stand_ins(tmp_path: Path) -> dict[str, str]:
    """Env that makes `python -m apiserver|controllers|scheduler|kubelet|clusterdns` run the stand-in above (with
    ``--pod-network host``: the bridge network's kube-proxy and namespace are not stand-ins).

    Run the launcher with ``cwd=tmp_path``: `python -m` puts the working directory first on sys.path,
    and from the repository root the real packages would shadow the stand-ins.
    """
    pkgs = tmp_path / "stand-ins"
    for package in ("apiserver", "controllers", "scheduler", "kubelet", "clusterdns"):
        (pkgs / package).mkdir(parents=True)
        (pkgs / package / "__init__.py").write_text("")
        (pkgs / package / "__main__.py").write_text(STAND_IN)
    return {"PYTHONPATH": os.pathsep.join([str(pkgs), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


def test_up_starts_every_component_with_its_flags(data_dir: Path, stand_ins: dict[str, str]) -> None:
    _etcd_or_skip()
    port = free_port()
    up = kubelab(
        "up", "--detach", "--data-dir", str(data_dir), "--port", str(port), "--nodes", "2", "--pod-network", "host",
        env=stand_ins, cwd=data_dir.parent,
    )  # fmt: skip
    assert up.returncode == 0, up.stdout + up.stderr
    healthy = [line.split()[1] for line in up.stdout.splitlines() if line.strip().startswith("✓")]
    assert healthy[:2] == ["etcd", "apiserver"]  # the clients are spawned with the apiserver, reported after it
    # The console comes last, once the clients are up: it is the real one (kubelab.ui), not a stand-in.
    assert sorted(healthy[2:-1]) == ["controller-manager", "dns", "kubelet-node01", "kubelet-node02", "scheduler"]
    assert healthy[-1] == "ui"

    state = load_state(data_dir)
    assert state is not None
    records = {r.name: r for r in state.processes}
    assert list(records)[:2] == ["etcd", "apiserver"]
    assert state.console_url == f"http://127.0.0.1:{records['ui'].port}/" and "web console:" in up.stdout

    def args_of(name: str) -> str:
        log = (data_dir / "logs" / f"{name}.log").read_text()
        return next(line for line in log.splitlines() if line.startswith("ARGS ")).removeprefix("ARGS ")

    pki = data_dir / "pki"
    # The controller-manager and the scheduler serve /healthz on kube's ports (the first free from 10257, 10259),
    # and the apiserver is told where, for its ComponentStatuses.
    healthz = {name: int(args_of(name).rsplit("--healthz-port ", 1)[1])
               for name in ("controller-manager", "scheduler")}
    assert healthz["controller-manager"] >= 10257 and healthz["scheduler"] >= 10259
    assert state.etcd_url.startswith("https://")  # etcd is secured by default, the apiserver its client
    assert state.secure_url is not None and state.secure_url.startswith("https://127.0.0.1:")
    assert args_of("apiserver") == (
        f"--etcd-servers {state.etcd_url} --etcd-cafile {pki}/etcd/ca.crt --etcd-certfile "
        f"{pki}/apiserver-etcd-client.crt --etcd-keyfile {pki}/apiserver-etcd-client.key --insecure-port {port} "
        f"--secure-port {state.secure_url.rsplit(':', 1)[1]} --bind-address 127.0.0.1 "
        f"--tls-cert-file {pki}/apiserver.crt --tls-private-key-file {pki}/apiserver.key --client-ca-file {pki}/ca.crt "
        f"--service-account-key-file {pki}/sa.pub --service-account-signing-key-file {pki}/sa.key "
        f"--kubelet-client-certificate {pki}/apiserver-kubelet-client.crt --kubelet-client-key "
        f"{pki}/apiserver-kubelet-client.key "
        f"--encryption-provider-config {data_dir / 'encryption-config.yaml'} "
        f"--controller-manager-healthz-url http://127.0.0.1:{healthz['controller-manager']}/healthz "
        f"--scheduler-healthz-url http://127.0.0.1:{healthz['scheduler']}/healthz --authorization-mode Node,RBAC "
        f"--enable-bootstrap-token-auth "
        f"--audit-policy-file {data_dir / 'audit-policy.yaml'} --audit-log-path {data_dir}/logs/audit.log "
        "--audit-log-maxsize 20 --audit-log-maxbackup 5 --audit-log-maxage 7 --audit-log-format json")
    assert args_of("controller-manager") == (
        f"--kubeconfig {data_dir}/controller-manager.conf --use-service-account-credentials "
        f"--root-ca-file {pki}/ca.crt "
        f"--cluster-signing-cert-file {pki}/ca.crt --cluster-signing-key-file {pki}/ca.key "
        f"--controllers *,bootstrapsigner,tokencleaner --healthz-port {healthz['controller-manager']}")
    assert args_of("scheduler") == f"--kubeconfig {data_dir}/scheduler.conf --healthz-port {healthz['scheduler']}"
    dns_args = args_of("dns").split()
    assert dns_args[:6] == ["--kubeconfig", f"{data_dir}/dns.conf", "--bind-address", "127.0.0.1", "--port",
                            dns_args[5]] and int(dns_args[5]) > 0
    assert dns_args[6:] == ["--cluster-domain", "cluster.local", "--cluster-ip", "10.96.0.10"]
    kubelet_ports = [records["kubelet-node01"].port, records["kubelet-node02"].port]
    assert kubelet_ports[0] is not None and kubelet_ports[0] >= 10250
    for node, kport in zip(("node01", "node02"), kubelet_ports, strict=True):
        root = data_dir / "kubelet" / node
        kubelet_args = args_of(f"kubelet-{node}")
        health_port = int(kubelet_args.split("--healthz-port ", 1)[1].split()[0])  # a free one: the API is HTTPS
        assert kubelet_args == (
            f"--kubeconfig {root}/kubelet.conf --provisioner-kubeconfig {root}/provisioner.conf --node-name {node} "
            f"--port {kport} --root-dir {root} --cluster-dns 10.96.0.10 --cluster-domain cluster.local "
            f"--healthz-port {health_port} --tls-cert-file {pki}/kubelets/{node}.crt "
            f"--tls-private-key-file {pki}/kubelets/{node}.key --client-ca-file {pki}/ca.crt --anonymous-auth=false "
            f"--authentication-token-webhook --authorization-mode Webhook")
        assert root.is_dir()
        # The stand-in printed its health URL, so the launcher polls it instead of "alive".
        assert records[f"kubelet-{node}"].health_url == f"http://127.0.0.1:{kport}/healthz"

    status = kubelab("status", "--data-dir", str(data_dir))
    assert status.returncode == 0, status.stdout
    health = {line.split()[0]: line.split()[3] for line in status.stdout.splitlines()[2:]}
    assert health == {
        "etcd": "ok",
        "apiserver": "ok",
        "controller-manager": "running",
        "scheduler": "running",
        "dns": "ok",  # the stand-in serves /healthz on its --port
        "kubelet-node01": "ok",
        "kubelet-node02": "ok",
        "ui": "ok",
    }

    again = kubelab(
        "up", "--detach", "--data-dir", str(data_dir), "--port", str(free_port()), env=stand_ins, cwd=data_dir.parent
    )
    assert again.returncode == 1 and "already running" in again.stderr

    down = kubelab("down", "--data-dir", str(data_dir))
    assert down.returncode == 0, down.stdout + down.stderr
    assert_nothing_left(state)


def test_up_fails_clearly_when_the_apiserver_fails(data_dir: Path, stand_ins: dict[str, str]) -> None:
    """The clients are already running when the apiserver dies during start-up: `up` names the apiserver, shows
    its first error (however much it logged after it) and its log's tail, and stops everything."""
    _etcd_or_skip()
    up = kubelab(
        "up", "--detach", "--data-dir", str(data_dir), "--port", str(free_port()), "--nodes", "1",
        "--pod-network", "host", env={**stand_ins, "STAND_IN_FAIL": "apiserver"}, cwd=data_dir.parent,
    )  # fmt: skip
    assert up.returncode == 1, up.stdout + up.stderr
    assert "apiserver exited with code 3 during start-up" in up.stderr
    assert "its first error: 2026-12-08 00:00:00,000 ERROR uvicorn.error: stand-in failing on purpose" in up.stderr
    stopped = next(line for line in up.stdout.splitlines() if line.startswith("kubelab: stopped "))
    for name in ("scheduler", "controller-manager", "kubelet-node01"):
        assert f"✓ {name}" not in up.stdout
        assert name in stopped  # already spawned, so stopped
    assert load_state(data_dir) is None


def test_foreground_up_stops_everything_on_ctrl_c(data_dir: Path, stand_ins: dict[str, str]) -> None:
    _etcd_or_skip()
    with foreground_up(data_dir, 1, stand_ins) as (launcher, state):
        assert state.supervisor_pid == launcher.proc.pid and not state.detached
        launcher.proc.send_signal(signal.SIGINT)
        output = launcher.finish()
        assert launcher.proc.returncode == 0, output
        assert "stopped ui, kubelet-node01, dns, scheduler, controller-manager, apiserver, etcd" in output
        assert_nothing_left(state)
        assert load_state(data_dir) is None


def test_foreground_up_restarts_whatever_exits_the_apiserver_too(data_dir: Path, stand_ins: dict[str, str]) -> None:
    """As systemd would: a client and the apiserver killed with SIGKILL are both started again, the launcher says
    so with the signal and the restart number, and Ctrl-C afterwards still stops everything, the new pids included."""
    _etcd_or_skip()
    with foreground_up(data_dir, 0, stand_ins) as (launcher, state):
        pids = {r.name: r.pid for r in state.processes}
        os.kill(pids["scheduler"], signal.SIGKILL)
        launcher.wait_for("scheduler exited (signal SIGKILL); restarting in 1s (restart 1)")
        launcher.wait_for("scheduler restarted (pid")
        os.kill(pids["apiserver"], signal.SIGKILL)
        launcher.wait_for("apiserver exited (signal SIGKILL); restarting in 1s (restart 1)")
        launcher.wait_for("apiserver is up again")
        assert launcher.proc.poll() is None
        restarted = load_state(data_dir)
        assert restarted is not None
        records = {r.name: r for r in restarted.processes}
        for name in ("scheduler", "apiserver"):
            assert records[name].pid != pids[name] and process.pid_alive(records[name].pid)
            assert (records[name].restarts, records[name].last_exit_signal) == (1, "SIGKILL")
        launcher.proc.send_signal(signal.SIGINT)
        output = launcher.finish()
        assert launcher.proc.returncode == 0, output
        assert_nothing_left(restarted)
        assert_nothing_left(state)


def test_down_stops_the_foreground_supervisor_first_then_the_components(
    data_dir: Path, stand_ins: dict[str, str]
) -> None:
    _etcd_or_skip()
    with foreground_up(data_dir, 1, stand_ins) as (launcher, state):
        down = kubelab("down", "--data-dir", str(data_dir))
        assert down.returncode == 0, down.stdout + down.stderr
        stopped = [line.split()[1] for line in down.stdout.splitlines() if line.startswith("  stopped ")]
        assert stopped == ["supervisor", "ui", "kubelet-node01", "dns", "scheduler", "controller-manager", "apiserver",
                           "etcd"]
        output = launcher.finish()
        assert launcher.proc.returncode == 0, output
        assert "`kubelab down` stops the cluster: the supervisor exits and restarts nothing more" in output
        assert "restarting in" not in output  # nothing down stopped was started again
        assert_nothing_left(state)
        assert load_state(data_dir) is None


def test_up_refuses_a_taken_port(data_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        up = kubelab("up", "--data-dir", str(data_dir), "--port", str(port))
    assert up.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in up.stderr
    assert not data_dir.exists()  # nothing was started


def test_down_without_a_cluster(tmp_path: Path) -> None:
    down = kubelab("down", "--data-dir", str(tmp_path))
    assert down.returncode == 0 and "nothing to stop" in down.stdout
    started = time.monotonic()
    status = kubelab("status", "--data-dir", str(tmp_path))
    assert status.returncode == 1 and "not running" in status.stdout
    assert time.monotonic() - started < 30


def test_etcd_restart_on_new_ports_keeps_the_data(tmp_path: Path) -> None:
    """What `kubelab up` does on an existing data dir: same data, whatever ports are free now."""
    _etcd_or_skip()
    first = EtcdServer(tmp_path / "etcd", log_path=tmp_path / "etcd.log")
    first.start()
    try:
        put = httpx.post(f"{first.url}/v3/kv/put", json={"key": "a2V5", "value": "dmFsdWU="}, timeout=5)
        assert put.status_code == 200, put.text
    finally:
        first.stop()
    assert first.pid is None
    second = EtcdServer(tmp_path / "etcd", log_path=tmp_path / "etcd.log")
    assert second.url != first.url or second.peer_url != first.peer_url
    second.start()
    try:
        got = httpx.post(f"{second.url}/v3/kv/range", json={"key": "a2V5"}, timeout=5).json()
        assert got["kvs"][0]["value"] == "dmFsdWU="
    finally:
        second.stop()
