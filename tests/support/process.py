"""A kubelab component as a real process for integration tests (``python -m <module> --master URL ...``), started
through the library (``kubelab.componentrun``: forked from the test process's zygote, so its imports are not paid
again, stopped by process group) as ``kubelab.Cluster.run_component`` starts it.

The scheduler and the controller-manager are started, logged and stopped alike; their own helpers
(support/scheduler.py, support/controllers.py) name the module and add what their tests read.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

from conftest import ROOT
from kubelab.componentrun import STOP_TIMEOUT, ComponentRun, run_component
from kubelet.runtime.leftovers import clean

__all__ = ["STOP_TIMEOUT", "ComponentProcess", "impersonating_kubeconfig", "kill_containers"]


class ComponentProcess:
    """One component process with its output in ``log_path``; ``stop`` sends SIGTERM (or ``sig``), kills its process
    group if it has not exited after ``STOP_TIMEOUT`` seconds, and returns its exit status. ``cwd`` is its working
    directory (which a test can look for in /proc to find what it started)."""

    def __init__(self, module: str, api_url: str, log_path: Path, *flags: str,
                 cwd: Path = ROOT, act_as: tuple[str, ...] = ()) -> None:
        self.log_path = log_path
        if act_as:  # (user, *groups): the component's own identity, impersonated on the plain port, meets RBAC
            flags = ("--kubeconfig", str(impersonating_kubeconfig(log_path.with_suffix(".kubeconfig"), api_url,
                                                                  act_as[0], act_as[1:])), *flags)
        self.run: ComponentRun = run_component(module, "--master", api_url, *flags, log=log_path, cwd=cwd)

    @property
    def pid(self) -> int:
        return self.run.pid

    def log(self) -> str:
        return self.run.log_text()

    def poll(self) -> int | None:
        """None while it runs, else its exit code (minus the signal that killed it)."""
        return self.run.poll()

    def send_signal(self, sig: int) -> None:
        self.run.send_signal(sig)

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code once it has exited; ``TimeoutError`` after ``timeout`` seconds."""
        return self.run.wait(timeout)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        return self.run.stop(sig)

    def kill(self) -> int:
        return self.stop(signal.SIGKILL)


def impersonating_kubeconfig(path: Path, api_url: str, user: str, groups: tuple[str, ...]) -> Path:
    """A kubeconfig for the plain port that acts as ``user`` in ``groups`` (kubeconfig's ``as``/``as-groups``)."""
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "test",
              "clusters": [{"name": "test", "cluster": {"server": api_url}}],
              "users": [{"name": "test", "user": {"as": user, "as-groups": [*groups, "system:authenticated"]}}],
              "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}
    path.write_text(json.dumps(config))
    return path


def kill_containers(root_dir: Path) -> None:
    """Kill what a stopped kubelet (``--root-dir root_dir``) left running, whatever its runtime: its containers,
    a linux runtime's pod sandboxes (pause processes and their namespaces) and pod cgroups (``leftovers``)."""
    clean(root_dir)
