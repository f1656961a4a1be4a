"""Work queues for controllers, with client-go's ``util/workqueue`` guarantees, on asyncio.

``Queue`` (client-go's ``Type``):

* **Dedup** — an item already waiting is not added twice (the *dirty* set), so a burst of events for one
  key costs one sync.
* **One worker per item** — between ``get()`` returning an item and ``done(item)``, no other ``get()``
  returns it.  An item added meanwhile is held back and re-queued by ``done``, so the change is not lost and
  the item is never processed concurrently.
* **FIFO** otherwise.  ``get()`` waits for an item; after ``shut_down()`` it still hands out what is queued
  and then raises ``QueueShutDown``; ``add`` after shutdown is ignored.

``DelayingQueue`` adds ``add_after(item, delay)``: the item is added once the delay passes; an item already
waiting keeps the earlier of its two ready times.

``RateLimitingQueue`` adds ``add_rate_limited(item)`` (``add_after`` with the rate limiter's delay for that
item), ``forget(item)`` (clear its failure history after a success) and ``num_requeues(item)``.  The default
limiter is client-go's controller default: per-item exponential backoff, 5 ms doubling up to 1000 s, combined
with an overall token bucket of 10 qps, burst 100.  ``add``/``add_after``/``done``/``forget`` are plain
methods, safe to call from informer handlers.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from kubeclient.metrics import queue_metrics

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class QueueShutDown(Exception):
    """``get()`` on a queue that was shut down and has nothing left."""


class Queue(Generic[T]):
    """See the module docstring: dedup, one worker per item, FIFO, graceful shutdown."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        self._drained: asyncio.Event | None = None
        self._metrics = queue_metrics(name)  # workqueue_* series (kubeclient.metrics); None when unnamed

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing (no-op if already waiting or after shutdown)."""
        if self._shutting_down or item in self._dirty:
            return
        if self._metrics is not None:
            self._metrics.add(item)
        self._dirty.add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        self._wake_one()

    async def get(self) -> T:
        """The next item, waiting if none; the caller must call ``done(item)`` when finished with it."""
        while not self._queue:
            if self._shutting_down:
                raise QueueShutDown(self.name)
            waiter = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except BaseException:
                waiter.cancel()
                with contextlib.suppress(ValueError):
                    self._getters.remove(waiter)
                if self._queue and not waiter.cancelled():
                    self._wake_one()  # we were woken but will not take the item: pass the wakeup on
                raise
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        if self._metrics is not None:
            self._metrics.get(item)
        return item

    def done(self, item: T) -> None:
        """Finish ``item``; if it was added while being processed it is queued again now."""
        self._processing.discard(item)
        if self._metrics is not None:
            self._metrics.done(item)
        if item in self._dirty:
            self._queue.append(item)
            self._wake_one()
        elif not self._processing and self._drained is not None:
            self._drained.set()

    def __len__(self) -> int:
        """Items waiting (not counting those being processed)."""
        return len(self._queue)

    def shut_down(self) -> None:
        """Stop accepting items; waiting ``get()`` calls raise ``QueueShutDown`` once the queue is empty."""
        self._shutting_down = True
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def shut_down_with_drain(self) -> None:
        """``shut_down``, then wait until every item handed out has been marked ``done``."""
        self.shut_down()
        if self._processing:
            self._drained = asyncio.Event()
            await self._drained.wait()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


class DelayingQueue(Queue[T]):
    """A ``Queue`` with ``add_after``; pending timers are cancelled by ``shut_down``."""

    def __init__(self, name: str = "") -> None:
        super().__init__(name)
        self._waiting: dict[T, asyncio.TimerHandle] = {}

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` after ``delay`` seconds (at once if ``delay <= 0``); the earliest ready time wins."""
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retry()
        if delay <= 0:
            self._cancel_wait(item)
            self.add(item)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        pending = self._waiting.get(item)
        if pending is not None:
            if pending.when() <= when:
                return
            pending.cancel()
        self._waiting[item] = loop.call_at(when, self._ready, item)

    def _ready(self, item: T) -> None:
        self._waiting.pop(item, None)
        self.add(item)

    def _cancel_wait(self, item: T) -> None:
        pending = self._waiting.pop(item, None)
        if pending is not None:
            pending.cancel()

    def shut_down(self) -> None:
        for handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        super().shut_down()


class RateLimiter(Protocol[T_contra]):
    def when(self, item: T_contra) -> float:
        """The delay before ``item`` may be retried; records one more failure for it."""
        ...

    def forget(self, item: T_contra) -> None:
        """Clear ``item``'s history (it succeeded)."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """``base · 2^failures`` per item, capped at ``max_delay`` (client-go: 5 ms → 1000 s)."""

    def __init__(self, base: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base = base
        self.max_delay = max_delay
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp >= 64:  # base · 2^64 is past any sane cap (and ldexp would overflow eventually)
            return self.max_delay
        return min(math.ldexp(self.base, exp), self.max_delay)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter(Generic[T]):
    """An overall token bucket (``qps`` refill, ``burst`` capacity): bounds retries across all items."""

    def __init__(self, qps: float = 10.0, burst: int = 100, now: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = burst
        self._now = now
        self._tokens = float(burst)
        self._last = now()

    def when(self, item: T) -> float:
        now = self._now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0  # reserve a token, possibly going into debt (like rate.Limiter.Reserve)
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: T) -> None:
        pass

    def num_requeues(self, item: T) -> int:
        return 0


class MaxOfRateLimiter(Generic[T]):
    """The longest delay of several limiters; requeues counted by the most pessimistic one."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self.limiters = limiters

    def when(self, item: T) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter() -> MaxOfRateLimiter[Hashable]:
    """client-go's ``DefaultControllerRateLimiter``: exponential 5 ms → 1000 s, and 10 qps / burst 100."""
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1000.0), BucketRateLimiter(10.0, 100))


class RateLimitingQueue(DelayingQueue[T]):
    """A ``DelayingQueue`` whose retries are spaced by a ``RateLimiter`` (default: the controller default)."""

    def __init__(self, rate_limiter: RateLimiter[T] | None = None, name: str = "") -> None:
        super().__init__(name)
        self.rate_limiter: RateLimiter[T] = rate_limiter or default_controller_rate_limiter()

    def add_rate_limited(self, item: T) -> None:
        """Re-add ``item`` after the limiter's delay (grows with each call until ``forget``)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Stop tracking ``item``'s failures (call after it was processed successfully)."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)
