"""``kubelab.Cluster``: a whole local cluster as a Python object, for tests and scripts (issue #22).

Why a second ``Cluster``: ``kubelab.cluster.Cluster`` is the launcher's engine — start order, supervision, the
state `kubelab up` records for `kubelab down`. A test wants less ceremony and other defaults, as envtest and
pytest-kind give: a throw-away data dir, every port picked by the kernel (so pytest-xdist workers and parallel
suites never collide), plain-HTTP etcd on loopback (as envtest's etcd; ``etcd_tls=True`` secures it as
`kubelab up` does), a choice of components (``["apiserver"]`` is envtest's "API only" mode: etcd and the
apiserver), and the cluster counted as started only once every Node is Ready. This module wraps the engine and
adds what a test reaches for: the kubeconfig, ``api_client()``, ``kubectl(...)``, ``logs(...)``, applying
manifests and waiting (``kubelab.testing``). Nothing here is a stand-in: the same processes `kubelab up` runs.

    with kubelab.Cluster(nodes=3) as cluster:
        cluster.kubectl("get", "nodes")
        v1 = kubernetes.client.CoreV1Api(cluster.api_client())
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from kubelab import cluster as engine
from kubelab import process, zygote
from kubelab.componentrun import ComponentRun, package_of, run_component
from kubelab.components import COMPONENTS
from kubelab.etcd import QUOTA_BACKEND_BYTES, etcd_candidates, etcd_version, free_port
from kubelab.etcdcluster import EtcdRecord, default_specs
from kubelab.supervisor import Supervised
from kubelab.testing import Condition, Operator, apply_manifests, wait_for, wait_for_nodes_ready

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

__all__ = ["ALL_COMPONENTS", "DEFAULT_COMPONENTS", "Cluster", "find_kubectl"]

ALL_COMPONENTS = ("apiserver", *engine.CLIENT_COMPONENTS)
# A library cluster runs what its tests need: the web console ("ui") only when asked for.
DEFAULT_COMPONENTS = tuple(c for c in ALL_COMPONENTS if c != "ui")
READY_TIMEOUT = 60.0  # seconds the nodes may take to be Ready after their kubelets are healthy
STARTUP_TIMEOUT = 60.0  # seconds etcd may take to be healthy again after start_component


def find_kubectl() -> str:
    """The real kubectl: ``$KUBELAB_KUBECTL``, else ``kubectl`` on PATH."""
    found = os.environ.get("KUBELAB_KUBECTL") or shutil.which("kubectl")
    if not found:
        raise FileNotFoundError("no kubectl: set $KUBELAB_KUBECTL or put kubectl on PATH")
    return found


class Cluster:
    """etcd, an apiserver and (by default) a controller-manager, a scheduler and ``nodes`` kubelets.

    ``data_dir`` None: a temporary directory, removed by ``stop()`` unless ``keep`` is set. ``snapshot``: an etcd
    snapshot file (`kubelab snapshot save`) restored into the fresh data dir before etcd starts. ``manifests``: a
    YAML file or a directory of them, applied (server-side) once the cluster is up. ``extra_args``: flags added
    to a component's command line, by component name (``{"apiserver": ["--etcd-compaction-interval", "0"]}``).
    ``pod_network``: ``host``, ``bridge`` or ``auto`` (``kubelab up --pod-network``); ``runtime``: the kubelets'
    (``kubelab up --runtime``; None: ``linux`` with the bridge, else ``process``); ``proxy_mode``: kube-proxy's mode
    with the bridge (``kubelab up --proxy-mode``).
    The library keeps ``host`` and ``process`` as its defaults where `kubelab up` has ``auto``: tests start many
    clusters at once on one machine, and only one of them can own the host's routes to the pod network.
    ``apiservers``: apiserver processes sharing the secure port (``kubelab up --apiservers``); ``api_url`` is the
    first one's plain port. ``fork_server``: fork the components from this process's pre-imported zygote
    (``kubelab.zygote``: the imports are paid once per Python process, not once per component per cluster);
    False: a fresh interpreter for each, as `kubelab up --no-fork-server` runs them.
    ``etcd_quota_backend_bytes``: etcd's ``--quota-backend-bytes`` (a small one fills up and raises etcd's NOSPACE
    alarm, for tests of what follows).
    ``etcd_members``: an etcd cluster of that many members (``etcd-1`` …, each a process ``kill`` and
    ``start_component`` take by that name; ``etcd_url`` lists them all), for tests of a member's loss.
    """

    def __init__(
        self,
        nodes: int = 3,
        data_dir: str | os.PathLike[str] | None = None,
        components: Sequence[str] = DEFAULT_COMPONENTS,
        extra_args: Mapping[str, Sequence[str]] | None = None,
        *,
        hollow_nodes: int = 0,
        keep: bool = False,
        snapshot: str | os.PathLike[str] | None = None,
        manifests: str | os.PathLike[str] | None = None,
        port: int | None = None,
        etcd_tls: bool = False,
        timeout: float = READY_TIMEOUT,
        pod_network: str = "host",
        apiservers: int = 1,
        proxy_mode: str = "auto",
        runtime: str | None = None,
        fork_server: bool = True,
        etcd_quota_backend_bytes: int = QUOTA_BACKEND_BYTES,
        etcd_members: int = 1,
    ) -> None:
        unknown = [c for c in components if c not in ALL_COMPONENTS]
        if unknown or "apiserver" not in components:
            raise ValueError(f"components must include 'apiserver' and name only {list(ALL_COMPONENTS)} "
                             f"(etcd always runs); got {list(components)}")
        if etcd_members < 1:
            raise ValueError("etcd_members must be 1 or more")
        if nodes < 0 or hollow_nodes < 0:
            raise ValueError("nodes and hollow_nodes must be 0 or more")
        self.node_count = nodes if "kubelet" in components else 0
        self.hollow_nodes = hollow_nodes if "kubelet" in components else 0
        self.components = tuple(components)
        self.extra_args = dict(extra_args or {})
        self.keep = keep or data_dir is not None  # a directory the caller chose is never removed
        self._data_dir = Path(data_dir).absolute() if data_dir is not None else None
        self.snapshot = Path(snapshot) if snapshot is not None else None
        self.manifests = Path(manifests) if manifests is not None else None
        self._port = port
        self.etcd_tls = etcd_tls
        self.timeout = timeout
        self.pod_network = pod_network  # "bridge": the cluster network and kube-proxy (`kubelab up --pod-network`)
        self.apiservers = apiservers
        self.proxy_mode = proxy_mode
        self.runtime = runtime or ("linux" if pod_network == "bridge" else "process")
        self.fork_server = fork_server
        self.etcd_quota_backend_bytes = etcd_quota_backend_bytes
        self.etcd_members = etcd_members
        self._engine: engine.Cluster | None = None
        self._runs: list[ComponentRun] = []  # run_component's, stopped before the cluster
        self._first_argv: dict[str, tuple[str, ...]] = {}  # command lines start_component's extra_args add to

    # ---- lifecycle -----------------------------------------------------------------------------

    def start(self) -> Cluster:
        """Start everything; return once the apiserver is healthy and every Node is Ready (then apply
        ``manifests``). On failure whatever started is stopped again and the error (with the log) raised."""
        if self._engine is not None:
            raise RuntimeError("this cluster is already started")
        if self.fork_server:
            zygote.shared()  # on first use its imports run while the data dir, the PKI and etcd are made
        if self._data_dir is None:
            self._data_dir = Path(tempfile.mkdtemp(prefix="kubelab-"))
        self._data_dir.mkdir(parents=True, exist_ok=True)
        if self.snapshot is not None:
            self._restore(self.snapshot)
        self._engine = engine.Cluster(
            self._data_dir,
            port=self._port or free_port(),
            nodes=self.node_count,
            etcd_tls=self.etcd_tls,
            components=[c for c in self.components if c != "apiserver"],
            hollow_nodes=self.hollow_nodes,
            extra_args=self.extra_args,
            kubelet_base_port=None,
            secure_port=None,
            pod_network=self.pod_network,
            apiservers=self.apiservers,
            proxy_mode=self.proxy_mode,
            runtime=self.runtime,
            spawn=zygote.spawn_unit if self.fork_server else None,
            etcd_quota_backend_bytes=self.etcd_quota_backend_bytes,
            etcd_members=self.etcd_members,
        )
        try:
            self._engine.start()
            if self.node_count or self.hollow_nodes:
                wait_for_nodes_ready(self.api_url, self.node_count + self.hollow_nodes, self.timeout)
            if self.manifests is not None:
                self.apply(self.manifests)
        except BaseException:
            self.stop()
            raise
        return self

    def _restore(self, snapshot: Path) -> None:
        """Into a data dir with no etcd yet, recording first how its etcd will run (so the restored member's
        peer URL has this cluster's scheme)."""
        from kubelab import snapshot as snapshots  # grpc: only when a snapshot is asked for

        assert self._data_dir is not None
        if EtcdRecord.load(self._data_dir) is None:
            binary = etcd_candidates()[0]
            EtcdRecord(etcd_version(binary) or "0.0.0", binary, default_specs(1), self.etcd_tls).save(self._data_dir)
        snapshots.restore(self._data_dir, snapshot)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every process (clients, apiserver, etcd) and remove a temporary data dir unless kept."""
        runs, self._runs = self._runs, []
        for run in reversed(runs):
            run.stop(timeout=timeout)
        running, self._engine = self._engine, None
        self._first_argv.clear()
        if running is not None:
            running.stop(timeout)
        if not self.keep and self._data_dir is not None:
            shutil.rmtree(self._data_dir, ignore_errors=True)

    def stop_component(self, name: str, timeout: float = 10.0) -> None:
        """Stop one process — ``apiserver``, ``apiserver-2``, ``scheduler``, ``kubelet-node01``, ``etcd`` ... (the
        names of ``log_names()``) — and leave it stopped, as a test that takes the apiserver away needs; the rest
        keeps running. ``start_component`` starts it again."""
        self.running.supervisor.stop_unit(self._unit(name), timeout)

    def kill(self, name: str) -> None:
        """``kill -9`` one process (its process group), as a crash would, and leave it down: a chaos test's
        component failure; ``start_component`` brings it back."""
        self.running.supervisor.stop_unit(self._unit(name), kill=True)

    def start_component(self, name: str, extra_args: Sequence[str] | None = None) -> None:
        """Start a process ``stop_component`` stopped, with the same command line (its port, its data), and return
        once it is healthy; a process that exits or stays unhealthy for its start-up timeout raises
        ``StartupError`` with its log. A process that is running is left alone. ``extra_args``: flags added to the
        command line the cluster first gave it, from now on (a flag given again wins: the apiserver restarted with
        another ``--encryption-provider-config``); None: the command line it last ran with."""
        entry = self._unit(name)
        if extra_args is not None and entry.child is None:
            first = self._first_argv.setdefault(name, entry.unit.argv)
            entry.unit = dataclasses.replace(entry.unit, argv=(*first, *extra_args))
        supervisor = self.running.supervisor
        supervisor.restart_now(entry)
        component = COMPONENTS.get(entry.record.component)  # etcd is no component of the table
        limit = component.startup_timeout if component is not None else STARTUP_TIMEOUT
        deadline = time.monotonic() + limit
        while not supervisor.probe(entry):
            assert entry.child is not None
            status = entry.child.poll()
            if status is not None or time.monotonic() > deadline:
                how = f"exited ({status.describe()})" if status is not None else f"not healthy within {limit:.0f}s"
                raise engine.StartupError(f"{name} {how}; {process.log_excerpt(entry.unit.log, entry.log_offset)}")
            time.sleep(0.05)

    def restart(self, name: str, timeout: float = 10.0, extra_args: Sequence[str] | None = None) -> None:
        """``stop_component`` then ``start_component``: a component restarted, as after a crash or an upgrade (with
        ``extra_args``: with other flags, as after a configuration change)."""
        self.stop_component(name, timeout)
        self.start_component(name, extra_args)

    def run_component(self, component: str, *flags: str, log: str | os.PathLike[str] | None = None,
                      env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
                      fork_server: bool | None = None) -> ComponentRun:
        """Start one more component process against this cluster — ``controller-manager``, ``scheduler``,
        ``kubelet`` (``--hollow --count N`` for hollow nodes), ``proxy``, ``dns``, ``ui`` — with the flags a test
        chooses, and return its handle (``pid``, ``log``, ``poll()``, ``wait()``, ``stop(sig)``, ``kill()``);
        it is not supervised (an exit stays an exit) and is stopped by ``stop()`` if still running. It reaches the
        apiserver's plain port (``--master api_url``: ``system:masters``) unless ``flags`` name a ``--kubeconfig``
        or ``--master``; ``apiserver``: one more apiserver on this cluster's etcd (its ``--etcd-servers`` and
        client certificate) unless ``flags`` name ``--etcd-servers``, with only the flags given besides. ``log``:
        default ``logs/<component>-<n>.log`` in the data dir; ``fork_server``: default
        the cluster's (``kubelab.componentrun`` on the zygote's caveat)."""
        named = {f.split("=", 1)[0] for f in flags}
        if package_of(component) == "apiserver":
            reach = [] if "--etcd-servers" in named else self.running.etcd.apiserver_flags()
        else:
            reach = [] if named & {"--kubeconfig", "--master"} else ["--master", self.api_url]
        log = log if log is not None else self.data_dir / "logs" / f"{component}-{len(self._runs) + 1}.log"
        run = run_component(component, *reach, *flags, log=log, env=env, cwd=cwd,
                            fork_server=self.fork_server if fork_server is None else fork_server)
        self._runs.append(run)
        return run

    def _unit(self, name: str) -> Supervised:
        for entry in self.running.supervisor.entries:
            if entry.unit.name == name:
                return entry
        raise KeyError(f"no process {name!r} in this cluster: {self.log_names()}")

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ---- what a test reaches for ---------------------------------------------------------------

    @property
    def running(self) -> engine.Cluster:
        if self._engine is None:
            raise RuntimeError("the cluster is not started: call start() or use it as a context manager")
        return self._engine

    @property
    def data_dir(self) -> Path:
        if self._data_dir is None:
            raise RuntimeError("the cluster has no data dir before start()")
        return self._data_dir

    @property
    def api_url(self) -> str:
        return self.running.api_url

    @property
    def api_urls(self) -> list[str]:
        """Each apiserver's plain-HTTP URL (``apiservers`` of them on the one etcd); the first is ``api_url``."""
        return [f"http://127.0.0.1:{port}" for port in self.running.apiserver_ports]

    @property
    def etcd_url(self) -> str:
        """etcd's client URL (comma-separated with several members), as the apiserver's ``--etcd-servers``: for a
        test that reads or compacts the store under the apiserver."""
        return self.running.etcd.servers

    @property
    def secure_url(self) -> str:
        """The apiserver's HTTPS URL, the kubeconfig's server (``api_url`` is the plain-HTTP port)."""
        return self.running.secure_url

    @property
    def kubeconfig(self) -> Path:
        """A kubeconfig (context ``kubelab``) for kubectl, the Python client, kopf: ``KUBECONFIG=...``: HTTPS, with
        the cluster CA and the admin client certificate (``kubernetes-admin`` in ``system:masters``)."""
        return Path(self.running.state.kubeconfig)

    @property
    def nodes(self) -> list[str]:
        """The names of the Nodes registered now."""
        with process.loopback_client(10.0, self.api_url) as client:
            items = client.get("/api/v1/nodes").raise_for_status().json()["items"]
        return [item["metadata"]["name"] for item in items]

    def api_client(self) -> ApiClient:
        """An ``ApiClient`` of the official ``kubernetes`` package, configured from this cluster's kubeconfig."""
        from kubernetes import config  # the client is the test extra's, not a runtime dependency

        new_client: Callable[..., ApiClient] = config.new_client_from_config  # the package has no annotations
        return new_client(config_file=str(self.kubeconfig))

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl against this cluster; ``check``: raise with its stderr when it fails."""
        done = subprocess.run([find_kubectl(), "--kubeconfig", str(self.kubeconfig), *args], input=input,
                              capture_output=True, text=True, timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
        return done

    def log_names(self) -> list[str]:
        """The processes with a log: ``etcd``, ``apiserver``, ``controller-manager``, ``kubelet-node01``, ..."""
        return [record.name for record in self.running.state.processes]

    def logs(self, component: str, lines: int | None = None) -> str:
        """A process's log (``kubelet`` means every kubelet's), or its last ``lines`` lines."""
        records = [r for r in self.running.state.processes
                   if r.name == component or (component == "kubelet" and r.component == "kubelet")]
        if not records:
            raise KeyError(f"no process {component!r} in this cluster: {self.log_names()}")
        texts = []
        for record in records:
            text = Path(record.log).read_text(errors="replace") if Path(record.log).exists() else ""
            texts.append(process.tail(Path(record.log), lines) if lines is not None else text)
        return "\n".join(texts)

    def apply(self, path: str | os.PathLike[str], namespace: str | None = None) -> list[dict[str, Any]]:
        """Server-side apply every object of a YAML file or a directory of them; the objects as stored."""
        return apply_manifests(self.api_url, Path(path), namespace=namespace)

    def wait_for(self, obj: Any, condition: Condition, timeout: float = 30.0) -> dict[str, Any] | None:
        """Until ``condition`` holds for ``obj`` (``kubelab.testing.wait_for``: ``"Ready"``, ``"delete"``,
        ``"jsonpath={.status.phase}=Running"`` or a predicate); the object then."""
        return wait_for(self.api_url, obj, condition, timeout)

    @contextmanager
    def operator(self, *argv: str, env: Mapping[str, str] | None = None,
                 cwd: str | os.PathLike[str] | None = None) -> Iterator[Operator]:
        """Run an operator process (``python -m kopf run ...``) with ``KUBECONFIG`` set to this cluster's, for the
        ``with`` block; stopped (SIGTERM, then SIGKILL) at its end. Its output: ``operator.log``."""
        log = self.data_dir / "logs" / f"operator-{time.monotonic_ns()}.log"
        with Operator(list(argv), log, env={**os.environ, **(env or {}), "KUBECONFIG": str(self.kubeconfig)},
                      cwd=Path(cwd) if cwd is not None else None) as running:
            yield running
