"""Health checks of supervised processes: one quick probe of one run, used at start-up and after each restart.

A check answers for the current run of a process (its log, where this run's part of the log begins, how long it
has run), so the same check tells `kubelab up` when a component is up and tells the supervisor when a restarted
one is up again. A probe is one GET (at most ``PROBE_TIMEOUT``) and the caller polls: a probe that polled itself
until its timeout held up the probes of every other process of the tier, each already healthy component then
waiting its turn behind one that was not.

- ``HttpHealth``: a fixed URL answers 200 (etcd's ``/health``, the apiserver's ``/healthz``).
- ``PrintedHealth``: a URL the process printed in this run's log answers 200 (the controller-manager, the
  scheduler and the kubelets print their ``/healthz``; a restarted one may print another port); a process that
  prints none is up once it has survived ``settle`` seconds.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kubelab import process

if TYPE_CHECKING:
    import httpx

__all__ = ["HealthCheck", "HttpHealth", "PrintedHealth", "Probe", "Run"]

PROBE_TIMEOUT = 0.5


@dataclass(frozen=True)
class Run:
    """What a health check may look at for one run of a process."""

    log: Path
    log_offset: int  # the log is appended across runs: this run's output starts here
    seconds: float  # how long it has been running


@dataclass(frozen=True)
class Probe:
    healthy: bool
    url: str | None = None  # where the health was (or would be) checked, for `kubelab status`


class HealthCheck(Protocol):
    def probe(self, run: Run) -> Probe:
        """One quick look: is this run healthy now?"""
        ...


@dataclass(frozen=True)
class HttpHealth:
    url: str

    def probe(self, run: Run) -> Probe:
        return Probe(answers(self.url), self.url)


@dataclass(frozen=True)
class PrintedHealth:
    pattern: re.Pattern[str]  # the health URL a process prints, e.g. components.HEALTH_URL_IN_LOG
    settle: float = 1.0

    def probe(self, run: Run) -> Probe:
        url = printed_url(run.log, run.log_offset, self.pattern)
        if url is None:
            return Probe(run.seconds >= self.settle)
        return Probe(answers(url), url)


def answers(url: str) -> bool:
    """One GET: does ``url`` answer 200 now?"""
    import httpx  # here: the zygote imports this module (see ``process.loopback_client``)

    try:
        return _client().get(url).status_code == 200
    except httpx.HTTPError:
        return False


@functools.cache
def _client() -> httpx.Client:
    """One client for every probe of this process (each new one costs its set-up); no connection is kept, none
    is left open when the process ends."""
    return process.loopback_client(timeout=PROBE_TIMEOUT, keepalive=False)


def printed_url(log: Path, offset: int, pattern: re.Pattern[str]) -> str | None:
    """The first URL matching ``pattern`` that the process printed since ``offset``, if any."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read(1_000_000).decode("utf-8", "replace")
    except OSError:
        return None
    match = pattern.search(text)
    return match.group(0) if match else None
