"""The storage layer's metrics (kube's ``storage/etcd3/metrics`` and ``storage/cacher/metrics``), kube 1.32's names.

* ``etcd_request_duration_seconds{operation,type}`` and ``etcd_requests_total{operation,type}``: each call a
  resource's store makes to etcd (``type`` is the resource, ``pods`` or ``deployments.apps``), timed by
  ``MeteredStorage``, the thin wrapper each ``ResourceStore`` talks through.
* ``apiserver_watch_cache_events_received_total``, ``…_events_dispatched_total`` and ``…_initializations_total``
  ``{resource}``: counted by the watch cache as it applies etcd's events, fans them out and (re)lists.
* ``apiserver_storage_objects{resource}``, ``apiserver_watch_cache_resource_version{resource}`` and
  ``apiserver_watch_cache_capacity{resource}``: read from the watch caches when scraped (``CacheCollector``) —
  the caches hold every object, so the count is exact and costs nothing between scrapes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from apimachinery.metrics import Counter, Histogram

from .etcd3 import EtcdStorage, KeyValue

ETCD_REQUEST_DURATION = Histogram(
    "etcd_request_duration_seconds", "Etcd request latency in seconds for each operation and object type.",
    ["operation", "type"], buckets=[0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8,
                                    10, 15, 20, 30, 45, 60])
ETCD_REQUESTS = Counter("etcd_requests_total", "Etcd request counts for each operation and object type.",
                        ["operation", "type"])
EVENTS_RECEIVED = Counter("apiserver_watch_cache_events_received_total",
                          "Counter of events received in watch cache broken by resource type.", ["resource"])
EVENTS_DISPATCHED = Counter("apiserver_watch_cache_events_dispatched_total",
                            "Counter of events dispatched in watch cache broken by resource type.", ["resource"])
INITIALIZATIONS = Counter("apiserver_watch_cache_initializations_total",
                          "Counter of watch cache initializations broken by resource type.", ["resource"])


class MeteredStorage:
    """``EtcdStorage`` for one resource: the calls a store makes, timed under that resource's name; everything
    else (watches, revisions, maintenance) is the shared storage's own."""

    def __init__(self, storage: EtcdStorage, resource: str) -> None:
        self._storage = storage
        self._children: dict[str, tuple[Any, Any]] = {}
        self.resource = resource

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)

    def _observe(self, operation: str, started: float) -> None:
        children = self._children.get(operation)
        if children is None:
            children = self._children[operation] = (ETCD_REQUEST_DURATION.labels(operation, self.resource),
                                                    ETCD_REQUESTS.labels(operation, self.resource))
        children[0].observe(time.monotonic() - started)
        children[1].inc()

    async def get(self, key: bytes) -> KeyValue | None:
        started = time.monotonic()
        try:
            return await self._storage.get(key)
        finally:
            self._observe("get", started)

    async def list(self, prefix: bytes, *, start: bytes | None = None, revision: int = 0,
                   limit: int = 0) -> tuple[list[KeyValue], int, bool]:
        started = time.monotonic()
        try:
            return await self._storage.list(prefix, start=start, revision=revision, limit=limit)
        finally:
            self._observe("list", started)

    async def create(self, key: bytes, value: bytes, lease: int = 0) -> int:
        started = time.monotonic()
        try:
            return await self._storage.create(key, value, lease)
        finally:
            self._observe("create", started)

    async def update(self, key: bytes, value: bytes, expected_revision: int, lease: int = 0) -> int:
        started = time.monotonic()
        try:
            return await self._storage.update(key, value, expected_revision, lease)
        finally:
            self._observe("update", started)

    async def delete(self, key: bytes, expected_revision: int) -> int:
        started = time.monotonic()
        try:
            return await self._storage.delete(key, expected_revision)
        finally:
            self._observe("delete", started)


class WatchCacheCounters:
    """One resource's watch-cache counters, looked up once."""

    def __init__(self, resource: str) -> None:
        self.received = EVENTS_RECEIVED.labels(resource)
        self.dispatched = EVENTS_DISPATCHED.labels(resource)
        self.initializations = INITIALIZATIONS.labels(resource)


class CacheView(Protocol):
    """What the collector reads of a watch cache."""

    rv: int
    store: dict[bytes, Any]

    @property
    def capacity(self) -> int: ...


class CacheCollector(Collector):
    """``apiserver_storage_objects``, ``apiserver_watch_cache_resource_version`` and
    ``apiserver_watch_cache_capacity`` from ``caches()`` — (resource, watch cache) pairs — when scraped."""

    def __init__(self, caches: Callable[[], Iterable[tuple[str, CacheView]]]) -> None:
        self.caches = caches

    def collect(self) -> Iterator[GaugeMetricFamily]:
        objects = GaugeMetricFamily("apiserver_storage_objects",
                                    "[STABLE] Number of stored objects at the time of last check split by kind. In "
                                    "case of a fetching error, the value will be -1.", labels=["resource"])
        rvs = GaugeMetricFamily("apiserver_watch_cache_resource_version",
                                "Current resource version of watch cache broken by resource type.",
                                labels=["resource"])
        capacity = GaugeMetricFamily("apiserver_watch_cache_capacity",
                                     "Total capacity of watch cache broken by resource type.", labels=["resource"])
        for resource, cache in sorted(self.caches(), key=lambda pair: pair[0]):
            objects.add_metric([resource], len(cache.store))
            rvs.add_metric([resource], cache.rv)
            capacity.add_metric([resource], cache.capacity)
        yield from (objects, rvs, capacity)


_collector: CacheCollector | None = None


def collect_caches(caches: Callable[[], Iterable[tuple[str, CacheView]]]) -> None:
    """Report the watch caches ``caches()`` lists (the apiserver of this process's registry; the latest wins, so
    tests that build several apps in one process do not register twice)."""
    global _collector
    if _collector is None:
        _collector = CacheCollector(caches)
        REGISTRY.register(_collector)
    else:
        _collector.caches = caches
