"""The pytest plugin (entry point ``pytest11``: ``kubelab``): a real cluster for a test session, as pytest-kind
gives a kind cluster and envtest an apiserver.

Fixtures: ``kubelab_cluster`` (session: one ``kubelab.Cluster`` per session — per pytest-xdist worker, each with
its own data dir, kernel-picked ports and pod CIDR, so workers never collide), ``kubelab_kubeconfig`` (its path),
``kubelab_namespace`` (a fresh namespace per test, deleted after it) and ``kubelab_clusters`` (module: a factory,
``kubelab_clusters(nodes=2, components=..., extra_args=...)``, that starts a shape once and shares it with every
module asking for the same shape while it runs — ``kubelab_cluster`` is its shape of the options — keeping at most
``IDLE_CLUSTERS`` that no module holds; a test that stops or reconfigures components starts a ``kubelab.Cluster``
of its own instead). Options: ``--kubelab-nodes N``,
``--kubelab-keep`` (keep the data dir: logs, etcd), and the ini keys ``kubelab_nodes``, ``kubelab_components``,
``kubelab_hollow_nodes``. A failing test that used the cluster gets a report section with each component's last
log lines and ``kubectl get events`` (of its namespace, else all); one that used ``kubelab_clusters`` gets the same
for each cluster running.

The plugin is loaded in every suite of an environment where kubelab is installed, so it stays inert unless a test
asks for one of its fixtures: nothing is autouse, nothing starts at collection, every name is ``kubelab``-prefixed.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

if TYPE_CHECKING:
    from kubelab.api import Cluster

__all__ = ["kubelab_cluster", "kubelab_cluster_factory", "kubelab_clusters", "kubelab_kubeconfig", "kubelab_namespace"]

CLUSTER_KEY = pytest.StashKey["Cluster"]()
FACTORY_KEY = pytest.StashKey["ClusterFactory"]()
NAMESPACE_KEY = pytest.StashKey[str]()  # on the test item: the kubelab_namespace it got
LOG_LINES = 15  # per component, in a failure's report section
DEFAULT_NODES = 1
IDLE_CLUSTERS = 1  # per worker: clusters no module holds that stay up for the next module asking for their shape


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kubelab", "kubelab: a real local Kubernetes cluster for the session")
    group.addoption("--kubelab-nodes", type=int, default=None, metavar="N",
                    help=f"kubelets in kubelab_cluster (default: ini kubelab_nodes, else {DEFAULT_NODES})")
    group.addoption("--kubelab-keep", action="store_true", default=False,
                    help="keep kubelab_cluster's data dir (logs, etcd) after the session; its path is printed")
    parser.addini("kubelab_nodes", f"kubelets in kubelab_cluster (default {DEFAULT_NODES})", default=None)
    parser.addini("kubelab_components",
                  "components besides etcd (default: all but the web console ui; 'apiserver' alone: API only)",
                  type="args", default=None)
    parser.addini("kubelab_hollow_nodes", "hollow (simulated) nodes in kubelab_cluster (default 0)", default=None)


def _worker_index() -> int:
    """pytest-xdist's worker number (gw3 → 3), 0 without xdist."""
    match = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    return int(match.group(1)) if match else 0


def pod_cidr(worker: int, workers: int, ordinal: int) -> str | None:
    """The ``--cluster-cidr`` of this worker's ``ordinal``-th cluster (None: the controller-manager's default,
    127.16.0.0/12, for worker 0's first). Pods take IPs of their node's podCIDR, so a /16 of 127.0.0.0/8 per
    cluster keeps pods of two workers, or of two shapes in one worker, apart: ``127.<32 + ordinal·workers +
    worker>.0.0/16``, worker ``gwN``'s first cluster ``127.<32+N>.0.0/16``."""
    if worker == 0 and ordinal == 0:
        return None
    octet = 32 + ordinal * max(workers, 1) + worker
    if octet > 255:
        raise RuntimeError(f"kubelab_clusters: no pod CIDR left for cluster {ordinal} of worker gw{worker}")
    return f"127.{octet}.0.0/16"


@dataclass
class _Running:
    """A started cluster of the factory: its pod CIDR's ordinal (``pod_cidr``) and who holds it now."""

    cluster: Cluster
    ordinal: int
    holders: set[str] = field(default_factory=set)


