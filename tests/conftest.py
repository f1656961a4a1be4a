"""Session fixtures over the kubelab pytest plugin: an API-only ``kubelab.Cluster`` (etcd and a real apiserver,
as `kubelab up` runs them), clients and the real kubectl.

Tests share one etcd and one apiserver (per pytest-xdist worker); each test that writes gets a namespace of its own
(``ns``) so tests never see each other's objects. Tests that need other shapes ask the plugin's
``kubelab_clusters``; tests that restart or kill the apiserver start a ``kubelab.Cluster`` of their own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubelab.api import Cluster
from kubelab.componentrun import ComponentRun
from kubelab.etcd import EtcdServer, free_port
from kubelab.pytest_plugin import ClusterFactory
from support import scheduling

ROOT = Path(__file__).resolve().parent.parent
KUBECTL = os.environ.get("KUBELAB_KUBECTL", "/usr/lib/google-cloud-sdk/bin/kubectl.1.32")


# The session apiserver's flags beyond the library's (`kubelab up`'s: TLS, ``--authorization-mode Node,RBAC`` with the
# plain port's requests system:masters, service-account keys, encryption at rest, audit log):
SESSION_APISERVER_ARGS = [
    # No compaction: the session runs longer than kube's 5 min interval, and tests such as `kubelab trace` replay
    # objects' history from etcd (compaction has its own tests, on etcds of their own).
    "--etcd-compaction-interval", "0",
    # Pods need no service account (kube's integration framework does the same): the session runs no
    # controller-manager to make `default` accounts and the root CA ConfigMap.
    "--disable-admission-plugins", "ServiceAccount",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the host-global tests and then the long modules first (``support.scheduling``)."""
    scheduling.order(items)


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own choice of scheduler
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> scheduling.Scheduler | None:
    """Whatever ``--dist`` says (but ``each``): a module per worker at a time, the host-global tests on one worker."""
    return None if config.getvalue("dist") == "each" else scheduling.Scheduler(config, log)


def api_only(*extra: str, **options: Any) -> Cluster:
    """An API-only ``kubelab.Cluster`` of a test's own (not started: ``with api_only(...) as cluster``), with the
    session apiserver's flags and then ``extra`` (a flag given again wins), for tests that stop the apiserver or
    need other flags; ``options``: ``kubelab.Cluster``'s (``apiservers=2``, ``etcd_quota_backend_bytes``, ...)."""
    os.environ.setdefault("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")  # as the session's: tests need no durable etcd
    return Cluster(nodes=0, components=["apiserver"], extra_args=api_only_args(*extra), **options)


def second_apiserver(cluster: Cluster, *extra: str, ready: Callable[[], bool] | None = None,
                     log: Path | None = None) -> tuple[ComponentRun, str]:
    """One more apiserver on ``cluster``'s etcd (``Cluster.run_component``: its own process, plain port and, unless
    ``extra`` names one, no secure port), with the session apiserver's flags, RBAC and then ``extra``; returned with
    its plain URL once ``ready()`` holds (default: that URL's ``/healthz`` answers 200), for the tests of what an
    apiserver a ``kubelab.Cluster`` cannot run shows: one advertising another address, one without a plain port."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    run = cluster.run_component("apiserver", "--insecure-port", str(port), *SESSION_APISERVER_ARGS,
                                "--authorization-mode", "Node,RBAC", *extra, log=log)

    def healthy() -> bool:
        try:
            return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False
    run.wait_ready(ready or healthy)
    return run, url


def api_only_args(*extra: str) -> dict[str, list[str]]:
    """``extra_args`` of an API-only cluster: the session apiserver's flags, then ``extra``."""
    return {"apiserver": [*SESSION_APISERVER_ARGS, *extra]}


@pytest.fixture(scope="session")
def apiserver(kubelab_cluster_factory: ClusterFactory) -> Cluster:
    """The session's (this xdist worker's) API-only cluster: etcd and one apiserver, from the kubelab plugin."""
    os.environ.setdefault("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")
    return kubelab_cluster_factory.acquire("tests/conftest.py", nodes=0, components=["apiserver"],
                                           extra_args=api_only_args())


@pytest.fixture(scope="session")
def etcd(apiserver: Cluster) -> EtcdServer:
    """The session apiserver's etcd (plain HTTP on loopback), for tests that read it or run a second apiserver."""
    return apiserver.running.etcd.members[0]


@pytest.fixture(scope="session")
def api_url(apiserver: Cluster) -> str:
    """The session apiserver's plain port: every request is ``system:masters``, as on `kubelab up`'s."""
    return apiserver.api_url


@pytest.fixture()
def client(api_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api_url, timeout=30) as c:
        yield c


@pytest.fixture(scope="module")
def module_ns(api_url: str) -> str:
    """A namespace shared by one module's tests (those that share one slow fixture, such as a kubelet and pod)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    resp = httpx.post(f"{api_url}/api/v1/namespaces", json={"metadata": {"name": name}})
    assert resp.status_code == 201, resp.text
    return name


@pytest.fixture()
def ns(client: httpx.Client) -> Iterator[str]:
    """A fresh namespace for one test."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    resp = client.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": name}})
    assert resp.status_code == 201, resp.text
    yield name


@pytest.fixture()
def api(api_url: str) -> Iterator[Any]:
    """The official Python client (``kubernetes.client.ApiClient``) pointed at the test apiserver."""
    from kubernetes import client as k8s

    cfg = k8s.Configuration()
    cfg.host = api_url
    with k8s.ApiClient(cfg) as api_client:
        yield api_client


@pytest.fixture(scope="session")
def kubectl_bin() -> str:
    if not shutil.which(KUBECTL) and not os.path.exists(KUBECTL):
        pytest.skip(f"kubectl not found at {KUBECTL}")
    return KUBECTL


class Kubectl:
    """Runs the real kubectl against the test apiserver, with a throwaway HOME (no user kubeconfig)."""

    def __init__(self, binary: str, server: str, home: Path) -> None:
        self.binary = binary
        self.server = server
        self.home = home

    def __call__(self, *args: str, input: str | None = None, check: bool = True,
                 env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        full_env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.home), "KUBECONFIG": str(self.home / "none")}
        full_env.update(env or {})
        result = subprocess.run([self.binary, "-s", self.server, *args], input=input, capture_output=True,
                                text=True, env=full_env, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result


def kubectl_release(version: str) -> str:
    """The real kubectl of one release (``kubectl.1.29`` …) beside the default one; the test is skipped without it."""
    binary = f"/usr/lib/google-cloud-sdk/bin/kubectl.{version}"
    if not os.path.exists(binary):
        pytest.skip(f"kubectl not found at {binary}")
    return binary


@pytest.fixture()
def kubectl(kubectl_bin: str, api_url: str, tmp_path: Path) -> Kubectl:
    return Kubectl(kubectl_bin, api_url, tmp_path)
