"""Pod startup latency: create → Running for real pods on real kubelets, against Kubernetes' SLO.

One run: a fresh etcd + apiserver, the real scheduler (``--leader-elect=false``) and ``--nodes`` real kubelets
(``python -m kubelet``, real processes), measured once the nodes are Ready and the scheduler's ``/readyz``
passes; then ``--pods`` pods (``busybox``, ``sleep 3600``) created with aiohttp, ``--concurrency`` in flight.
Measured client-side with monotonic time: from just before each pod's POST to the watch event that first shows
it ``Running`` (a watch opened before the first create), split into create → bound (scheduler) and bound →
Running (kubelet). Kubernetes' SLO (sig-scalability, "pod startup latency", stateless pods, excluding image
pulls): p99 ≤ 5 s. Target here: p99 ≤ 1 s.

Each container runtime of ``--runtimes`` gets its own ``--nodes`` kubelets (labelled ``kubelab.io/runtime``, the
pods select them) and is measured in turn in the same run; ``linux`` is left out, with the reason, where this
host cannot run Linux containers. The runtimes take turns, their order reversed every other run so neither
always follows the other's deletions. The last column compares each runtime's p99 with the first runtime of
``--runtimes`` in the same run (target for ``linux``: within 1.5× of ``process``); the end prints the medians.

    python bench/pod_startup.py [--pods 100] [--nodes 3] [--concurrency 10] [--repeat 1] [--keep DIR]
                                [--runtimes process,linux]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from api import run_concurrently, start_cluster  # noqa: E402

from kubelab.etcd import free_port  # noqa: E402
from kubelet.runtime.linux import unavailable  # noqa: E402

SLO_P99 = 5.0
TARGET_P99 = 1.0
HEADERS = {"Content-Type": "application/json"}


RUNTIME_LABEL = "kubelab.io/runtime"


def pod(name: str, runtime: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "startup"}},
            "spec": {"terminationGracePeriodSeconds": 1, "nodeSelector": {RUNTIME_LABEL: runtime},
                     "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"],
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


def start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, *argv], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def wait_ready_nodes(master: str, names: list[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = httpx.get(f"{master}/api/v1/nodes", timeout=5).json()["items"]
        ready = {n["metadata"]["name"] for n in items
                 if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))}
        if set(names) <= ready:
            return
        time.sleep(0.2)
    raise RuntimeError(f"nodes {names} did not become Ready")


def wait_ready_scheduler(readyz: str, timeout: float = 120) -> None:
    """Until its informers have synced: a scheduler still starting (its imports alone take ~1 s) would time its
    own start-up into the first run's pods, which no pod startup SLO counts."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(readyz, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the scheduler did not become ready")


