"""One more component process beside a running cluster, with the flags a test chooses (issue #22).

Why: a test of a controller, a scheduler plugin or a kubelet feature often wants the component under test started
by itself — its own flags, a second one to contend for a lease, one killed and started again — against a cluster
that is already up. ``kubelab.Cluster.run_component`` (or ``run_component`` here, given the flags that reach an
apiserver) starts it as the cluster's own components are started: forked from this process's zygote
(``kubelab.zygote``: its imports are not paid again), else a fresh ``python -m`` process; in a session of its own
(stopped by process group, with whatever it started), its output appended to a log. Stopping is
``kubelab.process``'s: a signal, a wait, then SIGKILL for the group and anything left in it.

Caveat of the zygote: a module that reads an environment variable when it is imported sees the zygote's
environment (the one this process had when the zygote started), not ``env``; ``fork_server=False`` runs a fresh
interpreter for such a component.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from kubelab import process, zygote
from kubelab.cluster import StartupError
from kubelab.components import COMPONENTS

__all__ = ["STOP_TIMEOUT", "ComponentRun", "package_of", "run_component"]

STARTUP_TIMEOUT = 60.0  # seconds ``wait_ready`` waits by default: cold imports on a busy machine take seconds
STOP_TIMEOUT = 15.0  # seconds a stopped component may take to exit before its process group is SIGKILLed
POLL_INTERVAL = 0.02


class ComponentRun:
    """A component process started by ``run_component``: its pid, command line and log; ``stop`` ends it."""

    def __init__(self, name: str, argv: list[str], log: Path, child: process.Spawned) -> None:
        self.name, self.argv, self.log = name, argv, log
        self._child = child

    @property
    def pid(self) -> int:
        return self._child.pid

    def poll(self) -> int | None:
        """None while it runs, else its exit code (minus the signal that killed it), as ``Popen.poll``."""
        return self._child.exit_code()

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code once it has exited; ``TimeoutError`` if it still runs after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"{self.name} (pid {self.pid}) still runs after {timeout}s")
            time.sleep(POLL_INTERVAL)
        return code

    def wait_ready(self, ready: Callable[[], bool], timeout: float = STARTUP_TIMEOUT) -> None:
        """Until ``ready()`` (a probe of the test's: its health URL answers, a line is in its log) holds; a process
        that exits first, or is not ready within ``timeout`` seconds, is stopped and ``StartupError`` raised with
        the last lines of its log."""
        deadline = time.monotonic() + timeout
        while not ready():
            code = self.poll()
            if code is not None or time.monotonic() >= deadline:
                how = f"exited ({code})" if code is not None else f"not ready within {timeout:g}s"
                self.stop()
                raise StartupError(f"{self.name} {how}; last lines of {self.log}:\n{process.tail(self.log)}")
            time.sleep(POLL_INTERVAL * 5)

    def send_signal(self, sig: int) -> None:
        """``kill -<sig> <pid>``: the process itself, while it is the one started (never a reused pid)."""
        if self.poll() is None and process.pid_alive(self.pid, self._child.start_time):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT) -> int:
        """Send ``sig`` and wait up to ``timeout`` seconds for the exit, then SIGKILL the process group (the
        process if it still runs, and whatever it started and left in its group); its exit code."""
        self.send_signal(sig)
        with contextlib.suppress(TimeoutError):
            self.wait(timeout)
        process.stop_groups([(self.pid, self._child.start_time)], timeout=0)
        status = self._child.reap()
        return status.returncode if status is not None else self.wait()

    def kill(self) -> int:
        """``kill -9``: as a crash; its exit code."""
        return self.stop(signal.SIGKILL)

    def log_text(self) -> str:
        """Its log so far (every run's, for a log shared across restarts)."""
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def __repr__(self) -> str:
        return f"<ComponentRun {self.name} pid={self.pid} log={self.log}>"


def package_of(name: str) -> str:
    """The ``python -m`` package of a component of the table, by its name (``controller-manager``, ``dns``) or its
    package (``controllers``, ``clusterdns``); any other name is taken as a package (the bare web console,
    ``console``)."""
    for component in COMPONENTS.values():
        if name in (component.name, component.package):
            return component.package
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"no component {name!r}: choose among {sorted(COMPONENTS)} or name a package")
    return name


def run_component(
    component: str,
    *flags: str,
    log: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    fork_server: bool = True,
) -> ComponentRun:
    """Start ``python -m <component's package> *flags`` (the flags say which apiserver: ``--master URL`` or
    ``--kubeconfig``) with its output appended to ``log``; ``env`` is added to this process's environment, ``cwd``
    its working directory (default: this process's). ``fork_server``: forked from this process's zygote (a fresh
    interpreter should the zygote fail); False: a fresh interpreter."""
    argv = [sys.executable, "-m", package_of(component), *flags]
    log_path = Path(log).absolute()
    where = Path(cwd) if cwd is not None else None
    spawn = zygote.spawn_component if fork_server else process.spawn
    return ComponentRun(component, argv, log_path, spawn(component, argv, log_path, env=env, cwd=where))
