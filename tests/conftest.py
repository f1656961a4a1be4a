"""Session fixtures over the kubelab pytest plugin: an API-only ``kubelab.Cluster`` (etcd and a real apiserver,
as `kubelab up` runs them), clients and the real kubectl.

Tests share one etcd and one apiserver (per pytest-xdist worker); each test that writes gets a namespace of its own
(``ns``) so tests never see each other's objects. Tests that need other shapes ask the plugin's
``kubelab_clusters``; tests that restart or kill the apiserver start a ``kubelab.Cluster`` of their own.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubelab.api import Cluster
from kubelab.etcd import EtcdServer, free_port
from kubelab.pytest_plugin import ClusterFactory

ROOT = Path(__file__).resolve().parent.parent
KUBECTL = os.environ.get("KUBELAB_KUBECTL", "/usr/lib/google-cloud-sdk/bin/kubectl.1.32")


class ApiServer:
    """A bare ``python -m apiserver`` process on a free port, with its log in ``log_path``: only for the few tests
    that a ``kubelab.Cluster`` cannot serve (each says why in its docstring) — a second apiserver on another
    cluster's etcd, partial etcd TLS flags, no plain port, a restart with other flags. Every other test gets its
    apiserver from the kubelab plugin (the session's) or from ``api_only`` (one of its own)."""

    def __init__(self, etcd_url: str, log_dir: Path, port: int | None = None, extra: list[str] | None = None) -> None:
        self.etcd_url = etcd_url
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.health_url = f"{self.url}/healthz"  # a server without a plain port is probed over HTTPS ...
        self.verify: ssl.SSLContext | bool = True  # ... with a context that trusts it
        self.log_path = log_dir / f"apiserver-{self.port}.log"
        # No compaction unless a test asks for it: the session runs longer than kube's 5 min interval, and tests
        # such as `kubelab trace` replay objects' history from etcd (compaction has its own tests).
        self.extra = extra or []
        if not any(a.startswith("--etcd-compaction-interval") for a in self.extra):
            self.extra = [*self.extra, "--etcd-compaction-interval", "0"]
        # Pods need no service account unless a test asks for the plugin (kube's integration framework does the
        # same): the session runs no controller-manager to make `default` accounts and the root CA ConfigMap.
        if not any(a.startswith("--disable-admission-plugins") for a in self.extra):
            self.extra = [*self.extra, "--disable-admission-plugins", "ServiceAccount"]
        # As `kubelab up` runs it: the plain port's requests are system:masters, impersonated ones meet RBAC.
        if not any(a.startswith("--authorization-mode") for a in self.extra):
            self.extra = [*self.extra, "--authorization-mode", "Node,RBAC"]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 30.0) -> None:
        """Start the process and wait until it is healthy; on any failure (an exit, the timeout, an interrupt) it is
        stopped and waited for before the error is raised, so no running apiserver is ever left behind."""
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "apiserver", "--etcd-servers", self.etcd_url, "--port", str(self.port),
                 *self.extra],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        try:
            self._wait_healthy(self.proc, timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self, proc: subprocess.Popen[bytes], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"apiserver exited ({proc.returncode}):\n{self.log_path.read_text()[-4000:]}")
            try:
                if httpx.get(self.health_url, timeout=1, verify=self.verify).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"apiserver not healthy after {timeout}s:\n{self.log_path.read_text()[-4000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


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


def api_only(*extra: str, **options: Any) -> Cluster:
    """An API-only ``kubelab.Cluster`` of a test's own (not started: ``with api_only(...) as cluster``), with the
    session apiserver's flags and then ``extra`` (a flag given again wins), for tests that stop the apiserver or
    need other flags; ``options``: ``kubelab.Cluster``'s (``apiservers=2``, ``etcd_quota_backend_bytes``, ...)."""
    os.environ.setdefault("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")  # as the session's: tests need no durable etcd
    return Cluster(nodes=0, components=["apiserver"], extra_args=api_only_args(*extra), **options)


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
