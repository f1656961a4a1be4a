"""Time as the client layers see it: a swappable clock, and ``metav1.Time`` of its readings.

Loops that wait (reflector backoff, leader election, event aggregation) take a ``Clock`` so tests can drive
them; ``RealClock`` reads the monotonic clock for durations and the UTC wall clock for timestamps written
into objects.  Durations never use wall time, so a clock step cannot expire a lease early.  (Parsing, and
``metav1.MicroTime`` of a reading or of now, live in ``apimachinery.meta``; ``format_time`` formats a reading
of a ``Clock`` in whole seconds.)
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards (for durations and expiry)."""
        ...

    def now(self) -> datetime:
        """The current UTC wall-clock time (for timestamps written into objects)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``; cancellable."""
        ...


class RealClock:
    """The process clock: ``time.monotonic``, ``datetime.now(UTC)`` and ``asyncio.sleep``."""

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


REAL_CLOCK = RealClock()


def format_time(dt: datetime) -> str:
    """``metav1.Time``: RFC 3339 in UTC with whole seconds, e.g. ``2024-05-01T12:00:00Z``."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
