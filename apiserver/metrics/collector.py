"""Usage from the kubelets: scrape ``/metrics/resource`` on request, keep recent scrapes, turn two into a rate.

metrics-server scrapes every kubelet every 15 s and reports CPU as the rate between its last two scrapes (the
``window``). Here nothing scrapes in the background: a request scrapes the kubelets it needs and pairs the new
scrape with the newest kept one at least ``MIN_WINDOW`` older (and at most ``MAX_AGE``). When there is none — the
first request, or one after a quiet minute — it waits out ``MIN_WINDOW`` and scrapes again, so ``kubectl top``
answers at once instead of "metrics not available yet". As in metrics-server, a container the baseline lacks
(started since) is measured from its start time with zero CPU then, and a counter that went backwards (a
restarted kubelet) gives no point rather than a negative one.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import aiohttp

from apimachinery import prometheus

from ..kubeletclient import ssl_context

log = logging.getLogger(__name__)

MIN_WINDOW = 1.0  # seconds between the two scrapes of a rate
MAX_AGE = 60.0  # an older scrape is not a baseline: the window stays recent
KEEP_SPACING = 0.5  # scrapes closer together than this are not all kept
SCRAPE_TIMEOUT = 5.0
START_TOLERANCE = 1.0  # start times of one container instance agree within this (clock-tick rounding)

ContainerKey = tuple[str, str, str]  # namespace, pod, container


@dataclass(frozen=True, slots=True)
class ContainerSample:
    cpu_seconds: float
    memory_bytes: int
    start: float  # seconds since the epoch


@dataclass(frozen=True, slots=True)
class NodeScrape:
    """One scrape of one kubelet (its samples share one timestamp)."""

    timestamp: float
    cpu_seconds: float
    memory_bytes: int
    containers: dict[ContainerKey, ContainerSample] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Point:
    """A usage as the metrics API reports it: CPU as a rate over ``window`` seconds ending at ``timestamp``."""

    timestamp: float
    window: float
    cpu_nanocores: int
    memory_bytes: int


def decode(text: str) -> NodeScrape:
    """A ``/metrics/resource`` exposition → one scrape (``ValueError`` when it lacks the node's samples)."""
    node: dict[str, float] = {}
    containers: dict[ContainerKey, dict[str, float]] = {}
    timestamp: float | None = None
    for s in prometheus.parse(text):
        if s.timestamp_ms is not None and s.name.startswith(("node_", "container_")):
            timestamp = s.timestamp_ms / 1000
        if s.name in ("node_cpu_usage_seconds_total", "node_memory_working_set_bytes"):
            node[s.name] = s.value
        elif s.name.startswith("container_"):
            key = (s.labels.get("namespace", ""), s.labels.get("pod", ""), s.labels.get("container", ""))
            containers.setdefault(key, {})[s.name] = s.value
    if timestamp is None or len(node) < 2:
        raise ValueError("no node_cpu_usage_seconds_total / node_memory_working_set_bytes sample with a timestamp")
    samples = {key: ContainerSample(v["container_cpu_usage_seconds_total"],
                                    int(v.get("container_memory_working_set_bytes", 0)),
                                    v.get("container_start_time_seconds", 0.0))
               for key, v in containers.items() if "container_cpu_usage_seconds_total" in v}
    return NodeScrape(timestamp, node["node_cpu_usage_seconds_total"], int(node["node_memory_working_set_bytes"]),
                      samples)


def rate(cpu_now: float, cpu_then: float, now: float, then: float) -> int | None:
    """Nanocores between two readings of a CPU counter; ``None`` if the counter went back or no time passed."""
    if now <= then or cpu_now < cpu_then:
        return None
    return round((cpu_now - cpu_then) / (now - then) * 1e9)


def node_point(base: NodeScrape, current: NodeScrape) -> Point | None:
    cpu = rate(current.cpu_seconds, base.cpu_seconds, current.timestamp, base.timestamp)
    if cpu is None:
        return None
    return Point(current.timestamp, current.timestamp - base.timestamp, cpu, current.memory_bytes)


def container_point(base: NodeScrape, current: NodeScrape, key: ContainerKey) -> Point | None:
    """From the baseline's reading of the same instance; for an instance the baseline lacks (started since, or
    not yet reported then), from its start with zero CPU."""
    now = current.containers[key]
    then = base.containers.get(key)
    if then is not None and abs(then.start - now.start) <= START_TOLERANCE:
        cpu, since = rate(now.cpu_seconds, then.cpu_seconds, current.timestamp, base.timestamp), base.timestamp
    else:
        cpu, since = rate(now.cpu_seconds, 0.0, current.timestamp, now.start), now.start
    if cpu is None:
        return None
    return Point(current.timestamp, current.timestamp - since, cpu, now.memory_bytes)


Scrape = Callable[[str], Awaitable[NodeScrape]]


async def scrape_kubelet(url: str) -> NodeScrape:
    """``GET {kubelet}/metrics/resource``; ``OSError``/``ValueError``/``aiohttp.ClientError`` when it fails."""
    timeout = aiohttp.ClientTimeout(total=SCRAPE_TIMEOUT)
    async with (aiohttp.ClientSession(timeout=timeout) as session,
                session.get(f"{url}/metrics/resource", ssl=ssl_context()) as response):
            if response.status != 200:
                raise ValueError(f"{url}/metrics/resource answered {response.status}")
            return decode(await response.text())


class Collector:
    """Recent scrapes per kubelet, and the pair (baseline, current) a request computes its rates from."""

    def __init__(self, scrape: Scrape = scrape_kubelet,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._scrape = scrape
        self._sleep = sleep
        self._history: dict[str, deque[NodeScrape]] = {}  # by kubelet URL, oldest first
        self._locks: dict[str, asyncio.Lock] = {}

    def _baseline(self, url: str, current: NodeScrape) -> NodeScrape | None:
        history = self._history.setdefault(url, deque())
        while history and current.timestamp - history[0].timestamp > MAX_AGE:
            history.popleft()
        usable = [s for s in history if current.timestamp - s.timestamp >= MIN_WINDOW]
        return usable[-1] if usable else None

    def _keep(self, url: str, current: NodeScrape) -> None:
        history = self._history[url]
        if not history or current.timestamp - history[-1].timestamp >= KEEP_SPACING:
            history.append(current)

    async def pair(self, node: str, url: str) -> tuple[NodeScrape, NodeScrape] | None:
        """The baseline and a fresh scrape of ``url`` (the kubelet of ``node``), or ``None`` if it cannot be
        scraped — the node is then left out, as metrics-server leaves out a node whose scrape failed."""
        async with self._locks.setdefault(url, asyncio.Lock()):
            try:
                current = await self._scrape(url)
                base = self._baseline(url, current)
                if base is None:  # wait until the newest kept scrape is old enough to be one
                    self._keep(url, current)
                    age = current.timestamp - self._history[url][-1].timestamp
                    await self._sleep(MIN_WINDOW - age + 0.01)
                    current = await self._scrape(url)
                    base = self._baseline(url, current)
            except (TimeoutError, OSError, ValueError, aiohttp.ClientError) as err:
                log.info("cannot scrape the kubelet of node %s at %s: %s", node, url, err)
                return None
            self._keep(url, current)
            return (base, current) if base is not None else None
