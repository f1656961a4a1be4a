"""`kubelab join HOST:PORT --token ID.SECRET --discovery-token-ca-cert-hash sha256:…`: add this machine's kubelet
to a cluster, as ``kubeadm join`` does for a worker node.

1. Discovery (``kubelab.discovery``): ``cluster-info`` is fetched anonymously, its JWS checked with the token and
   its CA with the pin; then ``<data-dir>/pki/ca.crt`` and ``<data-dir>/bootstrap-kubelet.conf`` (the cluster's
   server and CA, the token as credential) are written. As kubeadm, a first join is refused when a Ready Node of
   that name exists already (asked with the token, which ``kubeadm:get-nodes`` lets get Nodes).
2. The kubelet starts with ``--bootstrap-kubeconfig``: it asks for its client certificate with a
   CertificateSigningRequest, which the controller-manager approves (the token's group may create node client
   CSRs) and signs; it then writes ``<data-dir>/kubelet.conf`` and registers its Node as ``system:node:<name>``.
3. `join` waits for that kubeconfig and for the kubelet's health, then supervises it as `kubelab up` supervises
   the control plane (restarted when it exits; ``--detach`` leaves a background supervisor). The state is
   ``<data-dir>/state.json``, so `kubelab status --data-dir D` and `kubelab down --data-dir D` work on it.
"""

from __future__ import annotations

import argparse
import os
import socket
import ssl
import sys
import time
from pathlib import Path

import httpx

from apimachinery import bootstraptoken as bt
from kubelab import process
from kubelab.cluster import KUBELET_BASE_PORT
from kubelab.commands.up import _Signals, _stop, _supervise
from kubelab.components import COMPONENTS, HEALTH_URL_IN_LOG, component_argv
from kubelab.detach import Console, run_detached
from kubelab.discovery import ClusterInfo, DiscoveryError, discover, parse_pins
from kubelab.etcd import free_port
from kubelab.health import PrintedHealth
from kubelab.kubeconfig import write_kubeconfig
from kubelab.net import free_ports_from
from kubelab.pki import write_private
from kubelab.state import ClusterState, ProcessRecord, load_state, remove_state, save_state
from kubelab.supervisor import StartupFailed, Supervisor, Unit

__all__ = ["add_arguments", "run"]

DEFAULT_DATA_DIR = ".kubelab-node"
BOOTSTRAP_KUBECONFIG = "bootstrap-kubelet.conf"
KUBECONFIG = "kubelet.conf"
TLS_BOOTSTRAP_TIMEOUT = 240.0  # kubeadm waits 4 minutes for the kubelet's TLS bootstrap


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("endpoint", metavar="HOST:PORT", help="the apiserver to join (as printed by `kubelab token "
                                                              "create --print-join-command`)")
    parser.add_argument("--token", required=True, help="the bootstrap token, <id>.<secret>")
    parser.add_argument("--discovery-token-ca-cert-hash", action="append", default=[], metavar="sha256:HEX",
                        help="the pin of the cluster CA's public key (sha256 of its SubjectPublicKeyInfo); repeatable")
    parser.add_argument("--discovery-token-unsafe-skip-ca-verification", action="store_true",
                        help="trust whatever CA cluster-info names, checking only the token's signature (unsafe)")
    parser.add_argument("--discovery-timeout", type=float, default=300.0, metavar="SECONDS",
                        help="how long to wait for a signed cluster-info (default: %(default)s)")
    parser.add_argument("--node-name", default=None, help="the Node's name (default: this host's name)")
    parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR,
                        help=f"kubeconfigs, certificates, the kubelet's files, logs and state.json "
                             f"(default {DEFAULT_DATA_DIR})")
    parser.add_argument("--port", type=int, default=None,
                        help=f"the kubelet's port (default: the first free one from {KUBELET_BASE_PORT})")
    parser.add_argument("--detach", action="store_true",
                        help="return once the node has joined and leave the kubelet under a background supervisor "
                             "(stop it with `kubelab down --data-dir D`)")


