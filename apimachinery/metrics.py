"""The process's Prometheus registry and the metric types every component records into (kube's ``legacyregistry``
and ``component-base/metrics``).

Each component is its own OS process, so prometheus_client's default ``REGISTRY`` is exactly kube's one registry per
process: metrics are module-level objects registered once at import, ``process_*``, ``python_gc_*`` and
``python_info`` come with it, and a component's ``/metrics`` is that registry rendered (``scrape``), served as kube
serves it (``CONTENT_TYPE``, text format 0.0.4).

``Counter``, ``Gauge`` and ``Histogram`` are prometheus_client collectors, but their series are plain floats and
lists updated without locks: the components update them from their event loop, and prometheus_client's own types
take a lock and walk every bucket per observation (about 10 µs for a histogram of kube's 23 request buckets on the
shared test machine, against well under 1 µs here: a ``bisect`` and two additions). ``labels(*values)`` returns a
series (created on first use and kept, as kube's vectors keep theirs); a metric without labels is its own series.
No ``*_created`` series are written, as kube's Go client writes none.

``exponential_buckets`` and ``linear_buckets`` are component-base's helpers, so bucket boundaries are written as
kube's source writes them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar

import prometheus_client
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from apimachinery.prometheus import CONTENT_TYPE

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

__all__ = ["CONTENT_TYPE", "Counter", "Gauge", "Histogram", "exponential_buckets", "linear_buckets", "scrape"]

DEF_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)  # prometheus.DefBuckets


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


S = TypeVar("S")


class _Vector(Collector, Generic[S]):
    """A metric family: its name, help, label names, and a series per label values (``labels``)."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = (),
                 registry: CollectorRegistry | None = REGISTRY) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._series: dict[tuple[str, ...], S] = {}
        if not self.labelnames:
            self.labels()  # a metric without labels is exposed from the start (at 0), as kube's
        if registry is not None:
            registry.register(self)

    def _new_series(self) -> S:
        raise NotImplementedError

    def labels(self, *values: str) -> S:
        """The series of ``values`` (one per label name), created on first use."""
        series = self._series.get(values)
        if series is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name}: {len(self.labelnames)} label values expected, got {len(values)}")
            series = self._series[values] = self._new_series()
        return series

    def _items(self) -> list[tuple[tuple[str, ...], S]]:
        return list(self._series.items())


class CounterSeries:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class Counter(_Vector[CounterSeries]):
    """A counter (``name`` ends in ``_total``, as kube's do)."""

    def _new_series(self) -> CounterSeries:
        return CounterSeries()

    def inc(self, amount: float = 1.0) -> None:
        self.labels().inc(amount)

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, series in self._items():
            family.add_metric(values, series.value)
        yield family


class GaugeSeries(CounterSeries):
    __slots__ = ()

    def dec(self, amount: float = 1.0) -> None:
        self.value -= amount

    def set(self, value: float) -> None:
        self.value = value


class Gauge(_Vector[GaugeSeries]):
    def _new_series(self) -> GaugeSeries:
        return GaugeSeries()

    def set(self, value: float) -> None:
        self.labels().set(value)

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, series in self._items():
            family.add_metric(values, series.value)
        yield family


class HistogramSeries:
    """Counts per bucket (the last one: above every bound, ``+Inf`` only) and the sum of the observations."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: list[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1  # the first bound >= value: Prometheus' ``le``
        self.sum += value


class Histogram(_Vector[HistogramSeries]):
    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = (),
                 buckets: Sequence[float] = DEF_BUCKETS, registry: CollectorRegistry | None = REGISTRY) -> None:
        self.bounds = sorted(float(b) for b in buckets if b != float("inf"))
        self._les = [_go_float(b) for b in self.bounds] + ["+Inf"]
        super().__init__(name, documentation, labelnames, registry)

    def _new_series(self) -> HistogramSeries:
        return HistogramSeries(self.bounds)

    def observe(self, value: float) -> None:
        self.labels().observe(value)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, series in self._items():
            cumulative, buckets = 0, []
            for le, count in zip(self._les, list(series.counts), strict=False):
                cumulative += count
                buckets.append((le, float(cumulative)))
            family.add_metric(values, buckets, series.sum)
        yield family


def _go_float(value: float) -> str:
    """A bucket bound as the ``le`` label Go's client writes."""
    text: str = floatToGoString(value)  # type: ignore[no-untyped-call]
    return text
