"""The process's Prometheus registry, shared by every component's ``/metrics`` (kube's ``legacyregistry``).

Each component is its own OS process, so prometheus_client's default ``REGISTRY`` is exactly kube's one registry per
process: metrics are module-level objects registered once at import, ``process_*``, ``python_gc_*`` and
``python_info`` come with it, and a component's ``/metrics`` is that registry rendered. kube's Go client writes no
``*_created`` series; prometheus_client's are turned off here, once, so counters and histograms read as kube's.

``exponential_buckets`` and ``linear_buckets`` are component-base's helpers, so bucket boundaries are written as
kube's source writes them. ``scrape`` renders the registry in the text format every Prometheus reads, served as
kube serves it (``CONTENT_TYPE``: version 0.0.4; the names here need nothing newer).
"""

from __future__ import annotations

import os

import prometheus_client
from prometheus_client import REGISTRY, generate_latest

from apimachinery.prometheus import CONTENT_TYPE

os.environ.setdefault("PROMETHEUS_DISABLE_CREATED_SERIES", "True")  # for registries made by libraries later
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

__all__ = ["CONTENT_TYPE", "exponential_buckets", "linear_buckets", "scrape"]


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """``count`` upper bounds, ``start`` then each ``factor`` times the previous (``prometheus.ExponentialBuckets``)."""
    buckets = [start]
    for _ in range(count - 1):
        buckets.append(buckets[-1] * factor)  # multiplied in turn, as Go does: the same float bounds
    return buckets


def linear_buckets(start: float, width: float, count: int) -> list[float]:
    """``count`` upper bounds ``width`` apart from ``start`` (``prometheus.LinearBuckets``)."""
    return [start + width * i for i in range(count)]


def scrape() -> bytes:
    """The process's registry in the Prometheus text format (``CONTENT_TYPE``)."""
    return generate_latest(REGISTRY)