class ClusterFactory:
    """Started clusters by shape — ``nodes``, ``components``, ``extra_args``, ``hollow_nodes`` — for one session
    (one pytest-xdist worker): the first request of a shape starts it, later ones get the same cluster while it
    runs. Each request is made for a holder (a test module, the session); a cluster no holder holds any more
    stays up for the next module that asks for its shape, but only the ``idle`` most recently used of them:
    idle clusters cost CPU (leases, heartbeats, resyncs) that a small machine feels more than a start-up.
    ``stop()`` stops them all. A cluster is shared as it is, so tests keep to their own namespaces and names."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory, keep: bool = False, idle: int = IDLE_CLUSTERS) -> None:
        self.tmp_path_factory = tmp_path_factory
        self.keep = keep
        self.idle = idle
        self.worker = _worker_index()
        self.workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
        self.running: dict[tuple[object, ...], _Running] = {}  # by shape, least recently requested first

    def acquire(self, holder: str, nodes: int = DEFAULT_NODES, components: Sequence[str] | None = None,
                extra_args: Mapping[str, Sequence[str]] | None = None, *, hollow_nodes: int = 0) -> Cluster:
        """The running cluster of this shape (``components`` None: the library's default set), started if new,
        held for ``holder`` until ``release(holder)``."""
        from kubelab.api import DEFAULT_COMPONENTS, Cluster

        components = tuple(components if components is not None else DEFAULT_COMPONENTS)
        extra = {name: list(args) for name, args in (extra_args or {}).items()}
        shape = (nodes, tuple(sorted(components)), hollow_nodes,
                 tuple(sorted((name, tuple(args)) for name, args in extra.items())))
        if shape in self.running:
            self.running[shape] = running = self.running.pop(shape)
            running.holders.add(holder)
            return running.cluster
        ordinal = min(set(range(len(self.running) + 1)) - {r.ordinal for r in self.running.values()})
        manager = extra.get("controller-manager", [])
        cidr = pod_cidr(self.worker, self.workers, ordinal)
        if cidr and not any(a.startswith("--cluster-cidr") for a in manager):
            extra["controller-manager"] = [*manager, "--cluster-cidr", cidr]
        cluster = Cluster(nodes=nodes, components=components, extra_args=extra, keep=self.keep,
                          hollow_nodes=hollow_nodes,
                          data_dir=self.tmp_path_factory.mktemp("kubelab") if self.keep else None)
        cluster.start()
        self.running[shape] = _Running(cluster, ordinal, {holder})
        return cluster

    def release(self, holder: str) -> None:
        """``holder`` is done with its clusters: stop the idle ones beyond the ``idle`` most recently used."""
        for running in self.running.values():
            running.holders.discard(holder)
        idle = [shape for shape, running in self.running.items() if not running.holders]
        for shape in idle[:max(0, len(idle) - self.idle)]:
            self._stop(shape)

    def stop(self) -> None:
        """Stop every cluster started (the most recently used last)."""
        for shape in list(self.running):
            self._stop(shape)

    def _stop(self, shape: tuple[object, ...]) -> None:
        cluster = self.running.pop(shape).cluster
        cluster.stop()
        if self.keep:
            print(f"\nkubelab: kept {cluster.data_dir} (logs in {cluster.data_dir / 'logs'})")


class Clusters:
    """``kubelab_clusters`` as a test module sees it: ``kubelab_clusters(nodes=2, components=[...],
    extra_args={...})`` is a started cluster of that shape, held for the module."""

    def __init__(self, factory: ClusterFactory, holder: str) -> None:
        self.factory = factory
        self.holder = holder

    def __call__(self, nodes: int = DEFAULT_NODES, components: Sequence[str] | None = None,
                 extra_args: Mapping[str, Sequence[str]] | None = None, *, hollow_nodes: int = 0) -> Cluster:
        return self.factory.acquire(self.holder, nodes, components, extra_args, hollow_nodes=hollow_nodes)


@pytest.fixture(scope="session")
def kubelab_cluster_factory(request: pytest.FixtureRequest,
                            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterFactory]:
    """The session's (this xdist worker's) clusters by shape, all stopped at its end."""
    factory = ClusterFactory(tmp_path_factory, keep=bool(request.config.getoption("--kubelab-keep")))
    request.config.stash[FACTORY_KEY] = factory
    try:
        yield factory
    finally:
        del request.config.stash[FACTORY_KEY]
        factory.stop()


@pytest.fixture(scope="module")
def kubelab_clusters(request: pytest.FixtureRequest, kubelab_cluster_factory: ClusterFactory) -> Iterator[Clusters]:
    """``kubelab_clusters(nodes=…, components=…, extra_args=…)``: a started cluster of that shape, shared with
    every module of the session (of this xdist worker) asking for the same one while it runs."""
    holder = request.node.nodeid
    try:
        yield Clusters(kubelab_cluster_factory, holder)
    finally:
        kubelab_cluster_factory.release(holder)


@pytest.fixture(scope="session")
def kubelab_cluster(request: pytest.FixtureRequest, kubelab_cluster_factory: ClusterFactory) -> Iterator[Cluster]:
    """A started ``kubelab.Cluster`` for the whole session (per xdist worker), stopped at its end: the shape
    the options and ini keys ask for, shared with modules asking ``kubelab_clusters`` for the same shape."""
    config = request.config
    nodes = config.getoption("--kubelab-nodes")
    if nodes is None:
        nodes = int(config.getini("kubelab_nodes") or DEFAULT_NODES)
    cluster = kubelab_cluster_factory.acquire("session", nodes, config.getini("kubelab_components") or None,
                                              hollow_nodes=int(config.getini("kubelab_hollow_nodes") or 0))
    config.stash[CLUSTER_KEY] = cluster
    try:
        yield cluster
    finally:
        del config.stash[CLUSTER_KEY]


@pytest.fixture(scope="session")
def kubelab_kubeconfig(kubelab_cluster: Cluster) -> Path:
    """The session cluster's kubeconfig file (``KUBECONFIG`` for kubectl, the Python client, kopf)."""
    return kubelab_cluster.kubeconfig