async def watch(session: aiohttp.ClientSession, ns: str, rv: str, want: int, bound: dict[str, float],
                running: dict[str, float], ready: asyncio.Event) -> None:
    """Note when each pod is first seen bound and first seen Running, until ``want`` pods run."""
    params = {"watch": "true", "resourceVersion": rv}
    async with session.get(f"/api/v1/namespaces/{ns}/pods", params=params,
                           timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as resp:
        ready.set()
        async for line in resp.content:
            if not line.strip():
                continue
            now = time.monotonic()
            obj = orjson.loads(line).get("object", {})
            name = obj.get("metadata", {}).get("name", "")
            if obj.get("spec", {}).get("nodeName"):
                bound.setdefault(name, now)
            if obj.get("status", {}).get("phase") == "Running":
                running.setdefault(name, now)
                if len(running) >= want:
                    return


async def measure(master: str, pods: int, concurrency: int, runtime: str) -> dict[str, list[float]]:
    ns = f"startup-{uuid.uuid4().hex[:6]}"
    async with aiohttp.ClientSession(base_url=master) as session:
        async with session.post("/api/v1/namespaces", data=orjson.dumps(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}), headers=HEADERS) as resp:
            assert resp.status == 201, await resp.text()
        async with session.get(f"/api/v1/namespaces/{ns}/pods") as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        created: dict[str, float] = {}
        bound: dict[str, float] = {}
        running: dict[str, float] = {}
        ready = asyncio.Event()
        watcher = asyncio.create_task(watch(session, ns, rv, pods, bound, running, ready))
        await ready.wait()
        bodies = [orjson.dumps(pod(f"p{i}", runtime)) for i in range(pods)]

        async def create(i: int) -> None:
            created[f"p{i}"] = time.monotonic()
            async with session.post(f"/api/v1/namespaces/{ns}/pods", data=bodies[i], headers=HEADERS) as resp:
                assert resp.status == 201, await resp.text()

        await run_concurrently(pods, concurrency, create)
        await asyncio.wait_for(watcher, 120)
        async with session.delete(f"/api/v1/namespaces/{ns}/pods") as resp:
            await resp.read()
    names = sorted(created)
    return {"total": [running[n] - created[n] for n in names],
            "scheduling": [bound[n] - created[n] for n in names],
            "kubelet": [running[n] - bound[n] for n in names]}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q / 100 * len(ordered) + 0.5)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=10, help="pod creates in flight")
    parser.add_argument("--repeat", type=int, default=1, help="runs (each on the same cluster, fresh namespace)")
    parser.add_argument("--runtimes", default="process,linux", help="container runtimes to measure, in turn "
                        "(default: %(default)s)")
    parser.add_argument("--keep", metavar="DIR", help="keep the components' logs and state in DIR (default: a "
                        "temporary directory, removed)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="kubelab-bench-") as tmp_name:
        tmp = Path(args.keep or tmp_name)
        tmp.mkdir(parents=True, exist_ok=True)
        etcd, apiserver, master = start_cluster(tmp)
        scheduler_port = free_port()
        procs = [start(["-m", "scheduler", "--master", master, "--leader-elect=false", "-v", "0",
                        "--healthz-port", str(scheduler_port)], tmp / "scheduler.log")]
        runtimes = [r for r in args.runtimes.split(",") if r]
        if "linux" in runtimes and (why := unavailable(tmp / "probe")) is not None:
            print(f"linux runtime left out: {why}")
            runtimes.remove("linux")
        names = []
        for runtime in runtimes:
            for i in range(args.nodes):
                name = f"node{i + 1:02d}-{runtime}"
                names.append(name)
                procs.append(start(["-m", "kubelet", "--master", master, "--node-name", name, "--port",
                                    str(free_port()), "--root-dir", str(tmp / name), "--runtime", runtime,
                                    "--node-labels", f"{RUNTIME_LABEL}={runtime}", "-v", "0"], tmp / f"{name}.log"))
        try:
            wait_ready_nodes(master, names)
            wait_ready_scheduler(f"http://127.0.0.1:{scheduler_port}/readyz")
            print(f"{args.pods} pods over {args.nodes} kubelets per runtime, {args.concurrency} creates in flight "
                  f"(create → Running, client-side):")
            print(f"{'run':>3} {'runtime':>8} {'p50 s':>7} {'p90 s':>7} {'p99 s':>7} {'max s':>7}   {'sched p99':>9} "
                  f"{'kubelet p99':>11}   {'SLO p99<=5s':>11} {'target p99<=1s':>14}")
            p99s: dict[str, list[float]] = {r: [] for r in runtimes}
            ratios: dict[str, list[float]] = {r: [] for r in runtimes}
            for run in range(args.repeat):
                for runtime in runtimes if run % 2 == 0 else runtimes[::-1]:
                    figures = asyncio.run(measure(master, args.pods, args.concurrency, runtime))
                    total = figures["total"]
                    p99 = percentile(total, 99)
                    p99s[runtime].append(p99)
                    print(f"{run + 1:>3} {runtime:>8} {statistics.median(total):>7.3f} {percentile(total, 90):>7.3f} "
                          f"{p99:>7.3f} {max(total):>7.3f}   {percentile(figures['scheduling'], 99):>9.3f} "
                          f"{percentile(figures['kubelet'], 99):>11.3f}   {'met' if p99 <= SLO_P99 else 'MISSED':>11} "
                          f"{'met' if p99 <= TARGET_P99 else 'MISSED':>14}", flush=True)
                    time.sleep(3)  # let the deletions finish before the next run
                for runtime in runtimes:
                    ratios[runtime].append(p99s[runtime][-1] / p99s[runtimes[0]][-1])
            print(f"medians over {args.repeat} run(s), load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}:")
            for runtime in runtimes:
                print(f"  {runtime:>8}: p99 {statistics.median(p99s[runtime]):.3f} s, p99 / {runtimes[0]} p99 "
                      f"{statistics.median(ratios[runtime]):.2f}× (runs: "
                      f"{', '.join(f'{r:.2f}' for r in ratios[runtime])})")
        finally:
            for proc in reversed(procs):
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
            apiserver.terminate()
            apiserver.wait(10)
            etcd.stop()


if __name__ == "__main__":
    from stopping import stop_on_termination

    stop_on_termination()
    main()
