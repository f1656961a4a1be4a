"""``<data-dir>/state.json``: what `kubelab up` started, so `status` and `down` can find it later.

Why a file: a detached `up` exits, and `down` runs in another process (often another terminal). Each
record keeps the kernel's start time of the pid, so a pid reused by an unrelated process after a
reboot or a crash is never signalled. The supervisor rewrites a record on every exit and restart (the
pid, RESTARTS, LAST EXIT), so writes are atomic (temp file + rename): `status` and `down` may read
while the supervisor writes.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ClusterState", "ProcessRecord", "load_state", "remove_state", "save_state", "state_path"]

STATE_FILE = "state.json"


@dataclass
class ProcessRecord:
    """One running process: etcd, the apiserver, a controller-manager, a scheduler or a kubelet."""

    name: str  # unique within the cluster: "etcd", "apiserver", "kubelet-node01"
    component: str  # the component table's name ("etcd" for etcd)
    pid: int
    start_time: int | None  # /proc/<pid>/stat start time in clock ticks, guards against pid reuse
    started_at: float  # wall-clock seconds since the epoch, for UPTIME
    log: str
    port: int | None = None
    health_url: str | None = None
    restarts: int = 0  # restarts the supervisor made, as a pod's restartCount
    last_exit_code: int | None = None  # how the previous run ended: an exit code ...
    last_exit_signal: str | None = None  # ... or the signal that killed it ("SIGKILL")
    last_exit_at: float | None = None  # wall-clock seconds
    restart_at: float | None = None  # set while the supervisor waits out the back-off before restarting it

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ProcessRecord:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in raw.items() if k in known})


@dataclass
class ClusterState:
    """Everything `up` started, in start order (`down` stops them in reverse)."""

    data_dir: str
    api_url: str
    etcd_url: str
    etcd_client_port: int
    etcd_peer_port: int
    kubeconfig: str
    supervisor_pid: int | None = None  # the `kubelab up` process that restarts what exits (foreground or detached)
    supervisor_start_time: int | None = None
    supervisor_log: str | None = None  # a detached supervisor's own log (a foreground one prints to its terminal)
    detached: bool = False
    secure_url: str | None = None  # the apiserver's HTTPS URL (the kubeconfig's server); None: plain HTTP only
    console_url: str | None = None  # the web console's (kubelab ui); None: not started
    runtime: str | None = None  # the kubelets' container runtime and why: "linux (auto: ...)"
    pod_network: str | None = None  # host or bridge
    processes: list[ProcessRecord] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ClusterState:
        raw = json.loads(text)
        for old, new in (("launcher_pid", "supervisor_pid"), ("launcher_start_time", "supervisor_start_time")):
            if old in raw:  # a state.json written before the supervisor had its name
                raw.setdefault(new, raw.pop(old))
        processes = [ProcessRecord.from_dict(p) for p in raw.pop("processes", [])]
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in raw.items() if k in known}, processes=processes)


def state_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / STATE_FILE


def save_state(data_dir: str | Path, state: ClusterState) -> Path:
    """Write state.json atomically; returns its path."""
    path = state_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".state.", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(state.to_json())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_state(data_dir: str | Path) -> ClusterState | None:
    """The recorded state, or None when there is none (or it is unreadable)."""
    try:
        return ClusterState.from_json(state_path(data_dir).read_text())
    except (OSError, ValueError, TypeError, KeyError):
        return None


def remove_state(data_dir: str | Path) -> None:
    state_path(data_dir).unlink(missing_ok=True)
