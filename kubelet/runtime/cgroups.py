"""cgroups per pod and per container, v1 or v2, as the kubelet's cgroup manager and runc lay them out.

Which version: the kubelet asks ``statfs("/sys/fs/cgroup")`` for CGROUP2_SUPER_MAGIC; the file system type of
that mount in ``/proc/self/mounts`` says the same (``cgroup2`` → v2; a ``tmpfs`` holding one mount per
controller → v1, even where an empty cgroup2 hangs at ``/sys/fs/cgroup/unified``, the hybrid layout).

The tree: ``<controller>/kubelab/<node>/pod<uid>/<container id>`` (v1, for memory and cpu) or
``kubelab/<node>/pod<uid>/<container id>`` (v2, with the controllers enabled in ``cgroup.subtree_control`` down
the path). From a container's resources, as the kubelet and runc set them:

    limits.memory    memory.limit_in_bytes and memory.memsw.limit_in_bytes (v1: no swap beyond the limit)
                     / memory.max and memory.swap.max=0 (v2); an allocation over it is an OOM kill
    limits.cpu       CFS quota: cpu.cfs_quota_us = milli × period / 1000 with cpu.cfs_period_us 100000 / cpu.max
    requests.cpu     cpu.shares = milli × 1024 / 1000 (at least 2) / cpu.weight from the shares (runc's formula)

``oom_kill`` in ``memory.oom_control`` (v1) or ``memory.events`` (v2) tells the shim the container was OOM-killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from apimachinery.quantity import parse_quantity

ROOT = Path("/sys/fs/cgroup")
# Each v1 hierarchy a process joins is one more write to cgroup.procs, which waits for an RCU grace period under
# a global lock (cgroup_threadgroup_rwsem): with the container's own and its pause's, 30 pods starting at once on
# two cores spent most of their start-up there. So memory and cpu only (pids is not set by the kubelet either,
# without --pod-max-pids), and the pause process stays in the kubelet's cgroup.
V1_CONTROLLERS = ("memory", "cpu")
CFS_PERIOD = 100_000
MIN_SHARES = 2
RMDIR_TRIES = 50


def version(mounts: str = "/proc/self/mounts") -> Literal[1, 2]:
    with open(mounts) as f:
        for line in f:
            fields = line.split()
            if len(fields) > 2 and fields[1] == str(ROOT):
                return 2 if fields[2] == "cgroup2" else 1
    return 1


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def shares(milli: int) -> int:
    return max(MIN_SHARES, milli * 1024 // 1000)


def weight(cpu_shares: int) -> int:
    """runc's ``ConvertCPUSharesToCgroupV2Value``."""
    return 1 + ((cpu_shares - 2) * 9999) // 262142


def _quantity(resources: Mapping[str, Any], kind: str, name: str) -> Any:
    value = (resources.get(kind) or {}).get(name)
    return None if value is None else parse_quantity(value)


