"""etcd leases for objects that expire (Events, after ``--event-ttl``), shared as kube-apiserver's lease manager
shares them: granting a lease is an etcd write of its own, so writes whose expiry falls within a short window
(``--lease-reuse-duration-seconds``, at most 5 % of the TTL) get the same one, granted that much longer, and no
lease holds more than ``MAX_ATTACHED`` objects (kube's ``LeaseMaxAttachedObjectCount``). An expired lease takes
its keys with it: etcd deletes them, and the watch cache sees the deletions as any other."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

DEFAULT_REUSE_SECONDS = 60  # kube-apiserver's --lease-reuse-duration-seconds
REUSE_PERCENT = 0.05
MAX_ATTACHED = 1000


class LeaseManager:
    """Hands out etcd lease IDs for a TTL, reusing the last lease while it expires late enough, but not too late."""

    def __init__(self, grant: Callable[[int], Awaitable[int]], reuse_seconds: int = DEFAULT_REUSE_SECONDS,
                 max_attached: int = MAX_ATTACHED, clock: Callable[[], float] = time.monotonic) -> None:
        self._grant = grant
        self.reuse_seconds = reuse_seconds
        self.max_attached = max_attached
        self._clock = clock
        self._lock = asyncio.Lock()  # one grant at a time: the writes that queue behind it reuse its lease
        self._lease = 0
        self._expires = float("-inf")
        self._attached = 0

    def _reuse(self, ttl: int) -> int:
        return min(int(REUSE_PERCENT * ttl), self.reuse_seconds)

    async def lease_for(self, ttl: int) -> int:
        """A lease under which a key written now lives at least ``ttl`` seconds and at most ``ttl`` plus the
        reuse window."""
        async with self._lock:
            now = self._clock()
            reuse = self._reuse(ttl)
            if now + ttl < self._expires < now + ttl + reuse and self._attached < self.max_attached:
                self._attached += 1
                return self._lease
            self._lease = await self._grant(ttl + reuse)
            self._expires = now + ttl + reuse
            self._attached = 1
            return self._lease