@pytest.fixture()
def kubelab_namespace(kubelab_cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of this test's own, deleted after it (its objects with it, by the namespace controller)."""
    stem = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-") or "test"
    name = f"{stem}-{uuid.uuid4().hex[:6]}"
    with httpx.Client(base_url=kubelab_cluster.api_url, timeout=10.0) as client:
        client.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": name}}).raise_for_status()
        request.node.stash[NAMESPACE_KEY] = name
        try:
            yield name
        finally:
            client.delete(f"/api/v1/namespaces/{name}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport,
                                                                                             pytest.TestReport]:
    """A failed test that used the cluster: add its components' last log lines and the events."""
    report = yield
    _add_details(item, report)
    return report


def _add_details(item: pytest.Item, report: pytest.TestReport) -> None:
    if not report.failed:
        return
    fixtures = getattr(item, "fixturenames", ())
    cluster = item.config.stash.get(CLUSTER_KEY, None)
    factory = item.config.stash.get(FACTORY_KEY, None)
    if "kubelab_cluster" in fixtures and cluster is not None:
        report.sections.append(("kubelab: events and component logs",
                                failure_details(cluster, item.stash.get(NAMESPACE_KEY, None))))
    elif "kubelab_clusters" in fixtures and factory is not None:
        for running in factory.running.values():
            report.sections.append((f"kubelab: events and component logs of {running.cluster.api_url}",
                                    failure_details(running.cluster, None)))


def failure_details(cluster: Cluster, namespace: str | None) -> str:
    """``kubectl get events`` (of ``namespace``, else all) and each process's last log lines."""
    parts = []
    scope = ["-n", namespace] if namespace else ["-A"]
    try:
        done = cluster.kubectl("get", "events", *scope, "--sort-by=.lastTimestamp", check=False, timeout=20)
        parts.append(f"$ kubectl get events {' '.join(scope)}\n{done.stdout}{done.stderr}")
    except (OSError, FileNotFoundError) as e:
        parts.append(f"kubectl get events: {e}")
    except Exception as e:  # noqa: BLE001 - a report must never fail the run
        parts.append(f"kubectl get events: {e!r}")
    for name in cluster.log_names():
        try:
            parts.append(f"--- {name}: last {LOG_LINES} lines ---\n{cluster.logs(name, LOG_LINES)}")
        except (OSError, KeyError) as e:
            parts.append(f"--- {name}: {e}")
    return "\n".join(parts)
