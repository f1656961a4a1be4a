"""What the node's containers use, read from /proc: the kubelet's ``/metrics/resource`` (kubelet's resource
metrics endpoint, which metrics-server scrapes; here the apiserver's ``metrics.k8s.io`` does).

A container of the process runtime is a session led by its pid (the shim ``setsid``s it), so its processes are
those whose session id is that pid. Its CPU is the sum of their ``utime + stime + cutime + cstime`` from
``/proc/<pid>/stat`` (children already reaped count, as a cgroup's counter keeps them: a shell's finished commands
are the container's work); its memory working set is the sum of their resident sets (``/proc/<pid>/statm``) — what
cAdvisor's working set (usage minus inactive file pages) comes to without a cgroup to read.

The node: a kubelab node is a share of the host (several kubelets run on one machine beside the control plane),
so the host's ``/proc/stat`` and ``/proc/meminfo`` would give every node the whole machine's usage — three nodes
would each report the others' pods and the apiserver too. A node's usage is therefore what runs on it: its
containers plus the kubelet process itself. ``node_cpu_usage_seconds_total`` stays a counter: the CPU of
containers that have gone is kept in a running total (up to their last measurement), as a node cgroup keeps its
dead children's time.

Not measured: containers of the Docker runtime (they have no host pid here; the engine's stats API would be
needed) — they are left out, as are hollow nodes, which serve no endpoint at all.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from apimachinery.prometheus import Family, Sample

if TYPE_CHECKING:
    from .kubelet import Kubelet

PROC = Path("/proc")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True, slots=True)
class ProcStat:
    """The fields of ``/proc/<pid>/stat`` the kubelet uses (times in clock ticks)."""

    pid: int
    session: int
    cpu_ticks: int  # utime + stime + cutime + cstime
    start_ticks: int  # since boot


@dataclass(slots=True)
class Usage:
    cpu_ticks: int = 0  # summed as clock ticks, so a total prints as 23.5, not 23.500000000000004
    memory_bytes: int = 0
    start_ticks: int = 0  # of the session leader (the container's main process)

    @property
    def cpu_seconds(self) -> float:
        return self.cpu_ticks / CLK_TCK


def parse_stat(text: bytes) -> ProcStat:
    """``/proc/<pid>/stat``: the command name in parentheses may hold spaces and parentheses, so fields are
    counted from the last ``)`` (proc(5): field 6 session, 14–17 utime stime cutime cstime, 22 starttime)."""
    pid = int(text[: text.index(b"(")])
    fields = text[text.rindex(b")") + 2:].split()  # fields[0] is field 3 (state)
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return ProcStat(pid, int(fields[3]), utime + stime + cutime + cstime, int(fields[19]))


def parse_statm_rss(text: bytes) -> int:
    """Resident pages from ``/proc/<pid>/statm`` (its second field)."""
    return int(text.split()[1])


def parse_uptime(text: str) -> float:
    """Seconds since boot from ``/proc/uptime`` (to the hundredth: ``/proc/stat``'s btime is whole seconds, too
    coarse to tell whether a container started before or after a scrape)."""
    return float(text.split()[0])


def process_usage(pid: int, proc: Path = PROC) -> tuple[ProcStat, int] | None:
    """One process's stat and resident bytes, or ``None`` once it has gone."""
    try:
        stat = parse_stat((proc / str(pid) / "stat").read_bytes())
        rss = parse_statm_rss((proc / str(pid) / "statm").read_bytes())
    except (OSError, ValueError, IndexError):
        return None
    return stat, rss * PAGE_SIZE


def session_usage(sessions: set[int], proc: Path = PROC) -> dict[int, Usage]:
    """CPU and memory summed over the processes of each of ``sessions``, in one pass over ``/proc``."""
    usage: dict[int, Usage] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            stat = parse_stat((proc / entry.name / "stat").read_bytes())
            if stat.session not in sessions:
                continue
            rss = parse_statm_rss((proc / entry.name / "statm").read_bytes()) * PAGE_SIZE
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        total = usage.setdefault(stat.session, Usage())
        total.cpu_ticks += stat.cpu_ticks
        total.memory_bytes += rss
        if stat.pid == stat.session:
            total.start_ticks = stat.start_ticks
    return usage


@dataclass(frozen=True, slots=True)
class ContainerRef:
    namespace: str
    pod: str
    container: str
    id: str
    pid: int


