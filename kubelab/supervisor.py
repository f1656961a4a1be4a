"""Keep a cluster's processes running: restart whatever exits, with back-off, as systemd's ``Restart=always`` or
the kubelet's static pods do for a real control plane.

Kubernetes' components are written to be restarted: kube-controller-manager and kube-scheduler exit when they lose
their leader lease (after etcd was unreachable for longer than the renew deadline, say), and something outside —
systemd, or the kubelet for static pods — starts them again. Here that something is the `kubelab up` process
(foreground, or the detached supervisor `up --detach` leaves running).

What is supervised is a ``Unit``: an argv, an environment, a log file and a health check — nothing about which
component it is, so etcd members are supervised as the apiserver is. Guarantees:

- every exit, whatever its cause (an exit code, ``kill -9``, the exit on leader-election loss), is restarted after
  the back-off of ``backoff.py`` (1 s doubling to 30 s, reset by a run of 60 s), and said in one line with the
  exit code or signal name and the restart number, e.g.
  ``controller-manager exited (signal SIGKILL); restarting in 1s (restart 1)``;
- the unit's ``ProcessRecord`` follows: pid and start time of the current run, ``restarts``, how the last run
  ended, and ``restart_at`` while the back-off runs — the caller saves the state when ``poll`` says it changed;
- after ``close()`` nothing is restarted any more, so stopping the cluster never races a restart;
- a unit that exits ``STARTUP_ATTEMPTS`` times without ever having been healthy raises ``StartupFailed``: at the
  start of `kubelab up` a component that cannot start is an error to show, not something to retry for ever;
- ``poll`` is one non-blocking pass (health probes are short); the clock and the spawner are injected, so the
  policy is unit-tested with a fake clock and fake processes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kubelab import interrupts, process
from kubelab.backoff import STARTUP_ATTEMPTS, RestartBackoff
from kubelab.health import HealthCheck, Run
from kubelab.process import ExitStatus
from kubelab.state import ClusterState, ProcessRecord

__all__ = ["Child", "StartupFailed", "Supervised", "Supervising", "Supervisor", "Unit"]

LOG_TAIL_LINES = 5  # shown under an exit line: the reason is usually there ("leaderelection lost")
URL_WAIT = 60.0  # a run that counts as up without a health URL (it survived its settle) may still print one later


@dataclass(frozen=True, eq=False)
class Unit:
    """One supervised process: how to run it and how to tell it is healthy."""

    name: str  # unique: "etcd", "apiserver", "kubelet-node01"
    argv: tuple[str, ...]
    log: Path
    health: HealthCheck
    env: Mapping[str, str] = field(default_factory=dict)


class Child(Protocol):
    """A running process of a unit (``process.Spawned``)."""

    pid: int
    start_time: int | None
    started_at: float

    def poll(self) -> ExitStatus | None: ...


Spawn = Callable[[Unit], Child]


@dataclass(eq=False)
class Supervised:
    """A unit, its record in the cluster state and its current run (None while the back-off runs)."""

    unit: Unit
    record: ProcessRecord
    child: Child | None
    began: float  # the clock when the current run started
    log_offset: int  # where the current run's output starts in the log
    backoff: RestartBackoff = field(default_factory=RestartBackoff)
    healthy: bool = False  # the current run answered its health check
    ever_healthy: bool = False  # some run did: exits after that are restarts, never start-up failures
    startup_exits: int = 0
    restart_due: float | None = None  # the clock when the back-off ends


class StartupFailed(Exception):
    """A unit exited ``STARTUP_ATTEMPTS`` times before it was ever healthy."""

    def __init__(self, entry: Supervised, status: ExitStatus) -> None:
        super().__init__(f"{entry.unit.name} exited ({status.describe()}) {entry.startup_exits} times during start-up")
        self.entry = entry
        self.status = status


class Supervisor:
    def __init__(
        self,
        *,
        spawn: Spawn,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        startup_attempts: int = STARTUP_ATTEMPTS,
    ) -> None:
        self._spawn = spawn
        self._say = say
        self._clock = clock
        self._wall = wall
        self.startup_attempts = startup_attempts
        self.entries: list[Supervised] = []
        self.closed = False

    def start(self, unit: Unit, record: ProcessRecord) -> Supervised:
        """Spawn a unit and supervise it from now on."""
        offset = _log_size(unit.log)
        entry = Supervised(unit, record, self._spawn(unit), self._clock(), offset)
        self._record_run(entry)
        self.entries.append(entry)
        return entry

    def adopt(self, unit: Unit, record: ProcessRecord, child: Child, *, healthy: bool = True) -> Supervised:
        """Supervise a child this process started some other way (etcd, started and awaited by ``EtcdServer``)."""
        entry = Supervised(unit, record, child, self._clock(), _log_size(unit.log), healthy=healthy,
                           ever_healthy=healthy)
        self._record_run(entry)
        self.entries.append(entry)
        return entry

    def close(self) -> None:
        """Restart nothing from now on (the cluster is being stopped)."""
        self.closed = True
        for entry in self.entries:
            entry.restart_due = None
            entry.record.restart_at = None

    def probe(self, entry: Supervised) -> bool:
        """One health probe of the entry's current run; notes the health URL it used on the record."""
        if entry.child is None:
            return False
        result = entry.unit.health.probe(Run(entry.unit.log, entry.log_offset, self._clock() - entry.began))
        if result.url is not None:
            entry.record.health_url = result.url
        if result.healthy and not entry.healthy:
            entry.healthy = True
            if entry.ever_healthy:
                self._say(f"{entry.unit.name} is up again (pid {entry.child.pid}, restart {entry.record.restarts}) "
                          f"after {self._clock() - entry.began:.1f}s")
            entry.ever_healthy = True
        return result.healthy

    def poll(self) -> bool:
        """One pass: note exits, restart those whose back-off is over, probe restarted ones until healthy.

        Returns whether any record changed (the caller saves the state). Raises ``StartupFailed``.
        """
        changed = False
        for entry in self.entries:
            if entry.child is not None:
                status = entry.child.poll()
                if status is not None:
                    self._exited(entry, status)
                    changed = True
                elif entry.ever_healthy and (not entry.healthy or self._awaits_url(entry)):
                    url, healthy = entry.record.health_url, entry.healthy
                    self.probe(entry)
                    changed |= entry.healthy != healthy or entry.record.health_url != url
            elif entry.restart_due is not None and self._clock() >= entry.restart_due and not self.closed:
                self._restart(entry)
                changed = True
        return changed

    def stop_unit(self, entry: Supervised, timeout: float = 10.0, *, kill: bool = False) -> None:
        """Stop a unit's process on purpose (``kubelab.Cluster.stop_component``; ``kill``: SIGKILL its process
        group at once, as a crash would) and wait for it: it stays stopped — no back-off, no restart — until
        ``restart_now``."""
        entry.restart_due = None
        entry.record.restart_at = None
        child, entry.child, entry.healthy = entry.child, None, False
        if child is None:
            return
        if kill and process.pid_alive(child.pid, child.start_time):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
        process.stop_groups([(child.pid, child.start_time)], timeout)
        if isinstance(child, process.Spawned):
            child.reap()

    def restart_now(self, entry: Supervised) -> None:
        """Spawn a unit that is not running (stopped on purpose, or waiting out its back-off) at once."""
        if entry.child is None:
            self._restart(entry)

    def _awaits_url(self, entry: Supervised) -> bool:
        return entry.record.health_url is None and self._clock() - entry.began < URL_WAIT

    def _exited(self, entry: Supervised, status: ExitStatus) -> None:
        now = self._clock()
        entry.child = None
        entry.healthy = False
        record = entry.record
        record.last_exit_code, record.last_exit_signal = status.code, status.signal_name
        record.last_exit_at = self._wall()
        if not entry.ever_healthy:
            entry.startup_exits += 1
            if entry.startup_exits >= self.startup_attempts:
                raise StartupFailed(entry, status)
        if self.closed:
            self._say(f"{entry.unit.name} exited ({status.describe()})")
            return
        delay = entry.backoff.delay(entry.began, now)
        entry.restart_due = now + delay
        record.restart_at = record.last_exit_at + delay
        lines = process.tail(entry.unit.log, LOG_TAIL_LINES)
        shown = "".join(f"\n    | {line}" for line in lines.splitlines()) if lines else ""
        self._say(f"{entry.unit.name} exited ({status.describe()}); restarting in {delay:g}s "
                  f"(restart {record.restarts + 1}); last lines of {entry.unit.log}:{shown}")

    def _restart(self, entry: Supervised) -> None:
        entry.restart_due = None
        entry.record.restart_at = None
        entry.log_offset = _log_size(entry.unit.log)
        entry.began = self._clock()
        with interrupts.uninterrupted():  # the new pid is recorded before a stop signal acts
            try:
                entry.child = self._spawn(entry.unit)
            except OSError as e:  # the binary is gone, the disk is full ...: an exit like any other
                delay = entry.backoff.delay(entry.began, entry.began)
                entry.restart_due = entry.began + delay
                entry.record.restart_at = self._wall() + delay
                self._say(f"{entry.unit.name} could not be started ({e}); retrying in {delay:g}s")
                return
            entry.record.restarts += 1
            entry.record.health_url = None  # the old run's: a restarted component may print another
            self._record_run(entry)
        self._say(f"{entry.unit.name} restarted (pid {entry.child.pid}, restart {entry.record.restarts})")

    @staticmethod
    def _record_run(entry: Supervised) -> None:
        assert entry.child is not None
        entry.record.pid = entry.child.pid
        entry.record.start_time = entry.child.start_time
        entry.record.started_at = entry.child.started_at


def _log_size(log: Path) -> int:
    try:
        return log.stat().st_size
    except OSError:
        return 0


class Supervising(Protocol):
    """What `kubelab up`'s supervision loop drives: a whole cluster (``cluster.Cluster``), or the one kubelet of a
    node that `kubelab join` started."""

    state: ClusterState
    supervisor: Supervisor

    def supervise_once(self) -> bool: ...

    def stop(self, timeout: float = 10.0) -> list[ProcessRecord]: ...