class Cgroups:
    """The cgroups of one node's pods under ``kubelab/<node>``."""

    def __init__(self, node: str, root: Path = ROOT) -> None:
        self.root = root
        self.version = version()
        self.base = Path("kubelab") / node

    def _dirs(self, relative: Path) -> list[Path]:
        if self.version == 2:
            return [self.root / relative]
        return [self.root / c / relative for c in V1_CONTROLLERS if (self.root / c).is_dir()]

    def pod_dirs(self, pod_uid: str) -> list[Path]:
        return self._dirs(self.base / f"pod{pod_uid}")

    def create_pod(self, pod_uid: str) -> list[Path]:
        dirs = self.pod_dirs(pod_uid)
        if self.version == 2:
            self._enable_v2(self.base / f"pod{pod_uid}")
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
        return dirs

    def _enable_v2(self, relative: Path) -> None:
        """Delegate the memory and cpu controllers down to ``relative``'s children."""
        current = self.root
        for part in relative.parts:
            with contextlib.suppress(OSError):
                _write(current / "cgroup.subtree_control", "+memory +cpu")
            current = current / part
            current.mkdir(exist_ok=True)
        with contextlib.suppress(OSError):
            _write(current / "cgroup.subtree_control", "+memory +cpu")

    def container_plan(self, pod_uid: str, container_id: str, resources: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The container's cgroups as its shim makes them (``isolate.prepare``), nothing touched here: each
        directory with its files' values, ``[name, value, required]`` (not required: a file the kernel may lack,
        memsw without swap accounting). The pod's directories come with the container's (v1), or are made here
        first, with the controllers enabled down to them (v2)."""
        dirs = self._dirs(self.base / f"pod{pod_uid}" / container_id)
        if self.version == 2 and not dirs[0].parent.is_dir():
            self.create_pod(pod_uid)
        memory = _quantity(resources, "limits", "memory")
        cpu_limit = _quantity(resources, "limits", "cpu")
        cpu_request = _quantity(resources, "requests", "cpu") or cpu_limit
        plan: list[dict[str, Any]] = []
        if self.version == 2:
            files = []
            if memory is not None:
                files += [["memory.max", str(memory.value()), True], ["memory.swap.max", "0", False]]
            if cpu_limit is not None:
                files.append(["cpu.max", f"{max(1000, cpu_limit.milli_value() * CFS_PERIOD // 1000)} {CFS_PERIOD}",
                              True])
            if cpu_request is not None:
                files.append(["cpu.weight", str(weight(shares(cpu_request.milli_value()))), True])
            return [{"path": str(dirs[0]), "files": files}]
        for d in dirs:
            controller = d.relative_to(self.root).parts[0]
            files = []
            if controller == "memory" and memory is not None:
                files.append(["memory.limit_in_bytes", str(memory.value()), True])
                files.append(["memory.memsw.limit_in_bytes", str(memory.value()), False])  # needs swap accounting
            elif controller == "cpu":
                if cpu_limit is not None:
                    files.append(["cpu.cfs_period_us", str(CFS_PERIOD), True])
                    files.append(["cpu.cfs_quota_us", str(max(1000, cpu_limit.milli_value() * CFS_PERIOD // 1000)),
                                  True])
                if cpu_request is not None:
                    files.append(["cpu.shares", str(shares(cpu_request.milli_value())), True])
            plan.append({"path": str(d), "files": files})
        return plan

    def oom_events(self, pod_uid: str, container_id: str) -> str:
        """The file whose ``oom_kill`` counts the container's OOM kills."""
        relative = self.base / f"pod{pod_uid}" / container_id
        if self.version == 2:
            return str(self.root / relative / "memory.events")
        return str(self.root / "memory" / relative / "memory.oom_control")

    def remove_pod(self, pod_uid: str) -> None:
        """Kill what is left in the pod's cgroups and remove them (children first)."""
        for d in self.pod_dirs(pod_uid):
            remove(d)
        for d in self._dirs(self.base) + self._dirs(self.base.parent):  # gone with this node's last pod
            with contextlib.suppress(OSError):
                d.rmdir()


    def remove_node(self) -> None:
        """Every pod's cgroups of this node, and the node's own (a test's clean-up, a node taken away)."""
        uids = {d.name.removeprefix("pod") for base in self._dirs(self.base) if base.is_dir()
                for d in base.iterdir() if d.is_dir() and d.name.startswith("pod")}
        for uid in uids:
            self.remove_pod(uid)
        for d in self._dirs(self.base) + self._dirs(self.base.parent):
            with contextlib.suppress(OSError):
                d.rmdir()


def remove(cgroup: Path) -> None:
    """Kill what is left in ``cgroup`` and its children and remove them, children first."""
    try:
        children = [c for c in cgroup.iterdir() if c.is_dir()]
    except (FileNotFoundError, NotADirectoryError):
        return
    for child in children + [cgroup]:
        kill_all(child)
        for _ in range(RMDIR_TRIES):  # busy until the killed processes are gone
            try:
                child.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.01)


def kill_all(cgroup: Path) -> None:
    """SIGKILL every process in ``cgroup`` (best effort: it may be gone)."""
    try:
        pids = [int(p) for p in (cgroup / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
