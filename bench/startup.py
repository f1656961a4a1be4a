"""Cluster start-up for tests: ``kubelab.Cluster(nodes=3)`` until 3 Nodes are Ready, and stop; the same for
envtest's API-only mode ``components=["apiserver"]`` (etcd + apiserver, healthy). Targets: ≤ 2 s and ≤ 0.5 s.

Each run is a fresh temporary data dir (a new etcd, kernel-picked ports), as the pytest plugin's session fixture
makes. Measured with monotonic time around ``start()`` and around ``stop()`` (the data dir's removal included);
medians of ``--runs``. The floor both configurations share is a fresh Python process importing the apiserver,
timed alone here as ``python -c "import apiserver.app"`` (median of 5).

    python bench/startup.py [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kubelab  # noqa: E402

TARGETS = {"nodes=3": 2.0, 'components=["apiserver"]': 0.5}


def one_run(kwargs: dict[str, Any]) -> tuple[float, float]:
    cluster = kubelab.Cluster(**kwargs)
    began = time.monotonic()
    cluster.start()
    started = time.monotonic() - began
    began = time.monotonic()
    cluster.stop()
    return started, time.monotonic() - began


def import_floor(runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        began = time.monotonic()
        subprocess.run([sys.executable, "-c", "import apiserver.app"], check=True, cwd=ROOT)
        times.append(time.monotonic() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    os.environ.setdefault("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")  # as `make test` runs the suite
    configs: dict[str, dict[str, Any]] = {"nodes=3": {"nodes": 3},
                                          'components=["apiserver"]': {"components": ["apiserver"]}}
    print(f"{'cluster':<26} {'start median':>12} {'min':>6} {'max':>6} {'stop median':>12} {'target':>7}")
    for label, kwargs in configs.items():
        starts, stops = zip(*(one_run(kwargs) for _ in range(args.runs)), strict=True)
        median = statistics.median(starts)
        verdict = "met" if median <= TARGETS[label] else "missed"
        print(f"{label:<26} {median:11.2f}s {min(starts):5.2f}s {max(starts):5.2f}s {statistics.median(stops):11.2f}s "
              f"{TARGETS[label]:6.1f}s {verdict}")
    print(f"python -c 'import apiserver.app' (median of 5): {import_floor():.2f}s")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores, shared)")


if __name__ == "__main__":
    main()