class _JoinedNode:
    """The one supervised kubelet of a joined node: ``Supervising``, so `kubelab up`'s loop drives it."""

    def __init__(self, state: ClusterState, supervisor: Supervisor) -> None:
        self.state = state
        self.supervisor = supervisor

    def supervise_once(self) -> bool:
        return self.supervisor.poll()

    def stop(self, timeout: float = 10.0) -> list[ProcessRecord]:
        self.supervisor.close()
        stopped = [r for r in self.state.processes
                   if r.pid in process.stop_groups([(r.pid, r.start_time) for r in self.state.processes], timeout)]
        for entry in self.supervisor.entries:
            if entry.child is not None:
                entry.child.poll()
        self.state.processes.clear()
        return stopped


def _check_args(args: argparse.Namespace) -> tuple[bt.BootstrapToken, set[str]]:
    token = bt.parse_token(args.token)
    pins = parse_pins(args.discovery_token_ca_cert_hash)
    if not pins and not args.discovery_token_unsafe_skip_ca_verification:
        raise DiscoveryError("using token-based discovery without --discovery-token-ca-cert-hash can be unsafe: "
                             "pass --discovery-token-unsafe-skip-ca-verification to continue")
    return token, pins


def run(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir).absolute()
    previous = load_state(data_dir)
    if previous is not None and previous.supervisor_pid and process.pid_alive(previous.supervisor_pid,
                                                                               previous.supervisor_start_time):
        print(f"kubelab join: a node already runs from {data_dir} (supervisor pid {previous.supervisor_pid}); "
              f"stop it with: kubelab down --data-dir {args.data_dir}", file=sys.stderr)
        return 1
    try:
        token, pins = _check_args(args)
        print(f"[discovery] requesting cluster-info from https://{args.endpoint}", flush=True)
        info = discover(args.endpoint, token, pins, timeout=args.discovery_timeout)
    except (bt.InvalidToken, DiscoveryError) as err:
        print(f"kubelab join: error execution phase preflight: couldn't validate the identity of the API Server: "
              f"{err}", file=sys.stderr)
        return 1
    print(f"[discovery] cluster-info is signed by the token{' and its CA is the pinned one' if pins else ''}: "
          f"using the API Server {info.server}", flush=True)
    node = (args.node_name or socket.gethostname()).lower()
    if not (data_dir / KUBECONFIG).exists():  # a first join (a node that joined before keeps its name)
        try:
            _check_node_name(info, token, node)
        except (DiscoveryError, httpx.HTTPError) as err:
            print(f"kubelab join: error execution phase kubelet-start: {err}", file=sys.stderr)
            return 1
    if args.detach:
        return run_detached(lambda console: _run(args, data_dir, info, token, node, console),
                            data_dir / "logs" / "supervisor.log")
    return _run(args, data_dir, info, token, node, None)


def _check_node_name(info: ClusterInfo, token: bt.BootstrapToken, node: str) -> None:
    """kubeadm's check before the TLS bootstrap: no Ready Node of that name exists yet (asked with the token)."""
    verify = ssl.create_default_context(cadata=info.ca_pem.decode())
    with httpx.Client(base_url=info.server, verify=verify, timeout=10.0,
                      headers={"Authorization": f"Bearer {token}"}) as client:
        response = client.get(f"/api/v1/nodes/{node}")
    if response.status_code == 404:
        return
    if response.status_code != 200:
        raise DiscoveryError(f"cannot get Node {node!r}: {response.status_code} {response.text[:200]}")
    conditions = (response.json().get("status") or {}).get("conditions") or []
    if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
        raise DiscoveryError(f'a Node with name "{node}" and status "Ready" already exists in the cluster. You must '
                             "delete the existing Node or change the name of this new joining Node")


