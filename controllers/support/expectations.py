"""Expectations: the creations and deletions a controller has asked for but not yet seen in its cache.

Why: a controller acts on its informer cache, which lags its own writes.  Without expectations, the sync
triggered by the next watch event would still see too few pods and create them again.  So before acting, a
controller records what it expects (``expect_creations(key, n)``, ``expect_deletions(key, pod_keys)``); each
observed add or delete lowers the count; ``satisfied(key)`` is true only once all were seen — until then
the controller recomputes status but does not create or delete.

Guarantees (client-go's ``ControllerExpectations`` / ``UIDTrackingControllerExpectations``):

* A key with no record is satisfied (a new controller object syncs at once).
* Records expire after ``ttl`` seconds (5 minutes), so a lost watch event cannot wedge a controller forever.
* Deletions are tracked by pod key: observing the deletion of a pod counts once, however many times the
  delete (or the graceful ``deletionTimestamp`` update before it) is seen.
* A failed or skipped write is un-expected by the caller (``creation_observed``/``deletion_observed``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

EXPECTATIONS_TTL = 5 * 60.0


@dataclass(slots=True)
class _Record:
    adds: int
    dels: int
    stamp: float
    pending_deletes: set[str] = field(default_factory=set)

    def fulfilled(self) -> bool:
        return self.adds <= 0 and self.dels <= 0


class Expectations:
    """Expected creations and (pod-key tracked) deletions per controller key; see the module docstring."""

    def __init__(self, ttl: float = EXPECTATIONS_TTL, now: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._now = now
        self._records: dict[str, _Record] = {}

    def satisfied(self, key: str) -> bool:
        """True when nothing is outstanding for ``key`` (or the record expired): the controller may act."""
        record = self._records.get(key)
        if record is None:
            return True
        return record.fulfilled() or self._now() - record.stamp > self.ttl

    def expect_creations(self, key: str, count: int) -> None:
        self._records[key] = _Record(count, 0, self._now())

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        keys = set(pod_keys)
        self._records[key] = _Record(0, len(keys), self._now(), keys)

    def creation_observed(self, key: str) -> None:
        """One expected pod appeared (or its creation failed and will never appear)."""
        record = self._records.get(key)
        if record is not None:
            record.adds -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        """``pod_key`` is gone (or being deleted); counts only if its deletion was expected and not yet seen."""
        record = self._records.get(key)
        if record is not None and pod_key in record.pending_deletes:
            record.pending_deletes.discard(pod_key)
            record.dels -= 1

    def lower(self, key: str, adds: int = 0, dels: int = 0) -> None:
        """Give up on ``adds`` creations / ``dels`` deletions (the writes were skipped)."""
        record = self._records.get(key)
        if record is not None:
            record.adds -= adds
            record.dels -= dels

    def delete(self, key: str) -> None:
        """Forget ``key`` (its controller object is gone)."""
        self._records.pop(key, None)

    def pending(self, key: str) -> tuple[int, int]:
        """Outstanding (creations, deletions) for ``key`` — for logs and tests."""
        record = self._records.get(key)
        return (record.adds, record.dels) if record is not None else (0, 0)
