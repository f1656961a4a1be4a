"""Cluster start-up for tests: ``kubelab.Cluster(nodes=3)`` until 3 Nodes are Ready, and stop; the same for
envtest's API-only mode ``components=["apiserver"]`` (etcd + apiserver, healthy). Targets: ≤ 2 s and ≤ 0.5 s.

Each run is a fresh temporary data dir (a new etcd, kernel-picked ports) and fresh component processes, as the
pytest plugin's session fixture makes. Measured with monotonic time around ``start()`` and around ``stop()`` (the
data dir's removal included); medians of ``--runs``. The library forks its components from a pre-imported zygote
(``kubelab/zygote.py``) that starts on first use: its start (the components' imports) is in the very first run's
figure, printed apart as "first", and the median is over every run, that one included. Same-run baselines: API-only
clusters with ``fork_server=False`` (a fresh interpreter per component, as before the zygote and as `kubelab up`
runs them), interleaved with the zygote's runs (``--baseline-runs``), and ``python -c "import apiserver.app"``
(median of 5), the import the zygote saves each apiserver.

``--phases``: per run, when each component was spawned (s) and reported healthy (h), from the launcher's progress
reports (``kubelab.cluster.Cluster``'s ``report``, which ``kubelab up`` prints), and the controller-manager's lease →
node-ipam running → every controller running from its log: where a start's time goes.

    python bench/startup.py [--runs 10] [--baseline-runs 3] [--phases]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kubelab  # noqa: E402
from kubelab import cluster as engine  # noqa: E402

TARGETS = {"nodes=3": 2.0, 'components=["apiserver"]': 0.5}


PHASES: list[tuple[float, str]] = []  # (monotonic time, "apiserver:h") of the run being measured


def record_phases() -> None:
    """Have every engine cluster report its progress into ``PHASES`` (the library passes no ``report``)."""
    init = engine.Cluster.__init__

    def reporting(self: engine.Cluster, *args: Any, **kwargs: Any) -> None:
        kwargs["report"] = lambda p: PHASES.append((time.monotonic(), f"{p.name}:{'s' if p.seconds is None else 'h'}"))
        init(self, *args, **kwargs)

    engine.Cluster.__init__ = reporting  # type: ignore[method-assign]


def controller_manager_phases(log: Path) -> str:
    """Lease acquired → node-ipam running → all controllers running, from the controller-manager's log."""
    stamps: dict[str, float] = {}
    for line in log.read_text(errors="replace").splitlines():
        for key, marker in (("lease", "acquired lease"), ("ipam", "starting node-ipam-controller"),
                            ("all", "started controllers")):
            if marker in line and key not in stamps:
                stamps[key] = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    if "lease" not in stamps:
        return ""
    return "  controller-manager: lease→" + " ".join(f"{key} +{stamps[key] - stamps['lease']:.2f}s"
                                                    for key in ("ipam", "all") if key in stamps)


def one_run(kwargs: dict[str, Any], phases: bool = False) -> tuple[float, float]:
    """(start, stop) seconds of one fresh cluster; with ``phases``, print where the start's time went."""
    PHASES.clear()
    cluster = kubelab.Cluster(**kwargs, keep=phases)
    began = time.monotonic()
    cluster.start()
    started = time.monotonic() - began
    if phases:
        log = cluster.data_dir / "logs" / "controller-manager.log"
        print(f"  {started:5.2f}s: " + " ".join(f"{name}@{at - began:.2f}" for at, name in PHASES)
              + (controller_manager_phases(log) if log.exists() else ""))
    data_dir = cluster.data_dir
    began = time.monotonic()
    cluster.stop()
    if phases:  # kept for the controller-manager's log: removed here, as stop() removes it otherwise
        shutil.rmtree(data_dir, ignore_errors=True)
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
    parser.add_argument("--baseline-runs", type=int, default=3, help="API-only clusters without the zygote")
    parser.add_argument("--phases", action="store_true", help="print each run's phases (see the module doc)")
    args = parser.parse_args()
    if args.phases:
        record_phases()
    os.environ.setdefault("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")  # as `make test` runs the suite
    api_only = 'components=["apiserver"]'
    configs: dict[str, dict[str, Any]] = {"nodes=3": {"nodes": 3}, api_only: {"components": ["apiserver"]}}
    print(f"{'cluster':<26} {'first':>6} {'start median':>12} {'min':>6} {'max':>6} {'stop median':>12} {'target':>7}")
    baseline: list[float] = []
    medians: dict[str, float] = {}
    for label, kwargs in configs.items():
        starts, stops = [], []
        for index in range(args.runs):
            started, stopped = one_run(kwargs, args.phases)
            starts.append(started)
            stops.append(stopped)
            if label == api_only and index < args.baseline_runs:  # interleaved: the same moment's load
                baseline.append(one_run({**kwargs, "fork_server": False})[0])
        medians[label] = median = statistics.median(starts)
        verdict = "met" if median <= TARGETS[label] else "missed"
        print(f"{label:<26} {starts[0]:5.2f}s {median:11.2f}s {min(starts):5.2f}s {max(starts):5.2f}s "
              f"{statistics.median(stops):11.2f}s {TARGETS[label]:6.1f}s {verdict}")
    if baseline:
        fresh = statistics.median(baseline)
        print(f"baseline: {api_only} with fork_server=False (median of {len(baseline)}): {fresh:.2f}s, "
              f"{fresh / medians[api_only]:.1f}x the zygote's median")
    print(f"python -c 'import apiserver.app' (median of 5): {import_floor():.2f}s")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores, shared)")


if __name__ == "__main__":
    from stopping import stop_on_termination

    stop_on_termination()
    main()
