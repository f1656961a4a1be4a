"""The restart policy without processes: the back-off numbers and the supervisor's decisions, on a fake clock with
fake children (``poll`` answers what the test says), so each step is checked at an exact time."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubelab.backoff import CAP, INITIAL, RESET_AFTER, RestartBackoff
from kubelab.health import Probe, Run
from kubelab.process import ExitStatus
from kubelab.state import ProcessRecord
from kubelab.supervisor import StartupFailed, Supervisor, Unit

# ---- the back-off policy -------------------------------------------------------------------------


def test_backoff_doubles_from_one_second_to_the_cap() -> None:
    backoff = RestartBackoff()
    delays, now = [], 0.0
    for _ in range(8):
        delay = backoff.delay(started=now, exited=now + 0.5)  # each run crashes after half a second
        delays.append(delay)
        now += 0.5 + delay
    assert (INITIAL, CAP) == (1.0, 30.0)
    assert delays == [1, 2, 4, 8, 16, 30, 30, 30]


def test_backoff_starts_over_after_a_run_of_twice_the_cap() -> None:
    backoff = RestartBackoff()
    assert [backoff.delay(0, 1), backoff.delay(10, 11), backoff.delay(20, 21)] == [1, 2, 4]
    assert backoff.delay(30, 30 + RESET_AFTER - 0.1) == 8  # not quite long enough
    assert backoff.delay(100, 100 + RESET_AFTER) == 1  # a healthy run: the next crash is a first one again
    assert backoff.delay(200, 200.5) == 2


# ---- the supervisor ------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeChild:
    pid: int
    start_time: int | None = None
    started_at: float = 0.0
    status: ExitStatus | None = None

    def poll(self) -> ExitStatus | None:
        return self.status


@dataclass
class FakeHealth:
    healthy: bool = True
    url: str | None = "http://127.0.0.1:10257/healthz"
    probes: list[Run] = field(default_factory=list)

    def probe(self, run: Run) -> Probe:
        self.probes.append(run)
        return Probe(self.healthy, self.url)


class Harness:
    def __init__(self, tmp_path: Path, health: FakeHealth | None = None) -> None:
        self.clock = Clock()
        self.said: list[str] = []
        self.children: list[FakeChild] = []
        self.health = health or FakeHealth()
        self.supervisor = Supervisor(spawn=self.spawn, say=self.said.append, clock=self.clock, wall=self.clock)
        self.unit = Unit("controller-manager", ("python", "-m", "controllers"), tmp_path / "cm.log", self.health)
        self.record = ProcessRecord("controller-manager", "controller-manager", 0, None, 0.0, str(self.unit.log))

    def spawn(self, unit: Unit) -> FakeChild:
        child = FakeChild(pid=100 + len(self.children), started_at=self.clock.now)
        self.children.append(child)
        return child

    def start_healthy(self) -> None:
        entry = self.supervisor.start(self.unit, self.record)
        assert self.supervisor.probe(entry)

    def exit(self, status: ExitStatus) -> None:
        self.children[-1].status = status

    def at(self, seconds: float) -> bool:
        self.clock.now += seconds
        return self.supervisor.poll()


def test_an_exit_is_restarted_after_the_back_off_and_recorded(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.unit.log.write_text("E leaderelection.go: leaderelection lost\n")
    h.start_healthy()
    assert h.record.pid == 100
    h.clock.now += 120  # a long healthy run
    h.exit(ExitStatus(signal=signal.SIGKILL))
    assert h.at(0)
    assert h.said[-1].startswith("controller-manager exited (signal SIGKILL); restarting in 1s (restart 1)")
    assert "leaderelection lost" in h.said[-1]  # the reason is usually the last lines of its log
    assert (h.record.last_exit_signal, h.record.last_exit_code, h.record.restarts) == ("SIGKILL", None, 0)
    assert h.record.restart_at == h.clock.now + 1
    assert not h.at(0.9)  # the back-off is not over
    assert len(h.children) == 1
    assert h.at(0.1)
    assert len(h.children) == 2 and h.record.pid == 101 and h.record.restarts == 1 and h.record.restart_at is None
    assert h.said[-1] == "controller-manager restarted (pid 101, restart 1)"
    h.health.url = "http://127.0.0.1:40000/healthz"  # a restarted component may print another health port
    assert h.at(0.5)
    assert h.said[-1].startswith("controller-manager is up again (pid 101, restart 1)")
    assert h.record.health_url == "http://127.0.0.1:40000/healthz"
    assert not h.at(1)  # healthy: nothing to do, nothing probed
    assert len(h.health.probes) == 2


def test_quick_exits_back_off_exponentially_and_keep_their_exit_codes(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.start_healthy()
    waits = []
    for _ in range(4):
        h.exit(ExitStatus(code=1))
        h.at(0.2)
        waits.append(h.record.restart_at - h.clock.now)  # type: ignore[operator]
        h.at(waits[-1])
    assert waits == [1, 2, 4, 8]
    assert (h.record.restarts, h.record.last_exit_code, h.record.last_exit_signal) == (4, 1, None)
    assert "exited (exit code 1); restarting in 8s (restart 4)" in h.said[-2]


def test_nothing_is_restarted_after_close(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.start_healthy()
    h.exit(ExitStatus(code=2))
    h.at(0)
    h.supervisor.close()
    assert h.record.restart_at is None
    h.at(60)
    assert len(h.children) == 1
    h2 = Harness(tmp_path)
    h2.start_healthy()
    h2.supervisor.close()
    h2.exit(ExitStatus(signal=signal.SIGTERM))
    h2.at(0)
    h2.at(60)
    assert len(h2.children) == 1 and h2.said[-1] == "controller-manager exited (signal SIGTERM)"


def test_a_component_that_never_starts_fails_the_start_up(tmp_path: Path) -> None:
    h = Harness(tmp_path, FakeHealth(healthy=False, url=None))
    h.supervisor.start(h.unit, h.record)
    h.exit(ExitStatus(code=3))
    h.at(0)
    h.at(1)  # restart 1
    h.exit(ExitStatus(code=3))
    h.at(0)
    h.at(2)  # restart 2
    h.exit(ExitStatus(code=3))
    with pytest.raises(StartupFailed) as failed:
        h.at(0)
    assert failed.value.entry.startup_exits == 3 and failed.value.status == ExitStatus(code=3)
    assert len(h.children) == 3


def test_exits_after_a_healthy_start_are_never_a_start_up_failure(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.start_healthy()
    h.health.healthy = False  # from now on it crashes before it is healthy again
    for _ in range(5):
        h.exit(ExitStatus(code=1))
        h.at(0)
        h.at(60)
    assert h.record.restarts == 5


def test_a_failed_spawn_is_retried_with_back_off(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.start_healthy()
    h.exit(ExitStatus(code=1))
    h.at(0)
    real_spawn = h.spawn

    def broken(unit: Unit) -> FakeChild:
        raise FileNotFoundError(2, "No such file or directory", "python")

    h.supervisor._spawn = broken
    h.at(1)
    assert "could not be started" in h.said[-1] and "retrying in 2s" in h.said[-1]
    h.supervisor._spawn = real_spawn
    h.at(2)
    assert len(h.children) == 2 and h.record.restarts == 1


def test_exit_status_descriptions() -> None:
    assert ExitStatus(code=1).describe() == "exit code 1"
    assert ExitStatus(signal=signal.SIGKILL).describe() == "signal SIGKILL"
    assert ExitStatus().describe() == "unknown status"
    assert (ExitStatus(code=3).returncode, ExitStatus(signal=9).returncode) == (3, -9)


def test_status_shows_the_last_exit_as_kubectl_s_last_state() -> None:
    from kubelab.commands.status import last_exit

    record = ProcessRecord("scheduler", "scheduler", 1, None, 0.0, "log")
    assert last_exit(record, 1000.0) == "-"
    record.last_exit_code, record.last_exit_at = 1, 880.0
    assert last_exit(record, 1000.0) == "Error (exit 1) 2m0s ago"
    record.last_exit_code = 0
    assert last_exit(record, 1000.0) == "Completed (exit 0) 2m0s ago"
    record.last_exit_code, record.last_exit_signal = None, "SIGKILL"
    assert last_exit(record, 1000.0) == "signal SIGKILL 2m0s ago"
