"""``process.stop_groups`` signals only process groups that are still its own: once a leader has been reaped its pid
(and so its group id) may be handed to a new session of someone else's, so the number is never signalled again —
the group's remaining processes are reached through pidfds of processes proven to be in it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubelab import process

IGNORES_TERM = "sh -c \"trap '' TERM; exec sleep 60\" & wait"  # the leader dies of SIGTERM, its child does not


@pytest.fixture
def leader() -> Iterator[subprocess.Popen[bytes]]:
    """A group leader in its own session (as ``process.spawn`` starts components), killed with its group after."""
    popen = subprocess.Popen(["sh", "-c", IGNORES_TERM], start_new_session=True)
    yield popen
    for pid in [popen.pid, *process.group_members(popen.pid)]:
        if process.pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
    popen.wait()


def _child_ignoring_term(leader: int) -> tuple[int, int | None]:
    """The leader's child, once it is in the group and ignores SIGTERM."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for pid in process.group_members(leader):
            if pid == leader:
                continue
            try:
                status, command = Path(f"/proc/{pid}/status").read_text(), Path(f"/proc/{pid}/comm").read_text()
            except OSError:
                continue
            ignored = int(next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16)
            if ignored & (1 << (signal.SIGTERM - 1)) and "sleep" in command:
                return pid, process.process_start_time(pid)
        time.sleep(0.02)
    raise AssertionError("the leader's child never started")


def test_a_reaped_leader_s_pid_is_never_signalled_again(leader: subprocess.Popen[bytes],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    child, child_start = _child_ignoring_term(leader.pid)
    reaped: list[int] = []
    late: list[tuple[str, int, int]] = []  # signals addressed to the leader's number after it was reaped
    real_reap, real_kill, real_killpg = process._reap, os.kill, os.killpg

    def reap(pid: int) -> None:
        real_reap(pid)
        if not process._pid_exists(pid) and pid not in reaped:
            reaped.append(pid)

    def kill(pid: int, sig: int) -> None:
        if sig and pid in reaped:
            late.append(("kill", pid, sig))
        real_kill(pid, sig)

    def killpg(pgid: int, sig: int) -> None:
        if sig and pgid in reaped:
            late.append(("killpg", pgid, sig))
        real_killpg(pgid, sig)

    monkeypatch.setattr(process, "_reap", reap)
    monkeypatch.setattr(os, "kill", kill)
    monkeypatch.setattr(os, "killpg", killpg)
    assert process.stop_groups([(leader.pid, process.process_start_time(leader.pid))], timeout=5) == [leader.pid]
    assert reaped == [leader.pid]  # the leader died of SIGTERM and was reaped within the stop
    assert late == []  # ... after which its pid may name another process: not signalled
    assert not process.pid_alive(child, child_start)  # its child, which ignored SIGTERM, got SIGKILL all the same


def test_a_leader_whose_pid_names_another_process_is_left_alone(leader: subprocess.Popen[bytes]) -> None:
    start = process.process_start_time(leader.pid)
    assert start is not None
    assert process.stop_groups([(leader.pid, start + 1)], timeout=1) == []
    assert leader.poll() is None
