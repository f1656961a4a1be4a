"""Removal of what deleted pods leave on disk and in cgroupfs, off the kubelet's event loop.

The housekeeping that forgets deleted pods (``remove_pods``) used to delete their state directories (a linux
container's has its overlayfs upper and work trees) and their cgroups inline: with a few dozen pods deleted at
once that held the kubelet's event loop for about a second (py-spy: a fifth of the loop's time while a bench
deleted one burst of pods and created the next), and every other pod's start waited. Now the loop only kills
and renames (one syscall per directory: the name is free at once, nothing half-deleted is ever listed), and one
thread removes the rest in order. ``drain`` waits for it (the kubelet's shutdown, a test's teardown).
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

__all__ = ["Reaper"]


class Reaper:
    """One background thread that removes trees and runs clean-ups, in the order they were handed over."""

    def __init__(self, trash: Path) -> None:
        self.trash = trash  # on the same file system as what it takes (a rename, not a copy)
        self._executor: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []

    def remove_tree(self, path: Path) -> None:
        """Take ``path`` out of its directory now and delete it in the background."""
        target = path
        try:
            self.trash.mkdir(parents=True, exist_ok=True)
            target = self.trash / f"{path.name}.{secrets.token_hex(4)}"
            path.rename(target)
        except OSError:
            target = path  # gone already, or another file system: delete it where it is
        self.run(lambda: shutil.rmtree(target, ignore_errors=True))

    def run(self, work: Callable[[], None]) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reaper")
        self._pending = [f for f in self._pending if not f.done()]
        self._pending.append(self._executor.submit(work))

    def drain(self) -> None:
        """Wait until everything handed over is done."""
        for future in self._pending:
            future.exception()
        self._pending = []
