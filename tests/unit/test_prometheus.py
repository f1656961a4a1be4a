"""The Prometheus text format the kubelet's /metrics/resource speaks: rendering as Go's client does, parsing back."""

from __future__ import annotations

import pytest

from apimachinery.prometheus import Family, Sample, format_value, parse, render


@pytest.mark.parametrize(("value", "text"), [
    (0.0, "0"), (3.0, "3"), (357.35, "357.35"), (100000.0, "100000"), (1e6, "1e+06"),
    (12345678.0, "1.2345678e+07"), (1.79636234834e9, "1.79636234834e+09"), (0.0001, "0.0001"),
    (0.00001234, "1.234e-05"), (-2.5, "-2.5"), (float("inf"), "+Inf"), (float("nan"), "NaN"),
])
def test_values_print_as_go_formats_them(value: float, text: str) -> None:
    assert format_value(value) == text


def test_render_and_parse_round_trip() -> None:
    samples = [Sample("container_cpu_usage_seconds_total", 22.85,
                      {"container": "spin", "namespace": "default", "pod": 'we"ird\\pod\n'}, 1796362374503)]
    text = render([Family("container_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time", "counter", samples),
                   Family("resource_scrape_error", "[STABLE] 1 if error", "gauge",
                          [Sample("resource_scrape_error", 0)])])
    assert text.splitlines()[:3] == [
        "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time",
        "# TYPE container_cpu_usage_seconds_total counter",
        'container_cpu_usage_seconds_total{container="spin",namespace="default",pod="we\\"ird\\\\pod\\n"} 22.85 '
        "1796362374503",
    ]
    assert text.endswith("resource_scrape_error 0\n")
    assert list(parse(text)) == [*samples, Sample("resource_scrape_error", 0.0)]


def test_parse_rejects_malformed_lines() -> None:
    with pytest.raises(ValueError):
        list(parse("node_cpu_usage_seconds_total 1 2 3\n"))
