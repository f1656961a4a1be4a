"""The restart back-off of one supervised component: how long to wait after an exit before starting it again.

The shape is systemd's ``Restart=always`` with an exponential ``RestartSec`` (``RestartSteps`` up to
``RestartMaxDelaySec``) and the kubelet's CrashLoopBackOff (client-go ``flowcontrol.Backoff``), with a control
plane's numbers instead of a pod's: a controller-manager that lost its leader lease should be back in about a
second, not in the kubelet's 10 s, and a component that keeps crashing must not spin a core.

- the first exit waits ``INITIAL`` (1 s), each further exit twice as long, never more than ``CAP`` (30 s):
  1, 2, 4, 8, 16, 30, 30 … s;
- a run that lasted ``RESET_AFTER`` (60 s, twice the cap, as ``flowcontrol.Backoff`` forgets an entry after
  2 × its maximum) or more was a healthy run: its exit starts over at 1 s;
- it never gives up (kubelet's CrashLoopBackOff does not; systemd's ``StartLimitBurst`` would): only the launcher's
  start-up gives up, after ``STARTUP_ATTEMPTS`` exits of a component that never became healthy.

Pure and clock-free: the caller passes the times, so the policy is unit-tested with a fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CAP", "INITIAL", "RESET_AFTER", "STARTUP_ATTEMPTS", "RestartBackoff"]

INITIAL = 1.0
CAP = 30.0
RESET_AFTER = 2 * CAP
STARTUP_ATTEMPTS = 3  # a component that exits this often before it was ever healthy fails `kubelab up`


@dataclass
class RestartBackoff:
    """The back-off state of one component across its runs."""

    initial: float = INITIAL
    cap: float = CAP
    reset_after: float = RESET_AFTER
    current: float | None = None  # the last delay handed out; None: the next exit waits ``initial``

    def delay(self, started: float, exited: float) -> float:
        """Seconds to wait before restarting a run that started at ``started`` and exited at ``exited``."""
        if self.current is None or exited - started >= self.reset_after:
            self.current = self.initial
        else:
            self.current = min(self.current * 2, self.cap)
        return self.current
