"""Jittered, capped exponential backoff for loops that retry a failing server call.

Mirrors client-go's ``wait.Backoff`` as used by the reflector (800 ms doubling to 30 s, jitter 1.0, reset
after 2 min without a failure): with many clients restarting together the jitter spreads their retries, the
cap bounds the wait after a long outage, and the reset makes a later, unrelated failure start small again.
"""

from __future__ import annotations

import random

from kubeclient.clock import REAL_CLOCK, Clock


def jittered(duration: float, max_factor: float, rand: random.Random | None = None) -> float:
    """``duration`` plus a uniform random extra of up to ``max_factor * duration`` (client-go's ``wait.Jitter``)."""
    if max_factor <= 0.0:
        return duration
    r = (rand or random).random()
    return duration + r * max_factor * duration


class Backoff:
    """Successive ``next()`` calls return ``initial·factor^n`` (capped at ``cap``), each jittered upwards.

    Guarantees: every delay is in ``[min(initial·factor^n, cap), that·(1+jitter)]``; the sequence restarts at
    ``initial`` when ``reset()`` is called or when ``reset_after`` seconds passed since the previous ``next()``.
    """

    def __init__(
        self,
        *,
        initial: float = 0.8,
        cap: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        clock: Clock = REAL_CLOCK,
        rand: random.Random | None = None,
    ) -> None:
        if initial <= 0 or cap < initial or factor < 1.0:
            raise ValueError("backoff needs 0 < initial <= cap and factor >= 1")
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self._clock = clock
        self._rand = rand
        self._current = initial
        self._last: float | None = None

    def next(self) -> float:
        """The delay to wait before the next attempt; advances the sequence."""
        now = self._clock.monotonic()
        if self._last is not None and now - self._last >= self.reset_after:
            self._current = self.initial
        self._last = now
        delay = self._current
        self._current = min(self._current * self.factor, self.cap)
        return jittered(delay, self.jitter, self._rand)

    def reset(self) -> None:
        """Start again from ``initial`` (call after a success)."""
        self._current = self.initial
        self._last = None