def _run(args: argparse.Namespace, data_dir: Path, info: ClusterInfo, token: bt.BootstrapToken, node: str,
         console: Console | None) -> int:
    ca = data_dir / "pki" / "ca.crt"
    write_private(ca, info.ca_pem, mode=0o644)
    bootstrap = write_kubeconfig(data_dir / BOOTSTRAP_KUBECONFIG, info.server, ca=ca, token=str(token))
    kubeconfig = data_dir / KUBECONFIG
    root = data_dir / "kubelet" / node
    root.mkdir(parents=True, exist_ok=True)
    port = args.port or free_ports_from(KUBELET_BASE_PORT, 1)[0]
    kubelet = COMPONENTS["kubelet"]
    name = f"kubelet-{node}"
    log = data_dir / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = component_argv(kubelet, ["--bootstrap-kubeconfig", str(bootstrap), "--kubeconfig", str(kubeconfig),
                                    "--cert-dir", str(root / "pki"), "--node-name", node, "--port", str(port),
                                    "--root-dir", str(root),
                                    # its API is HTTPS behind authentication: health on kube's plain healthz port
                                    "--healthz-port", str(free_port())])
    unit = Unit(name, tuple(argv), log, PrintedHealth(HEALTH_URL_IN_LOG, kubelet.settle))
    record = ProcessRecord(name=name, component="kubelet", pid=0, start_time=None, started_at=0.0, log=str(log),
                           port=port)
    state = ClusterState(data_dir=str(data_dir), api_url=info.server, etcd_url="", etcd_client_port=0,
                         etcd_peer_port=0, kubeconfig=str(kubeconfig),
                         supervisor_pid=os.getpid(), supervisor_start_time=process.process_start_time(os.getpid()),
                         detached=console is not None, supervisor_log=str(console.log) if console else None)
    supervisor = Supervisor(spawn=lambda u: process.spawn(u.name, u.argv, u.log, env=u.env),
                            say=lambda line: print(f"kubelab: {time.strftime('%Y-%m-%dT%H:%M:%S')} {line}",
                                                   file=sys.stderr, flush=True))
    joined = _JoinedNode(state, supervisor)
    signals = _Signals()
    signals.install()
    try:
        entry = supervisor.start(unit, record)
        state.processes.append(record)
        save_state(data_dir, state)
        print(f"[kubelet-start] starting the kubelet (pid {record.pid}, log {log})\n"
              f"[kubelet-start] waiting for the kubelet to perform the TLS Bootstrap ...", flush=True)
        deadline = time.monotonic() + TLS_BOOTSTRAP_TIMEOUT
        while not (kubeconfig.is_file() and supervisor.probe(entry)):
            if supervisor.poll():
                save_state(data_dir, state)
            if time.monotonic() > deadline:
                raise StartupFailedError(f"the kubelet did not bootstrap within {TLS_BOOTSTRAP_TIMEOUT:.0f}s; "
                                         f"{process.log_excerpt(log, entry.log_offset)}")
            time.sleep(0.1)
        save_state(data_dir, state)
    except (StartupFailed, StartupFailedError) as err:
        message = str(err) if isinstance(err, StartupFailedError) else \
            f"the kubelet exited during start-up; {process.log_excerpt(log, err.entry.log_offset)}"
        print(f"kubelab join: {message}", file=sys.stderr)
        _stop(joined, data_dir)
        return 1
    except BaseException:
        joined.stop()
        remove_state(data_dir)
        raise
    print(f"\nThis node has joined the cluster as {node}:\n"
          f"* the kubelet's client certificate (system:node:{node}) was signed after its CSR was approved\n"
          f"* its kubeconfig: {kubeconfig}\n\n"
          f"Run 'kubectl get nodes' on the control plane to see this node join the cluster.\n"
          f"Stop it with: kubelab down --data-dir {args.data_dir}", flush=True)
    if console is not None:
        console.detach()
    return _supervise(joined, signals)


class StartupFailedError(RuntimeError):
    """The kubelet did not finish its TLS bootstrap in time."""
