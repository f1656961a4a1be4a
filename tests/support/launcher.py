"""`kubelab` as a user runs it, for the launcher's integration tests: the command, and the check that a cluster
left nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kubelab import process
from kubelab.state import ClusterState


def kubelab(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubelab", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def assert_nothing_left(state: ClusterState) -> None:
    """No recorded process runs, nor anything in its process group, nor the supervisor."""
    for record in state.processes:
        assert not process.pid_alive(record.pid, record.start_time), f"{record.name} still runs"
        assert process.group_members(record.pid) == [], f"{record.name}'s process group still has members"
    if state.supervisor_pid:
        assert not process.pid_alive(state.supervisor_pid, state.supervisor_start_time), "the supervisor still runs"
