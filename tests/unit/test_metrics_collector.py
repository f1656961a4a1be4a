"""Turning kubelet scrapes into rates as metrics-server does: decoding, the baseline rules, the second scrape."""

from __future__ import annotations

import asyncio

import pytest

from apimachinery.prometheus import render
from apiserver.metrics.collector import (
    MIN_WINDOW,
    Collector,
    ContainerSample,
    NodeScrape,
    container_point,
    decode,
    node_point,
    rate,
)
from kubelet.stats import CLK_TCK, ContainerRef, Usage, resource_families

KEY = ("default", "busy", "spin")


def test_decode_reads_what_the_kubelet_serves() -> None:
    ref = ContainerRef(*KEY, "c1", 100)
    text = render(resource_families([(ref, Usage(CLK_TCK * 3, 4096, CLK_TCK))], Usage(CLK_TCK * 4, 8192),
                                    boot=1000, now_ms=2_000_500))
    scrape = decode(text)
    assert (scrape.timestamp, scrape.cpu_seconds, scrape.memory_bytes) == (2000.5, 4.0, 8192)
    assert scrape.containers == {KEY: ContainerSample(3.0, 4096, 1001.0)}


def test_decode_needs_the_node_samples() -> None:
    with pytest.raises(ValueError):
        decode("resource_scrape_error 1\n")


def test_rate_in_nanocores() -> None:
    assert rate(12.0, 10.0, 102.0, 100.0) == 1_000_000_000
    assert rate(10.25, 10.0, 101.0, 100.0) == 250_000_000
    assert rate(9.0, 10.0, 101.0, 100.0) is None  # the counter went back: restarted
    assert rate(10.0, 10.0, 100.0, 100.0) is None


def scrape(ts: float, cpu: float, **containers: ContainerSample) -> NodeScrape:
    return NodeScrape(ts, cpu, 1 << 20, {("default", "busy", name): s for name, s in containers.items()})


def test_points() -> None:
    base = scrape(100.0, 50.0, spin=ContainerSample(10.0, 4096, 90.0), old=ContainerSample(1.0, 4096, 10.0))
    current = scrape(102.0, 52.5, spin=ContainerSample(12.0, 8192, 90.0), new=ContainerSample(0.5, 4096, 101.0),
                     old=ContainerSample(0.1, 4096, 101.5))
    node = node_point(base, current)
    assert node is not None and (node.cpu_nanocores, node.window, node.memory_bytes) == (1_250_000_000, 2.0, 1 << 20)
    spin = container_point(base, current, KEY)
    assert spin is not None and (spin.cpu_nanocores, spin.window, spin.memory_bytes) == (1_000_000_000, 2.0, 8192)
    new = container_point(base, current, ("default", "busy", "new"))  # started after the baseline: from its start
    assert new is not None and (new.cpu_nanocores, new.window) == (500_000_000, 1.0)
    restarted = container_point(base, current, ("default", "busy", "old"))  # a new instance of an old name
    assert restarted is not None and restarted.cpu_nanocores == 200_000_000
    late = container_point(scrape(100.0, 50.0), scrape(102.0, 52.0, late=ContainerSample(5.0, 1, 52.0)),
                           ("default", "busy", "late"))  # running before the baseline, yet not reported in it
    assert late is not None and (late.cpu_nanocores, late.window) == (100_000_000, 50.0)
    assert container_point(base, scrape(102.0, 0.0, spin=ContainerSample(12.0, 1, 103.0)), KEY) is None  # future


class FakeKubelet:
    """Scrapes at a fake clock that ``sleep`` advances: no real time passes."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.cpu = 0.0
        self.scrapes = 0

    async def scrape(self, url: str) -> NodeScrape:
        self.scrapes += 1
        return NodeScrape(self.now, self.cpu, 0)

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.cpu += seconds / 2  # half a core


def test_first_request_scrapes_twice_and_later_ones_reuse_the_baseline() -> None:
    kubelet = FakeKubelet()
    collector = Collector(kubelet.scrape, kubelet.sleep)
    pair = asyncio.run(collector.pair("n", "http://k"))
    assert pair is not None and kubelet.scrapes == 2
    base, current = pair
    assert current.timestamp - base.timestamp >= MIN_WINDOW
    point = node_point(base, current)
    assert point is not None and abs(point.cpu_nanocores - 500_000_000) < 10_000_000
    kubelet.now += 5.0
    kubelet.cpu += 5.0
    pair = asyncio.run(collector.pair("n", "http://k"))
    assert pair is not None and kubelet.scrapes == 3 and pair[1].timestamp - pair[0].timestamp == 5.0


def test_unreachable_kubelet_gives_no_pair() -> None:
    async def refuse(url: str) -> NodeScrape:
        raise ConnectionRefusedError(url)

    assert asyncio.run(Collector(refuse).pair("n", "http://k")) is None
