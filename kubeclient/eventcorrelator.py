"""client-go's ``EventCorrelator`` rules for core/v1 Events (``k8s.io/client-go/tools/record/events_cache.go``).

The legacy recorder does not write every event it is given; what users see in ``kubectl get events`` on a real
cluster is shaped by two rules, kept here (the third, counting identical events, is ``EventRecorder``'s cache):

* ``EventAggregator``: events that differ only in their message ("similar": same source, involved object, type,
  reason, reporting controller/instance) are counted per aggregate key; once ``max_events`` (10) distinct
  messages were seen with no gap over ``max_interval`` (600 s), each further one is turned into the one
  aggregate event ``(combined from similar events): <message>``, whose count its repeats raise.
* ``EventSourceObjectSpamFilter``: a token bucket per source + involved object + type (client-go 1.32/1.33's
  ``getSpamKey``), ``burst`` 25 refilled at 1/300 qps; an event with no token is not written.  It runs after
  aggregation, so the aggregate event spends tokens too.

Both keep their state in LRU maps of ``cache_size`` (4096) keys, so memory is bounded however many objects a
component reports on.  Time is read from an injectable ``monotonic`` callable so tests can drive it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar

MAX_LRU_CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL_SECONDS = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "

Monotonic = Callable[[], float]
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def combined_message(message: str) -> str:
    """``EventAggregatorByReasonMessageFunc``: the aggregate event's message."""
    return COMBINED_PREFIX + message


def is_combined(message: str) -> bool:
    """Whether an event's message is an aggregate event's (it names only the latest of the events it stands for)."""
    return message.startswith(COMBINED_PREFIX)


def lru_put(cache: OrderedDict[K, V], key: K, value: V, size: int) -> None:
    """Put ``key`` as most recently used and evict the least recently used beyond ``size`` (groupcache's lru)."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)


@dataclass(slots=True)
class _Bucket:
    tokens: float
    last: float


class SpamFilter:
    """``EventSourceObjectSpamFilter`` with client-go's passive token bucket: ``allow`` takes a token if one is
    there and never waits or goes into debt; a new key starts with a full bucket of ``burst``."""

    def __init__(self, monotonic: Monotonic, *, burst: int = SPAM_BURST, qps: float = SPAM_QPS,
                 cache_size: int = MAX_LRU_CACHE_ENTRIES) -> None:
        self._monotonic = monotonic
        self.burst = burst
        self.qps = qps
        self._cache_size = cache_size
        self._buckets: OrderedDict[Hashable, _Bucket] = OrderedDict()

    def allow(self, key: Hashable) -> bool:
        """Whether one more event under spam ``key`` may be written now (spends a token if so)."""
        now = self._monotonic()
        bucket = self._buckets.get(key) or _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.last) * self.qps)
        bucket.last = now
        allowed = bucket.tokens >= 1.0
        if allowed:
            bucket.tokens -= 1.0
        lru_put(self._buckets, key, bucket, self._cache_size)
        return allowed


@dataclass(slots=True)
class _Similar:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


class Aggregator:
    """``EventAggregator``: counts the distinct messages seen per aggregate key and says when to combine."""

    def __init__(self, monotonic: Monotonic, *, max_events: int = AGGREGATE_MAX_EVENTS,
                 max_interval: float = AGGREGATE_INTERVAL_SECONDS, cache_size: int = MAX_LRU_CACHE_ENTRIES) -> None:
        self._monotonic = monotonic
        self.max_events = max_events
        self.max_interval = max_interval
        self._cache_size = cache_size
        self._records: OrderedDict[Hashable, _Similar] = OrderedDict()

    def combine(self, key: Hashable, message: str) -> bool:
        """Record ``message`` under aggregate ``key``; True when this event is to become the aggregate event.

        As client-go: a record untouched for over ``max_interval`` starts afresh; the ``max_events``-th distinct
        message and every later one combine; the set is then trimmed by one so it never grows past the max."""
        now = self._monotonic()
        record = self._records.get(key)
        if record is None or now - record.last > self.max_interval:
            record = _Similar()
        record.messages.add(message)
        record.last = now
        lru_put(self._records, key, record, self._cache_size)
        if len(record.messages) < self.max_events:
            return False
        record.messages.pop()
        return True
