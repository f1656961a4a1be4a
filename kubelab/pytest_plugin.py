"""The pytest plugin (entry point ``pytest11``: ``kubelab``): a real cluster for a test session, as pytest-kind
gives a kind cluster and envtest an apiserver.

Fixtures: ``kubelab_cluster`` (session: one ``kubelab.Cluster`` per session — per pytest-xdist worker, each with
its own data dir, kernel-picked ports and pod CIDR, so workers never collide), ``kubelab_kubeconfig`` (its path)
and ``kubelab_namespace`` (a fresh namespace per test, deleted after it). Options: ``--kubelab-nodes N``,
``--kubelab-keep`` (keep the data dir: logs, etcd), and the ini keys ``kubelab_nodes``, ``kubelab_components``,
``kubelab_hollow_nodes``. A failing test that used the cluster gets a report section with each component's last
log lines and ``kubectl get events`` (of its namespace, else all).

The plugin is loaded in every suite of an environment where kubelab is installed, so it stays inert unless a test
asks for one of its fixtures: nothing is autouse, nothing starts at collection, every name is ``kubelab``-prefixed.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

if TYPE_CHECKING:
    from kubelab.api import Cluster

__all__ = ["kubelab_cluster", "kubelab_kubeconfig", "kubelab_namespace"]

CLUSTER_KEY = pytest.StashKey["Cluster"]()
NAMESPACE_KEY = pytest.StashKey[str]()  # on the test item: the kubelab_namespace it got
LOG_LINES = 15  # per component, in a failure's report section
DEFAULT_NODES = 1


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


@pytest.fixture(scope="session")
def kubelab_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A started ``kubelab.Cluster`` for the whole session (per xdist worker), stopped at its end."""
    from kubelab.api import DEFAULT_COMPONENTS, Cluster

    config = request.config
    nodes = config.getoption("--kubelab-nodes")
    if nodes is None:
        nodes = int(config.getini("kubelab_nodes") or DEFAULT_NODES)
    components = config.getini("kubelab_components") or list(DEFAULT_COMPONENTS)
    keep = bool(config.getoption("--kubelab-keep"))
    worker = _worker_index()
    # Pods take IPs of their node's podCIDR: a /16 of 127.0.0.0/8 per worker keeps two workers' pods apart
    extra = {"controller-manager": ["--cluster-cidr", f"127.{32 + worker}.0.0/16"]} if worker else {}
    cluster = Cluster(nodes=nodes, components=components, extra_args=extra, keep=keep,
                      hollow_nodes=int(config.getini("kubelab_hollow_nodes") or 0),
                      data_dir=tmp_path_factory.mktemp("kubelab") if keep else None)
    cluster.start()
    config.stash[CLUSTER_KEY] = cluster
    try:
        yield cluster
    finally:
        del config.stash[CLUSTER_KEY]
        cluster.stop()
        if keep:
            print(f"\nkubelab: kept {cluster.data_dir} (logs in {cluster.data_dir / 'logs'})")


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
    if not report.failed or "kubelab_cluster" not in getattr(item, "fixturenames", ()):
        return
    cluster = item.config.stash.get(CLUSTER_KEY, None)
    if cluster is None:
        return
    report.sections.append(("kubelab: events and component logs",
                            failure_details(cluster, item.stash.get(NAMESPACE_KEY, None))))


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
