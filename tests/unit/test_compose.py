"""docker-compose.yml runs what `kubelab up` runs: every service's command is a real `kubelab` command whose flags
are the launcher's own (checked against the launcher's argv and each component's `--help`), with health checks,
the apiserver on 8080 and etcd from the official image. The Dockerfile installs every package.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubelab import cluster as cluster_mod
from kubelab.cluster import Cluster
from kubelab.components import COMPONENTS
from kubelab.etcd import EtcdServer, find_etcd

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
KUBELAB_SERVICES = {"apiserver": "apiserver", "controller-manager": "controller-manager", "scheduler": "scheduler",
                    "node01": "kubelet", "node02": "kubelet"}
# Flags compose adds to the launcher's: a fixed health port, so Docker's health check knows where to look, and
# the scheduler's debug server on every interface, so `kubelab explain` reaches it from another container; the
# apiserver's plain port as the components' server (below).
# Its kubelets also name the process runtime (the launcher leaves the kubelet's --runtime auto to choose: in a
# container without the rights to make namespaces it chooses process too, but compose says so).
COMPOSE_ONLY_FLAGS = {"--healthz-port", "--bind-address", "--master", "--disable-admission-plugins", "--runtime"}
# The launcher writes a fresh encryption key per data dir; compose has no such step (a key in the repository would be
# no secret), so its apiserver stores Secrets unencrypted, as a kube-apiserver without the flag does. Likewise it
# has no PKI in the containers yet (as its etcd): no HTTPS port, and the components reach the apiserver's plain port
# with --master instead of a kubeconfig with their own client certificate; without a CA to publish as
# kube-root-ca.crt, pods get no service-account volume (the apiserver's ServiceAccount admission is off) and the
# controllers need no service accounts of their own; the kubelets' local-path provisioner uses the kubelet's client.
LAUNCHER_ONLY_FLAGS = {"--encryption-provider-config", "--secure-port", "--tls-cert-file", "--tls-private-key-file",
                       "--client-ca-file", "--kubeconfig", "--service-account-key-file",
                       "--service-account-signing-key-file", "--root-ca-file", "--use-service-account-credentials",
                       "--cluster-signing-cert-file", "--cluster-signing-key-file",
                       # compose runs no cluster DNS (yet): its kubelets are told of no DNS server
                       "--cluster-dns", "--cluster-domain",
                       # nor the provisioner's own identity: no PKI (its kubelets provision as themselves)
                       "--provisioner-kubeconfig",
                       "--kubelet-client-certificate", "--kubelet-client-key", "--kubelet-certificate-authority",
                       # nor an audit log, bootstrap tokens or their controllers (compose has no join)
                       "--audit-policy-file", "--audit-log-path", "--audit-log-maxsize", "--audit-log-maxbackup",
                       "--audit-log-maxage", "--audit-log-format", "--enable-bootstrap-token-auth", "--controllers"}
# The kubelets' API behind client certificates and reviews needs the PKI compose lacks: its kubelets keep kube's
# defaults (anonymous, AlwaysAllow).
KUBELET_LAUNCHER_ONLY_FLAGS = {"--anonymous-auth", "--authentication-token-webhook", "--authorization-mode"}
FLAG = re.compile(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)")


def flags(argv: list[str]) -> dict[str, str | None]:
    """``--name value`` / ``--name=value`` pairs of a command line (values None for bare flags)."""
    out: dict[str, str | None] = {}
    for i, arg in enumerate(argv):
        if not arg.startswith("--"):
            continue
        name, eq, value = arg.partition("=")
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        out[name] = value if eq else (nxt if nxt is not None and not nxt.startswith("--") else None)
    return out


class _FakeSpawned:
    def __init__(self, name: str, argv: list[str], log_path: Path) -> None:
        self.name, self.argv, self.log_path = name, argv, log_path
        self.pid, self.start_time, self.started_at = 4242, None, 0.0

    def exit_code(self) -> int | None:
        return None


@pytest.fixture(scope="module")
def launcher_argv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """What `kubelab up --nodes 2` would run, per process name, captured instead of spawned."""
    spawned: dict[str, list[str]] = {}

    def spawn(name: str, argv: list[str], log_path: Path, **_: Any) -> _FakeSpawned:
        spawned[name] = list(argv)
        return _FakeSpawned(name, list(argv), log_path)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cluster_mod.process, "spawn", spawn)
        mp.setattr(Cluster, "_start_etcd", lambda self: None)
        mp.setattr(Cluster, "_start_tier", lambda self, tier: None)
        for talks_to_the_apiserver in ("_create_cluster_objects", "_wait_pod_cidrs"):  # none runs
            mp.setattr(Cluster, talks_to_the_apiserver, lambda self, *args: None)
        # compose's etcd serves its own Docker network without TLS (no PKI in the containers yet): compare with
        # the launcher's plain-HTTP etcd. Compose's kubelets are on the containers' network, as the launcher's
        # with --pod-network host.
        Cluster(tmp_path_factory.mktemp("up"), nodes=2, etcd_binary=find_etcd(), etcd_tls=False,
                pod_network="host").start()
    return spawned


def test_the_services_are_etcd_the_control_plane_and_two_kubelets() -> None:
    assert set(SERVICES) == {"etcd", *KUBELAB_SERVICES}


def test_etcd_is_the_official_image_pinned_to_3_5_with_the_launcher_s_flags(tmp_path: Path) -> None:
    etcd = SERVICES["etcd"]
    assert re.fullmatch(r"(gcr\.io/etcd-development|quay\.io/coreos)/etcd:v3\.5\.\d+", etcd["image"])
    launcher = flags(EtcdServer(tmp_path / "etcd", binary=find_etcd()).command()[1:])
    launcher.pop("--unsafe-no-fsync", None)  # only for throwaway test data
    compose = flags(etcd["command"][1:])
    assert etcd["command"][0] == "etcd"
    assert set(compose) == set(launcher)
    for same in ("--name", "--initial-cluster-state", "--initial-cluster-token", "--quota-backend-bytes",
                 "--heartbeat-interval", "--election-timeout"):
        assert compose[same] == launcher[same], same
    assert "etcdctl" in etcd["healthcheck"]["test"] and "health" in etcd["healthcheck"]["test"]


@pytest.mark.parametrize("service", sorted(KUBELAB_SERVICES))
def test_each_service_runs_the_launcher_s_command(service: str, launcher_argv: dict[str, list[str]]) -> None:
    command = SERVICES[service]["command"]
    component = KUBELAB_SERVICES[service]
    assert command[:2] == ["kubelab", component] and component in COMPONENTS
    name = f"kubelet-{service}" if component == "kubelet" else component
    launcher = flags(launcher_argv[name][3:])  # [python, -m, package, flags...]
    for flag in LAUNCHER_ONLY_FLAGS | (KUBELET_LAUNCHER_ONLY_FLAGS if component == "kubelet" else set()):
        launcher.pop(flag, None)
    compose = flags(command[2:])
    assert set(launcher) <= set(compose), f"{service} lacks the launcher's {set(launcher) - set(compose)}"
    assert set(compose) - set(launcher) <= COMPOSE_ONLY_FLAGS
    if component == "kubelet":  # the same node names; ports differ (one container per kubelet: no clash)
        assert compose["--node-name"] == launcher["--node-name"] == service
    if component == "apiserver":
        assert compose["--insecure-port"] == launcher["--insecure-port"] == "8080"


@pytest.mark.parametrize("component", sorted(set(KUBELAB_SERVICES.values())))
def test_every_flag_is_in_the_component_s_help(component: str) -> None:
    done = subprocess.run([sys.executable, "-m", "kubelab", component, "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    known = set(FLAG.findall(done.stdout))
    for service, used in KUBELAB_SERVICES.items():
        if used == component:
            missing = set(flags(SERVICES[service]["command"][2:])) - known
            assert not missing, f"{service}: `kubelab {component} --help` has no {sorted(missing)}"


def test_health_checks_poll_each_component_s_healthz() -> None:
    for service in KUBELAB_SERVICES:
        spec = SERVICES[service]
        test = " ".join(spec["healthcheck"]["test"])
        port = flags(spec["command"])["--healthz-port" if service != "apiserver" else "--insecure-port"]
        assert f"http://127.0.0.1:{port}/healthz" in test, service
        if service != "apiserver":
            assert spec["depends_on"] == {"apiserver": {"condition": "service_healthy"}}
    assert SERVICES["apiserver"]["depends_on"] == {"etcd": {"condition": "service_healthy"}}


def test_the_apiserver_is_published_on_8080_and_reachable_by_the_others() -> None:
    api = SERVICES["apiserver"]
    assert api["ports"] == ["${KUBELAB_API_PORT:-8080}:8080"]  # 8080 unless the podman test picks a free port
    assert flags(api["command"])["--bind-address"] == "0.0.0.0"
    assert flags(api["command"])["--etcd-servers"] == "http://etcd:2379"
    for service in KUBELAB_SERVICES:
        if service != "apiserver":
            assert flags(SERVICES[service]["command"])["--master"] == "http://apiserver:8080"


def test_the_image_contains_every_package() -> None:
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    for pattern in packages:
        package = pattern.rstrip("*")
        assert f"COPY {package} ./{package}" in dockerfile, package
        assert package not in ignored
    assert all(s.get("build") == "." for name, s in SERVICES.items() if name != "etcd")


def test_docker_compose_config_accepts_the_file() -> None:
    binary = shutil.which("docker-compose")
    if binary is None:
        pytest.skip("docker-compose is not installed (apt-get install docker-compose); .ci/run installs it")
    done = subprocess.run([binary, "-f", str(ROOT / "docker-compose.yml"), "config", "-q"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_podman_override_only_runs_etcd_from_the_kubelab_image() -> None:
    """docker-compose.podman.yml pulls nothing: etcd comes from the image tools/build-image.sh builds (Debian's
    etcd-server in it), with docker-compose.yml's command; every other service already uses that image."""
    override = yaml.safe_load((ROOT / "docker-compose.podman.yml").read_text())
    assert override == {"services": {"etcd": {"image": "localhost/kubelab:latest"}}}
    assert {s["image"] for name, s in SERVICES.items() if name != "etcd"} == {"kubelab:latest"}
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "ARG BASE=python:3.11-slim-bookworm\nFROM ${BASE}\n" in dockerfile
    assert "etcd-server" in (ROOT / "tools" / "build-image.sh").read_text()
