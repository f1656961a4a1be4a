"""apimachinery.metrics: the lock-free counters, gauges and histograms, exposed as Prometheus reads them."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from apimachinery.metrics import Counter, Gauge, Histogram, exponential_buckets, linear_buckets


def samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_histogram_buckets_are_cumulative_and_a_bound_is_inclusive() -> None:
    registry = CollectorRegistry()
    hist = Histogram("op_duration_seconds", "How long.", ["op"], buckets=[0.1, 1.0], registry=registry)
    for value in (0.05, 0.1, 0.5, 1.0, 7.0):
        hist.labels("get").observe(value)
    got = samples(registry)
    assert got[("op_duration_seconds_bucket", (("le", "0.1"), ("op", "get")))] == 2  # 0.05 and 0.1 itself
    assert got[("op_duration_seconds_bucket", (("le", "1.0"), ("op", "get")))] == 4
    assert got[("op_duration_seconds_bucket", (("le", "+Inf"), ("op", "get")))] == 5
    assert got[("op_duration_seconds_count", (("op", "get"),))] == 5
    assert got[("op_duration_seconds_sum", (("op", "get"),))] == pytest.approx(8.65)


def test_counters_and_gauges_and_metrics_without_labels() -> None:
    registry = CollectorRegistry()
    requests = Counter("requests_total", "Requests.", ["code"], registry=registry)
    Counter("started_total", "Started.", registry=registry)
    depth = Gauge("depth", "Depth.", ["name"], registry=registry)
    requests.labels("201").inc()
    requests.labels("201").inc(2)
    depth.labels("q").inc()
    depth.labels("q").inc()
    depth.labels("q").dec()
    got = samples(registry)
    assert got[("requests_total", (("code", "201"),))] == 3
    assert got[("started_total", ())] == 0  # exposed from the start, as kube's
    assert got[("depth", (("name", "q"),))] == 1
    assert not any(name.endswith("_created") for name, _ in got)
    with pytest.raises(ValueError):
        requests.labels("201", "extra")


def test_kube_bucket_helpers() -> None:
    assert exponential_buckets(0.001, 2, 4) == [0.001, 0.002, 0.004, 0.008]
    assert linear_buckets(5, 5, 3) == [5, 10, 15]