class ResourceAnalyzer:
    """Measures the kubelet's running containers and its node on each scrape (kubelet's ``ResourceAnalyzer``)."""

    def __init__(self, kubelet: Kubelet, proc: Path = PROC) -> None:
        self.kubelet = kubelet
        self.proc = proc
        self._last_cpu: dict[str, int] = {}  # container id → CPU ticks at the previous scrape
        self._retired_cpu = 0  # CPU ticks of containers gone since
        self._lock = asyncio.Lock()  # one scrape at a time, so a gone container is retired once

    def running(self) -> list[ContainerRef]:
        refs = []
        for worker in list(self.kubelet.workers.values()):
            meta = worker.pod["metadata"]
            for name, record in list(worker.containers.items()):
                process = record.process
                pid = getattr(process, "pid", None)  # the process runtime's containers only
                if process is not None and pid and process.returncode is None:
                    refs.append(ContainerRef(meta["namespace"], meta["name"], name, process.id, int(pid)))
        return refs

    async def families(self) -> list[Family]:
        async with self._lock:
            return await self._measure()

    async def _measure(self) -> list[Family]:
        refs = self.running()
        usage = await asyncio.to_thread(session_usage, {r.pid for r in refs}, self.proc)
        own = process_usage(os.getpid(), self.proc)
        now = time.time()
        boot = now - parse_uptime((self.proc / "uptime").read_text())
        measured = [(r, usage[r.pid]) for r in refs if r.pid in usage]
        current = {r.id: u.cpu_ticks for r, u in measured}
        self._retired_cpu += sum(cpu for cid, cpu in self._last_cpu.items() if cid not in current)
        self._last_cpu = current
        node = Usage(self._retired_cpu + sum(current.values()), sum(u.memory_bytes for _, u in measured))
        if own is not None:
            node.cpu_ticks += own[0].cpu_ticks
            node.memory_bytes += own[1]
        return resource_families(measured, node, boot, int(now * 1000))


def resource_families(measured: Iterable[tuple[ContainerRef, Usage]], node: Usage, boot: float,
                      now_ms: int) -> list[Family]:
    """The families kubelet's ``/metrics/resource`` serves, with their [STABLE] help texts."""
    containers: dict[str, list[Sample]] = {"cpu": [], "memory": [], "start": []}
    pods: dict[tuple[str, str], Usage] = {}
    for ref, usage in measured:
        labels = {"container": ref.container, "namespace": ref.namespace, "pod": ref.pod}
        containers["cpu"].append(Sample("container_cpu_usage_seconds_total", usage.cpu_seconds, labels, now_ms))
        containers["memory"].append(Sample("container_memory_working_set_bytes", usage.memory_bytes, labels,
                                           now_ms))
        containers["start"].append(Sample("container_start_time_seconds", boot + usage.start_ticks / CLK_TCK,
                                          labels, now_ms))
        pod = pods.setdefault((ref.namespace, ref.pod), Usage())
        pod.cpu_ticks += usage.cpu_ticks
        pod.memory_bytes += usage.memory_bytes

    def pod_samples(name: str, value: str) -> list[Sample]:
        return [Sample(name, getattr(u, value), {"namespace": ns, "pod": pod}, now_ms)
                for (ns, pod), u in pods.items()]

    return [
        Family("container_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the container in "
               "core-seconds", "counter", containers["cpu"]),
        Family("container_memory_working_set_bytes", "[STABLE] Current working set of the container in bytes",
               "gauge", containers["memory"]),
        Family("container_start_time_seconds", "[STABLE] Start time of the container since unix epoch in seconds",
               "gauge", containers["start"]),
        Family("node_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the node in core-seconds",
               "counter", [Sample("node_cpu_usage_seconds_total", node.cpu_seconds, {}, now_ms)]),
        Family("node_memory_working_set_bytes", "[STABLE] Current working set of the node in bytes", "gauge",
               [Sample("node_memory_working_set_bytes", node.memory_bytes, {}, now_ms)]),
        Family("pod_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
               "counter", pod_samples("pod_cpu_usage_seconds_total", "cpu_seconds")),
        Family("pod_memory_working_set_bytes", "[STABLE] Current working set of the pod in bytes", "gauge",
               pod_samples("pod_memory_working_set_bytes", "memory_bytes")),
        Family("resource_scrape_error", "[STABLE] 1 if there was an error while getting container metrics, 0 "
               "otherwise", "gauge", [Sample("resource_scrape_error", 0)]),
    ]
