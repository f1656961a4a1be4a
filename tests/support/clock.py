"""A manual clock for unit tests of code that takes a ``kubeclient.clock.Clock``: time moves only when told."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0
        self.wall = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime:
        return self.wall

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        self.t += seconds
        self.wall += timedelta(seconds=seconds)
