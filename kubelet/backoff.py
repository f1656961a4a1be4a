"""The crash-loop back-off of one container, as the kubelet's ``doBackOff`` drives client-go's ``flowcontrol.Backoff``.

The first exit is restarted at once (there is no back-off entry yet; ``Next`` makes one of ``base``); every later
exit waits until ``finishedAt + entry`` and ``Next`` doubles the entry (capped at ``max``) when the restart goes
ahead. So with a 10 s base the waits are 0, 10, 20, 40 … 300 s, and ``restartCount`` counts restarts that really
happened: a container in ``CrashLoopBackOff`` shows the restarts so far, not the one it waits for. An exit that
comes more than ``2 × max`` after the entry's last update (the container ran ten minutes) starts over, as
``hasExpired`` does.

Pure and clock-free: callers pass the event loop's time, so the policy is unit-tested without sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CrashBackoff:
    base: float
    max: float
    entry: float | None = None  # the current back-off (None: no entry, the next exit restarts at once)
    updated: float = 0.0  # when ``next`` last ran

    def delay(self, finished: float) -> float:
        """Seconds to wait after an exit at ``finished`` before the restart (``IsInBackOffSince``)."""
        if self.entry is None or finished - self.updated > 2 * self.max:
            self.entry = None
            return 0.0
        return self.entry

    def next(self, now: float) -> None:
        """A restart goes ahead: the next exit waits twice as long (``Next``)."""
        self.entry = self.base if self.entry is None else min(self.entry * 2, self.max)
        self.updated = now
