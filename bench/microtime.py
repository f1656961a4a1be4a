"""MicroTime formatting: apimachinery.meta's one formatter against the four it replaced, interleaved in one run.

Baselines (copied from before): the audit log's per-second-cached ``micro_time(ns)`` and the three strftime ones
(the watch deliveries' from a float, ``now_rfc3339_micro()``, kubeclient's from a datetime). Prints ns per call
(median of ``--rounds`` rounds, each the best of 2 x ``--number`` calls) and new/old.

    python bench/microtime.py [--number 50000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import timeit
from collections.abc import Callable
from datetime import UTC, datetime

from apimachinery.meta import format_micro_time, micro_time, now_rfc3339_micro

_second: list[tuple[int, str]] = [(-1, "")]


def old_audit(ns: int) -> str:
    second, micros = divmod(ns // 1000, 1_000_000)
    cached = _second[0]
    if cached[0] != second:
        cached = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S."))
        _second[0] = cached
    return f"{cached[1]}{micros:06d}Z"


def old_deliveries(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def old_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def old_client(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    moment, at = datetime.now(UTC), time.time()
    pairs: dict[str, tuple[Callable[[], str], Callable[[], str]]] = {
        "audit log (time_ns)": (lambda: old_audit(time.time_ns()), lambda: micro_time(time.time_ns())),
        "deliveries (time.time float)": (lambda: old_deliveries(at), lambda: format_micro_time(at)),
        "now_rfc3339_micro()": (old_now, now_rfc3339_micro),
        "client (datetime)": (lambda: old_client(moment), lambda: format_micro_time(moment)),
    }
    print(f"load average {os.getloadavg()[0]:.1f}")
    for name, (old, new) in pairs.items():
        before, after = [], []
        for _ in range(args.rounds):  # interleaved: the machine's noise hits both alike
            before.append(min(timeit.repeat(old, number=args.number, repeat=2)) / args.number * 1e9)
            after.append(min(timeit.repeat(new, number=args.number, repeat=2)) / args.number * 1e9)
        old_ns, new_ns = statistics.median(before), statistics.median(after)
        print(f"{name:30s} old {old_ns:7.0f} ns  new {new_ns:7.0f} ns  new/old {new_ns / old_ns:.2f}")


if __name__ == "__main__":
    main()
