"""Bring a local cluster up in dependency order and take it down in reverse.

Order: etcd → apiserver → {controller-manager, scheduler, dns, kubelets}. The apiserver is spawned while etcd
starts (it dials etcd until it answers, as kube-apiserver does) and reported healthy after it. The last tier only
talks to the apiserver and retries until it answers (informers back off, the kubelet retries its
registration as kube's kubelet does), so it is spawned right after the apiserver instead of after the
apiserver is healthy: their Python start-up (about a second of imports each) overlaps the apiserver's.
Health is still reported in order — the apiserver first (a failing apiserver fails the start with its
log), then each client as it becomes healthy (a kubelet only once its Node is registered); with a
controller-manager the cluster is up once every Node also has its pod CIDR (``_wait_pod_cidrs``: a pod started
before its node's CIDR would keep the node's IP, as kubelets without a controller-manager give). The cluster's own
objects (the addons, kubeadm's join objects) are written by a thread as soon as the apiserver serves, while the
clients start. Stopping goes tier by tier in reverse: clients first (so they do not log a storm of connection
errors), then the apiserver, then etcd.

Every process, etcd included, is spawned and watched by one ``Supervisor`` (``supervisor.py``): an exit during
start-up is retried with back-off (a component that exits ``STARTUP_ATTEMPTS`` times before it was ever healthy
is a ``StartupError`` with its log), and once the cluster is up ``supervise_once`` restarts whatever exits.
``stop`` closes the supervisor first, so nothing is restarted while the tiers are being stopped.

This module does no argument parsing and prints only through the ``report`` and ``say`` callbacks (``changed``
asks for the state to be saved), so `kubelab up`'s foreground and detached modes and the tests drive the same
code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from kubelab import auditpolicy, dnsaddon, interrupts, process
from kubelab.addons import ADDONS
from kubelab.bootstraptokens import ensure_join_object, join_objects
from kubelab.clusterpki import (
    ADMIN,
    CONSOLE,
    CONTROLLER_MANAGER,
    DNS,
    HOLLOW_NODES,
    KUBE_PROXY,
    LOCAL_PATH_PROVISIONER,
    SCHEDULER,
    ClusterPKI,
    Identity,
    kubelet_identity,
    make_cluster_pki,
)
from kubelab.components import (
    COMPONENTS,
    HEALTH_URL_IN_LOG,
    Component,
    component_argv,
    kubelet_node_name,
)
from kubelab.encryption import ensure_encryption_config
from kubelab.etcd import QUOTA_BACKEND_BYTES, EtcdServer, free_port
from kubelab.etcdcluster import local_cluster, record_run
from kubelab.health import HealthCheck, HttpHealth, PrintedHealth
from kubelab.kubeconfig import write_kubeconfig
from kubelab.net import accepts, free_ports_from
from kubelab.runtimechoice import choose
from kubelab.state import ClusterState, ProcessRecord
from kubelab.supervisor import StartupFailed, Supervised, Supervisor, Unit
from kubelet.network import CLUSTER_CIDR, ClusterNetwork, default_name
from kubelet.runtime import leftovers

__all__ = ["CLIENT_COMPONENTS", "KUBELET_BASE_PORT", "PROXY_MODES", "SECURE_PORT", "Cluster",
           "Progress", "StartupError", "stop_records"]

KUBELET_BASE_PORT = 10250
# kube's secure ports of the controller-manager and the scheduler: where their /healthz is served (plain HTTP here)
# and where the apiserver probes them for ComponentStatuses.
HEALTHZ_PORTS = {"controller-manager": 10257, "scheduler": 10259}
SECURE_PORT = 6443  # kube-apiserver's --secure-port
POD_CIDR_TIMEOUT = 30.0  # seconds the node IPAM controller may take to give every Node its podCIDR
CRITICAL = ("etcd", "apiserver")  # stopped last, after the clients that need them
# the last tiers: any may be left out
CLIENT_COMPONENTS = ("controller-manager", "scheduler", "kubelet", "proxy", "dns", "ui")
CONSOLE_PORT = 8088  # the web console's (kubelab ui) first choice
PROXY_MODES = ("auto", "nftables", "iptables", "userspace")  # kubelab proxy --proxy-mode
PROXY_HEALTHZ_PORT = 10256
PROXY_METRICS_PORT = 10249  # kube-proxy's --metrics-bind-address; taken only when free (10250 is the kubelet's)
OBJECT_WRITERS = 8  # threads writing the cluster's objects (18 POSTs), each its own request to the apiserver
OBJECTS_POLL = 0.01  # seconds between checks that the apiserver serves, before the cluster's objects are written
HOLLOW_UNIT = "kubelet-hollow"  # the one kubelet process that simulates ``hollow_nodes`` nodes


class StartupError(RuntimeError):
    """A component failed to start or to become healthy; the message names it and shows its log."""


@dataclass(frozen=True)
class Progress:
    """One line of start-up progress: a component is up (or is being started)."""

    name: str
    pid: int
    endpoint: str
    log: Path
    seconds: float | None  # None: just spawned, not yet healthy


Report = Callable[[Progress], None]


@dataclass
class _Pending:
    component: Component
    entry: Supervised
    began: float  # time.monotonic() at the first spawn: the start-up timeout counts from here

    @property
    def record(self) -> ProcessRecord:
        return self.entry.record


class Cluster:
    """The processes of one local cluster, rooted at ``data_dir``."""

    def __init__(
        self,
        data_dir: Path,
        port: int = 8080,
        nodes: int = 2,
        etcd_binary: str | None = None,
        etcd_ports: tuple[int, int] | None = None,
        report: Report = lambda progress: None,
        say: Callable[[str], None] = lambda line: None,
        changed: Callable[[], None] = lambda: None,
        etcd_quota_backend_bytes: int = QUOTA_BACKEND_BYTES,
        etcd_members: int | None = None,
        etcd_tls: bool = True,
        components: Collection[str] | None = None,
        hollow_nodes: int = 0,
        extra_args: Mapping[str, Sequence[str]] | None = None,
        kubelet_base_port: int | None = KUBELET_BASE_PORT,
        secure_port: int | None = SECURE_PORT,
        pod_network: str = "auto",
        proxy_mode: str = "auto",
        runtime: str = "auto",
        apiservers: int = 1,
        spawn: Callable[[Unit], process.Spawned] | None = None,
    ) -> None:
        """Raises IncompatibleEtcd (or FileNotFoundError) when no etcd found can run the data dir's etcd.

        ``components``: which of ``CLIENT_COMPONENTS`` to start besides etcd and the apiserver (default: all);
        ``hollow_nodes``: one more kubelet process run with ``--hollow --count N``; ``extra_args``: flags appended
        to a component's command line, by component name; ``kubelet_base_port`` None: kubelets on ports the
        kernel picks (several clusters on one machine), else the first free ones from it (kube's 10250);
        ``secure_port``: the apiserver's HTTPS port, the first free one from it (None: one the kernel picks);
        ``pod_network``: ``host`` (pods share the host's network, each with a loopback IP of 127.16.0.0/12),
        ``bridge`` (linux runtime kubelets on the cluster network ``kubelet.network`` describes, pod IPs of
        10.244.0.0/16, kube-proxy; needs root and nft) or ``auto``; ``runtime``: the kubelets' ``--runtime``
        (``auto``: see ``runtimechoice``; raises ValueError for ``bridge`` without linux); ``proxy_mode``:
        kube-proxy's ``--proxy-mode``; ``apiservers``: how many apiserver processes on the one etcd, all serving
        the secure port (``--reuse-port``), each its own plain port (the first ``port``) and audit log, named
        ``apiserver``, ``apiserver-2``, ...; ``spawn``: how a unit's process is started (default: a fresh
        process; ``kubelab.Cluster`` forks its components from ``zygote``).
        """
        if apiservers < 1:
            raise ValueError("apiservers must be 1 or more")
        unknown = set(components or ()) - set(CLIENT_COMPONENTS)
        if unknown:
            raise ValueError(f"unknown components {sorted(unknown)}: choose among {list(CLIENT_COMPONENTS)} "
                             f"(etcd and the apiserver always run)")
        self.data_dir = data_dir.absolute()
        self.port = port
        self.nodes = nodes
        self.report = report
        self.changed = changed  # a record changed outside a report (a restart during start-up): save the state
        self.logs = self.data_dir / "logs"
        self.api_url = f"http://127.0.0.1:{port}"
        self.etcd_tls = etcd_tls
        self.components = set(CLIENT_COMPONENTS if components is None else components)
        self.runtime = runtime  # as asked: a kubelet left on auto logs its own reason
        self.choice = choose(runtime, pod_network, self.data_dir / "kubelet")
        # The cluster network (``bridge``): created at start, deleted at stop (and by `kubelab down`).
        self.network = ClusterNetwork(default_name(self.data_dir)) if self.choice.pod_network == "bridge" else None
        if proxy_mode not in PROXY_MODES:
            raise ValueError(f"unknown proxy mode {proxy_mode!r}: choose among {list(PROXY_MODES)}")
        self.proxy_mode = proxy_mode
        self.hollow_nodes = hollow_nodes
        self.apiservers = apiservers
        self.extra_args = {name: list(args) for name, args in (extra_args or {}).items()}
        self.kubelet_base_port = kubelet_base_port
        self.secure_port = (free_ports_from(secure_port, 1, avoid={port})[0] if secure_port is not None
                            else free_port())
        self.secure_url = f"https://127.0.0.1:{self.secure_port}"
        self.pki: ClusterPKI | None = None
        self.etcd = local_cluster(self.data_dir, etcd_members, binary=etcd_binary, tls=etcd_tls, log_dir=self.logs,
                                  client_ports=[etcd_ports[0]] if etcd_ports else None,
                                  quota_backend_bytes=etcd_quota_backend_bytes)
        first = self.etcd.members[0]
        self.state = ClusterState(
            data_dir=str(self.data_dir),
            api_url=self.api_url,
            etcd_url=self.etcd.servers,
            etcd_client_port=first.client_port,
            etcd_peer_port=first.peer_port,
            kubeconfig=str(self.data_dir / "kubeconfig"),
            secure_url=self.secure_url,
            runtime=f"{self.choice.runtime} ({self.choice.why})",
            pod_network=self.choice.pod_network,
        )
        self.healthz_ports: dict[str, int] = {}  # chosen at start
        self.apiserver_ports: list[int] = []  # each apiserver's plain port, chosen at start
        self.kubelet_ports: list[int] = []  # chosen at start
        self.supervisor = Supervisor(spawn=spawn or _spawn_unit, say=say)

    # ---- start -------------------------------------------------------------------------------

    def start(self) -> ClusterState:
        """Start every available component, reported healthy tier by tier; raise StartupError on failure.

        On failure the processes already started are left running: the caller decides (it stops
        them, after showing the error).
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # etcd starts (and elects itself) while the cluster's certificates are made, which it does not need, and
        # the apiservers start alongside it: they dial etcd until it answers, as kube-apiserver does
        with ThreadPoolExecutor(1, thread_name_prefix="kubelab-etcd") as pool:
            etcd = pool.submit(self._start_etcd)
            self.pki = pki = make_cluster_pki(self.data_dir / "pki")
            self._kubeconfig(Path(self.state.kubeconfig), ADMIN)
            self.healthz_ports = self._healthz_ports()
            if self.network is not None:
                try:
                    self.network.ensure()
                except (OSError, RuntimeError) as err:
                    raise StartupError(f"--pod-network bridge: cannot create the cluster network "
                                       f"{self.network.name}: {err}") from None
            told = self.etcd.servers
            spawned_apiservers = [self._spawn_apiserver(COMPONENTS["apiserver"], index)
                                  for index in range(1, self.apiservers + 1)]
            etcd.result()
        if self.etcd.servers != told:  # etcd lost a race for its ports and moved: tell the apiservers
            for pending in spawned_apiservers:
                self._respawn_on_new_etcd(pending)
        tier: list[_Pending] = []
        for name in ("controller-manager", "scheduler"):
            component = COMPONENTS[name]
            if name not in self.components:
                continue
            identity = CONTROLLER_MANAGER if name == "controller-manager" else SCHEDULER
            conf = self._kubeconfig(self.data_dir / f"{name}.conf", identity)
            # As kubeadm: the controllers write as their own service accounts, the CA is published as
            # kube-root-ca.crt for pods' in-cluster clients and signs approved CSRs.
            # kubeadm also turns on the bootstrap signer and the token cleaner, which joining nodes need.
            own = ["--use-service-account-credentials", "--root-ca-file", str(pki.ca_cert), *pki.signing_flags(),
                   "--controllers", "*,bootstrapsigner,tokencleaner"] if name == "controller-manager" else []
            if name == "controller-manager" and self.network is not None:
                own += ["--cluster-cidr", CLUSTER_CIDR]
            tier.append(self._spawn(component, name, ["--kubeconfig", str(conf), *own,
                                                      "--healthz-port", str(self.healthz_ports[name])]))
        if "dns" in self.components:
            tier.append(self._spawn_dns(COMPONENTS["dns"]))
        kubelet = COMPONENTS["kubelet"]
        if "kubelet" in self.components and (self.nodes > 0 or self.hollow_nodes > 0):
            for index, port in enumerate(self._kubelet_ports(self.nodes), start=1):
                tier.append(self._spawn_kubelet(kubelet, kubelet_node_name(index), port))
            if self.hollow_nodes > 0:
                tier.append(self._spawn_hollow(kubelet))
        if self.network is not None and "proxy" in self.components:
            tier.append(self._spawn_proxy(COMPONENTS["proxy"], self.network))
        # The addons and kubeadm's join objects are written as soon as the apiserver serves, while the launcher sees
        # it healthy and the clients start (a dozen requests to an apiserver busy with their lists and registrations:
        # seconds on a loaded machine), done before start returns.
        given_up = threading.Event()
        with ThreadPoolExecutor(1, thread_name_prefix="kubelab-objects") as pool:
            objects = pool.submit(self._create_cluster_objects, given_up)
            try:
                self._start_tier(spawned_apiservers)
                self._start_tier(tier)
                if "ui" in self.components:
                    self._start_tier([self._spawn_console(COMPONENTS["ui"])])
            except BaseException:
                given_up.set()
                raise
            objects.result()
        if any(p.component.name == "controller-manager" for p in tier):
            self._wait_pod_cidrs([p.record.name.removeprefix("kubelet-") for p in tier
                                  if p.component.name == "kubelet" and p.record.name != HOLLOW_UNIT])
        return self.state

    def _create_cluster_objects(self, given_up: threading.Event) -> None:
        """The addons and the join objects, a POST per thread: a dozen round trips in a row to an apiserver busy
        with its clients' start took ~0.25 s (at load 10), most of an API-only cluster's start after the apiserver's.
        They start once the apiserver's plain port accepts, which it does only when it is ready (its listeners open
        after its start-up, RBAC bootstrap included), not after the launcher's next health probe saw it."""
        while not accepts(self.port):
            if given_up.wait(OBJECTS_POLL):
                return
        with process.loopback_client(5.0, self.api_url) as client, \
                ThreadPoolExecutor(OBJECT_WRITERS, thread_name_prefix="kubelab-objects") as pool:
            done = [*self._create_join_objects(client, pool), *self._create_addons(client, pool)]
            for future in done:
                future.result()

    def _create_addons(self, client: httpx.Client, pool: ThreadPoolExecutor) -> list[Future[None]]:
        """kind's default StorageClass and the local-path provisioner's rights (kubelab.addons), each unless it
        exists; an apiserver that does not serve a group (a stand-in) just says no."""
        return [pool.submit(_post_quietly, client, path, obj) for path, obj in ADDONS]

    def _create_join_objects(self, client: httpx.Client, pool: ThreadPoolExecutor) -> list[Future[None]]:
        """kubeadm's ``cluster-info`` and the RBAC for joining nodes (``bootstraptokens``), each unless it exists:
        a POST per thread, as the addons (one after the other, their 8 round trips were the objects' longest chain)."""
        assert self.pki is not None
        return [pool.submit(_ensure_join_object_quietly, client, path, obj)
                for path, obj in join_objects(self.secure_url, self.pki.ca_cert.read_bytes())]

    def _wait_pod_cidrs(self, nodes: list[str]) -> None:
        """Until every Node has its ``spec.podCIDR`` (bounded: a controller-manager run with
        ``--allocate-node-cidrs=false`` never gives one, and its kubelets then give pods the node's IP)."""
        deadline = time.monotonic() + POD_CIDR_TIMEOUT
        with process.loopback_client(timeout=2.0) as client:
            for node in nodes:
                while time.monotonic() < deadline:
                    try:
                        resp = client.get(f"{self.api_url}/api/v1/nodes/{node}")
                        if resp.status_code == 200 and (resp.json().get("spec") or {}).get("podCIDR"):
                            break
                    except httpx.HTTPError:
                        pass
                    except (ValueError, AttributeError):
                        return  # not a kube-apiserver answer (a stand-in apiserver): nothing to wait for
                    time.sleep(0.05)

    def _start_etcd(self) -> None:
        began = time.monotonic()
        try:
            self.etcd.start(timeout=30.0)
        except RuntimeError as e:
            raise StartupError(f"etcd failed to start: {e}") from e
        record_run(self.data_dir, self.etcd, self.etcd_tls)
        # Ports may have changed if a free port was grabbed by someone else meanwhile.
        first = self.etcd.members[0]
        self.state.etcd_url = self.etcd.servers
        self.state.etcd_client_port = first.client_port
        self.state.etcd_peer_port = first.peer_port
        single = len(self.etcd.members) == 1
        for member in self.etcd:
            assert member.pid is not None
            record = ProcessRecord(
                name="etcd" if single else member.name,
                component="etcd",
                pid=member.pid,
                start_time=process.process_start_time(member.pid),
                started_at=time.time(),
                log=str(member.log_path),
                port=member.client_port,
                health_url=member.health_url,
            )
            # first, as the start order (the apiservers, spawned meanwhile, may already be listed)
            self.state.processes.insert(sum(r.component == "etcd" for r in self.state.processes), record)
            self._supervise_etcd(member, record, HttpHealth(member.health_url))
            self.report(Progress(record.name, record.pid, member.url, member.log_path, time.monotonic() - began))

    def _supervise_etcd(self, member: EtcdServer, record: ProcessRecord, health: HealthCheck) -> None:
        """From now on an etcd member that ``EtcdServer`` started and awaited is a unit like the others: restarted
        with the same command line (its data dir makes it the same member; etcd ignores the ``--initial-*`` flags
        once the member exists). One call per member."""
        assert member.pid is not None
        unit = Unit(record.name, tuple(member.command()), member.log_path, health)
        self.supervisor.adopt(unit, record, process.Spawned(record.name, member.pid, member.log_path))
        member.detach()  # the supervisor owns its lifetime now, not EtcdServer's finalizer

    def _kubeconfig(self, path: Path, identity: Identity) -> Path:
        """A kubeconfig for ``identity``: the HTTPS server, the cluster CA and the identity's client certificate."""
        assert self.pki is not None
        return write_kubeconfig(path, self.secure_url, ca=self.pki.ca_cert, client=self.pki.client(identity))

    def _spawn_apiserver(self, component: Component, index: int = 1) -> _Pending:
        """The ``index``-th apiserver: the first on ``port``, each further one on a free plain port of its own and
        with an audit log of its own (one lumberjack writer per file); with more than one, all share the secure
        port (``--reuse-port``)."""
        assert self.pki is not None
        name = component.name if index == 1 else f"{component.name}-{index}"
        port = self.port if index == 1 else free_ports_from(self.port + 1, 1, avoid=self._reserved_ports())[0]
        self.apiserver_ports.append(port)
        audit = auditpolicy.apiserver_flags(self.data_dir, self.logs)
        if index > 1:
            audit[audit.index("--audit-log-path") + 1] = str(self.logs / f"audit-{name}.log")
        args = [
            *self.etcd.apiserver_flags(),
            "--insecure-port", str(port),
            "--secure-port", str(self.secure_port),
            *(["--reuse-port"] if self.apiservers > 1 else []),
            *self._apiserver_address(),
            *self.pki.apiserver_flags(),
            *self.pki.service_account_flags(),
            *self.pki.kubelet_client_flags(),
            "--encryption-provider-config", str(ensure_encryption_config(self.data_dir)),
            *(arg for name, port in self.healthz_ports.items()
              for arg in (f"--{name}-healthz-url", f"http://127.0.0.1:{port}/healthz")),
            "--authorization-mode", "Node,RBAC",
            "--enable-bootstrap-token-auth",
            *audit,
        ]  # fmt: skip
        return self._spawn(component, name, args, port=port)

    def _respawn_on_new_etcd(self, pending: _Pending) -> None:
        """Run an apiserver again with the etcd members' new URLs in its ``--etcd-servers``."""
        argv = list(pending.entry.unit.argv)
        argv[argv.index("--etcd-servers") + 1] = self.etcd.servers
        pending.entry.unit = dataclasses.replace(pending.entry.unit, argv=tuple(argv))
        self.supervisor.stop_unit(pending.entry)
        self.supervisor.restart_now(pending.entry)

    def _apiserver_address(self) -> list[str]:
        """The secure port on 127.0.0.1; with the cluster network on every address, advertised (the ``kubernetes``
        Service's endpoint) at the host's end of the cluster network's link, which pods reach."""
        if self.network is None:
            return ["--bind-address", "127.0.0.1"]
        host = self.network.subnet().network_address + 1
        return ["--bind-address", "0.0.0.0", "--advertise-address", f"{host}:{self.secure_port}"]

    def _spawn_proxy(self, component: Component, network: ClusterNetwork) -> _Pending:
        conf = self._kubeconfig(self.data_dir / "kube-proxy.conf", KUBE_PROXY)
        port = free_ports_from(PROXY_HEALTHZ_PORT, 1, avoid=self._reserved_ports())[0]
        metrics = free_ports_from(PROXY_METRICS_PORT, 1, avoid=self._reserved_ports() | {port})[0]
        args = ["--kubeconfig", str(conf), "--cluster-network", network.name, "--cluster-cidr", CLUSTER_CIDR,
                "--healthz-port", str(port), "--metrics-port", str(metrics if metrics == PROXY_METRICS_PORT
                                                                else free_port()), "--proxy-mode", self.proxy_mode]
        return self._spawn(component, "proxy", args)

    def _spawn_kubelet(self, component: Component, node: str, port: int) -> _Pending:
        root = self.data_dir / "kubelet" / node
        root.mkdir(parents=True, exist_ok=True)
        conf = self._kubeconfig(root / "kubelet.conf", kubelet_identity(node))
        provisioner = self._kubeconfig(root / "provisioner.conf", LOCAL_PATH_PROVISIONER)
        assert self.pki is not None
        args = [
            "--kubeconfig", str(conf),
            "--provisioner-kubeconfig", str(provisioner),
            "--node-name", node,
            "--port", str(port),
            "--root-dir", str(root),
            *(dnsaddon.kubelet_flags() if "dns" in self.components else ()),
            # the API is HTTPS behind authentication: the launcher checks health on kube's plain healthz port
            "--healthz-port", str(free_port()),
            *self.pki.kubelet_flags(node, ["localhost", "127.0.0.1"]),
        ]  # fmt: skip
        if self.network is not None:
            args += ["--runtime", "linux", "--cluster-network", self.network.name]
        elif self.runtime != "auto":  # the kubelet's default
            args += ["--runtime", self.runtime]
        return self._spawn(component, f"kubelet-{node}", args, port=port)

    def _spawn_dns(self, component: Component) -> _Pending:
        """``kubelab dns`` as ``system:coredns``, on 127.0.0.1:53 when it can be had (else a free port); with the
        cluster network, on the host's end of its link, which pods reach (kube-proxy routes 10.96.0.10 there)."""
        conf = self._kubeconfig(self.data_dir / "dns.conf", DNS)
        host = "127.0.0.1" if self.network is None else str(self.network.subnet().network_address + 1)
        port = dnsaddon.dns_port(host=host) if self.kubelet_base_port is not None else free_port()
        args = [
            "--kubeconfig", str(conf),
            "--bind-address", host,
            "--port", str(port),
            "--cluster-domain", dnsaddon.CLUSTER_DOMAIN,
            "--cluster-ip", dnsaddon.CLUSTER_DNS_IP,
        ]  # fmt: skip
        return self._spawn(component, component.name, args)

    def _healthz_ports(self) -> dict[str, int]:
        """The controller-manager's and the scheduler's healthz ports, which the apiserver is told for its
        ComponentStatuses: kube's when free (with ``kubelet_base_port`` None, any free ones)."""
        if self.kubelet_base_port is None:
            return {name: free_port() for name in HEALTHZ_PORTS}
        chosen: dict[str, int] = {}
        for name, port in HEALTHZ_PORTS.items():  # each avoids the others: neither is bound yet when the next is chosen
            chosen[name] = free_ports_from(port, 1, avoid=self._reserved_ports() | set(chosen.values()))[0]
        return chosen

    def _reserved_ports(self) -> set[int]:
        """Ports this cluster has chosen but its components may not have bound yet."""
        return {self.port, self.secure_port, *self.healthz_ports.values(), *self.apiserver_ports,
                *self.kubelet_ports}

    def _kubelet_ports(self, count: int) -> list[int]:
        if self.kubelet_base_port is None:
            self.kubelet_ports = [free_port() for _ in range(count)]
        else:  # kube's 10250 on: kube-proxy's healthz port (10256) must then avoid them
            self.kubelet_ports = free_ports_from(self.kubelet_base_port, count, avoid=self._reserved_ports())
        return self.kubelet_ports

    def _spawn_console(self, component: Component) -> _Pending:
        """The web console (``python -m kubelab.ui``) as ``kubelab:console`` over HTTPS (its rights: kubelab.addons),
        on ``CONSOLE_PORT`` when free; it finds the scheduler and the kubelets itself and is told the
        controller-manager's debug port."""
        port = free_port() if self.kubelet_base_port is None else \
            free_ports_from(CONSOLE_PORT, 1, avoid=self._reserved_ports())[0]
        manager = self.healthz_ports.get("controller-manager")
        args = ["--kubeconfig", str(self._kubeconfig(self.data_dir / "console.conf", CONSOLE)), "--port", str(port),
                *(["--component", f"controller-manager=http://127.0.0.1:{manager}"] if manager else []),
                "--audit-log", str(self.logs / auditpolicy.LOG_NAME)]
        pending = self._spawn(component, component.name, args, port=port)
        self.state.console_url = f"http://127.0.0.1:{port}/"
        return pending

    def _spawn_hollow(self, component: Component) -> _Pending:
        """kubemark's hollow nodes: one process registering ``hollow_nodes`` simulated Nodes."""
        root = self.data_dir / "kubelet" / "hollow"
        root.mkdir(parents=True, exist_ok=True)
        port = self._kubelet_ports(1)[0]
        conf = self._kubeconfig(root / "kubelet.conf", HOLLOW_NODES)
        args = [
            "--kubeconfig", str(conf),
            "--hollow", "--count", str(self.hollow_nodes),
            "--port", str(port),
            "--root-dir", str(root),
        ]  # fmt: skip
        return self._spawn(component, HOLLOW_UNIT, args, port=port)

    def _spawn(self, component: Component, name: str, args: list[str], port: int | None = None) -> _Pending:
        log = self.logs / f"{name}.log"
        health = _health_of(component, port)
        args = [*args, *self.extra_args.get(component.name, ())]
        unit = Unit(name, tuple(component_argv(component, args)), log, health)
        record = ProcessRecord(name=name, component=component.name, pid=0, start_time=None, started_at=0.0,
                               log=str(log), port=port)  # the health URL: from the first probe
        with interrupts.uninterrupted():  # started and recorded together, or neither: see kubelab/interrupts.py
            entry = self.supervisor.start(unit, record)
            self.state.processes.append(record)
        self.report(Progress(name, record.pid, f":{port}" if port else "-", log, None))
        return _Pending(component, entry, time.monotonic())

    def _start_tier(self, tier: list[_Pending]) -> None:
        """Wait for every process of a tier to be healthy, reporting each as it gets there.

        Exits meanwhile are restarted by the supervisor (so a component that fails once still starts); one that
        exits ``STARTUP_ATTEMPTS`` times, or is not healthy within its start-up timeout, fails the start."""
        waiting = list(tier)
        while waiting:
            try:
                if self.supervisor.poll():
                    self.changed()
            except StartupFailed as e:
                raise StartupError(
                    f"{e.entry.unit.name} {_ended(e.status)} during start-up ({e.entry.startup_exits} attempts); "
                    f"{process.log_excerpt(e.entry.unit.log, e.entry.log_offset)}"
                ) from None
            for pending in list(waiting):
                entry = pending.entry
                if time.monotonic() - pending.began > pending.component.startup_timeout:
                    raise StartupError(
                        f"{entry.unit.name} did not become healthy within {pending.component.startup_timeout:.0f}s; "
                        f"{process.log_excerpt(entry.unit.log, entry.log_offset)}"
                    )
                if self.supervisor.probe(entry):
                    waiting.remove(pending)
                    endpoint = entry.record.health_url or (f":{entry.record.port}" if entry.record.port else "-")
                    self.report(Progress(entry.record.name, entry.record.pid, endpoint, entry.unit.log,
                                         time.monotonic() - pending.began))
            if waiting:
                time.sleep(0.05)

    # ---- watch and stop ----------------------------------------------------------------------

    def supervise_once(self) -> bool:
        """One supervision pass once the cluster is up: restart what exited; True if the state changed."""
        return self.supervisor.poll()

    def stop(self, timeout: float = 10.0) -> list[ProcessRecord]:
        """Stop restarting, then stop everything in reverse order (tier by tier); returns what was running. Whatever
        happens, each child is then reaped (SIGKILLed if it still runs): none outlives ``stop`` unwaited for."""
        self.supervisor.close()
        try:
            stopped = stop_records(self.state.processes, timeout)
            self.etcd.stop(timeout)  # closes etcd's log (the process itself went with its tier)
            if self.network is not None:
                self.network.remove()
        finally:
            deadline = time.monotonic() + process.REAP_TIMEOUT
            for entry in self.supervisor.entries:  # whatever happened: each child reaped, none left running
                if isinstance(entry.child, process.Spawned):
                    entry.child.reap(max(0.0, deadline - time.monotonic()))
            remove_kubelet_leftovers(self.data_dir)  # a kubelet SIGKILLed on a timed-out stop left its pods
        self.state.processes.clear()
        return stopped


def remove_kubelet_leftovers(data_dir: Path) -> dict[Path, list[str]]:
    """What kubelets killed rather than stopped left under ``data_dir`` (containers, pod sandboxes, cgroups), by
    root directory; call it once no kubelet of the data dir runs (a SIGTERMed kubelet leaves nothing)."""
    roots = sorted(d for d in (data_dir / "kubelet").glob("*") if d.is_dir())
    return {root: removed for root in roots if (removed := leftovers.clean(root))}


def stop_records(records: list[ProcessRecord], timeout: float = 10.0) -> list[ProcessRecord]:
    """Stop recorded processes in reverse start order: clients, then the apiserver, then etcd."""
    clients = [r for r in records if r.component not in CRITICAL]
    tiers = [
        list(reversed(clients)),
        [r for r in records if r.component == "apiserver"],
        # etcd members one by one: a leader stopped while the others stop too waits out etcd's request timeout
        # (7 s) trying to hand its leadership to one of them; stopped in turn, each hands it on at once
        *([r] for r in reversed(records) if r.component == "etcd"),
    ]
    stopped: list[ProcessRecord] = []
    for tier in tiers:
        if not tier:
            continue
        pids = set(process.stop_groups([(r.pid, r.start_time) for r in tier], timeout))
        stopped.extend(r for r in tier if r.pid in pids)
    return stopped


def _ensure_join_object_quietly(client: httpx.Client, path: str, obj: dict[str, Any]) -> None:
    with contextlib.suppress(httpx.HTTPError):
        ensure_join_object(client, path, obj)


def _post_quietly(client: httpx.Client, path: str, obj: object) -> None:
    with contextlib.suppress(httpx.HTTPError):
        client.post(path, json=obj)


def _spawn_unit(unit: Unit) -> process.Spawned:
    return process.spawn(unit.name, unit.argv, unit.log, env=unit.env)


def _health_of(component: Component, port: int | None) -> HealthCheck:
    """The component table's check: ``http`` on the port it was given, else the URL it prints (or survival)."""
    if component.health == "http" and port is not None:
        return HttpHealth(f"http://127.0.0.1:{port}{component.health_path}")
    return PrintedHealth(HEALTH_URL_IN_LOG, component.settle)


def _ended(status: process.ExitStatus) -> str:
    """"exited with code 3" / "was killed by SIGKILL", for start-up errors."""
    if status.signal is not None:
        return f"was killed by {status.signal_name}"
    return f"exited with code {status.code}" if status.code is not None else "exited"
