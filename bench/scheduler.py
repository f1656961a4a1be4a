"""Scheduler throughput shaped like kube-scheduler's ``SchedulingBasic`` benchmark, against its baseline.

One run: a fresh etcd + apiserver; ``--nodes`` Node objects (4 cpu, 32 Gi, 110 pods, as kube's node-default);
``--init-pods`` pods already placed on them (created with ``spec.nodeName``); then the real scheduler process
(``python -m scheduler --leader-elect=false``) and ``--pods`` pods to schedule, created with aiohttp at
concurrency 50. Measured: pods bound per second from the first create to the last bind seen in a watch.
Baseline in the same run: the apiserver's raw rate for ``POST pods/{name}/binding`` (aiohttp, concurrency 50
= the scheduler's binds in flight) on pods nobody schedules. Scenarios: ``basic``; ``node-affinity`` (every
pod requires ``zone In [zone1]``, half the nodes have it); ``pod-anti-affinity`` (required anti-affinity on
hostname among pods of one label, ``--anti-pods`` pods; needs scheduler/plugins/interpodaffinity.py);
``replicaset`` and ``deployment``: the ``basic`` pods (placed and new) owned by one ReplicaSet, or by the
ReplicaSet of one Deployment (``pod-template-hash`` label), as their controllers create them, so kube's default
PodTopologySpread constraints (hostname and zone, ScheduleAnyway, over the pods of the same controller) run
for every pod. The owners are real objects; no controller-manager runs, so nothing else acts on them.

``--in-process``: no etcd, apiserver or process, only the scheduler's attempt — ``Runner.find_node`` and the
assume, per pod, on the same cluster built in a ``Cache`` — timed per attempt (median and p90): the part the
scheduler's own code decides, far less noisy on a shared machine than the end-to-end rate.

    python bench/scheduler.py [--nodes 5000] [--init-pods 1000] [--pods 10000] [--scenarios basic,...]
    python bench/scheduler.py --in-process [--pods 400] ...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from api import run_concurrently, start_cluster  # noqa: E402

CONCURRENCY = 50
HEADERS = {"Content-Type": "application/json"}


def node(i: int, zone: bool) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": f"node-{i}"}
    if zone:
        labels["zone"] = "zone1" if i % 2 == 0 else "zone2"
    return {"metadata": {"name": f"node-{i}", "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                       "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


OWNED = ("replicaset", "deployment")


def pod(name: str, scenario: str, node_name: str | None = None, scheduler: str | None = None,
        owner: Owner | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.9",
                                            "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]}
    labels = {"app": "bench"}
    if scenario == "node-affinity":
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zone1"]}]}]}}}
    if scenario == "pod-anti-affinity":
        labels = {"color": "green"}
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    if node_name:
        spec["nodeName"] = node_name
    if scheduler:
        spec["schedulerName"] = scheduler
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if owner is not None:
        labels.update(owner.labels)
        metadata["ownerReferences"] = [owner.reference]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


@dataclass
class Owner:
    """The controller of a scenario's pods: its ownerReference and the labels it gives its pods."""

    reference: dict[str, Any]
    labels: dict[str, str]


def _workload(kind: str, name: str, labels: dict[str, str], replicas: int) -> dict[str, Any]:
    template = pod("template", "basic")
    template["metadata"] = {"labels": {**template["metadata"]["labels"], **labels}}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "bench", **labels}},
                     "template": template}}


def _reference(obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


async def create_owner(session: aiohttp.ClientSession, ns: str, scenario: str, replicas: int) -> Owner | None:
    """``replicaset``: one ReplicaSet; ``deployment``: a Deployment and the ReplicaSet it owns (as the
    deployment controller names and labels it); other scenarios: None."""
    if scenario not in OWNED:
        return None

    async def create(body: dict[str, Any]) -> dict[str, Any]:
        async with session.post(f"/apis/apps/v1/namespaces/{ns}/{body['kind'].lower()}s", json=body) as resp:
            if resp.status != 201:
                raise RuntimeError(f"creating {body['kind']} failed: {resp.status} {await resp.text()}")
            return await resp.json()

    if scenario == "replicaset":
        return Owner(_reference(await create(_workload("ReplicaSet", "bench", {}, replicas))), {})
    deployment = await create(_workload("Deployment", "bench", {}, replicas))
    labels = {"pod-template-hash": "5d8f9c7b6"}
    rs = _workload("ReplicaSet", f"bench-{labels['pod-template-hash']}", labels, replicas)
    rs["metadata"]["ownerReferences"] = [_reference(deployment)]
    return Owner(_reference(await create(rs)), labels)


async def post_all(session: aiohttp.ClientSession, path: str, bodies: list[bytes]) -> float:
    async def create(i: int) -> None:
        async with session.post(path, data=bodies[i], headers=HEADERS) as resp:
            if resp.status != 201:
                raise RuntimeError(f"POST {path} failed: {resp.status} {await resp.text()}")
            await resp.read()

    return await run_concurrently(len(bodies), CONCURRENCY, create)


async def binding_baseline(session: aiohttp.ClientSession, ns: str, count: int, nodes: int) -> float:
    """Raw ``POST pods/{name}/binding`` rate on pods no scheduler serves."""
    names = [f"raw-{i}" for i in range(count)]
    await post_all(session, f"/api/v1/namespaces/{ns}/pods",
                   [orjson.dumps(pod(n, "basic", scheduler="nobody")) for n in names])
    bodies = [orjson.dumps({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": n},
                            "target": {"kind": "Node", "name": f"node-{i % nodes}"}}) for i, n in enumerate(names)]

    async def bind(i: int) -> None:
        async with session.post(f"/api/v1/namespaces/{ns}/pods/{names[i]}/binding", data=bodies[i],
                                headers=HEADERS) as resp:
            if resp.status != 201:
                raise RuntimeError(f"bind failed: {resp.status} {await resp.text()}")
            await resp.read()

    return await run_concurrently(count, CONCURRENCY, bind)


async def watch_binds(session: aiohttp.ClientSession, ns: str, rv: str, want: int, bound: dict[str, float],
                      ready: asyncio.Event) -> None:
    """Note when each pod of ``ns`` is first seen bound, until ``want`` pods are."""
    params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "false"}
    async with session.get(f"/api/v1/namespaces/{ns}/pods", params=params,
                           timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as resp:
        ready.set()
        async for line in resp.content:
            if not line.strip():
                continue
            event = orjson.loads(line)
            obj = event.get("object", {})
            if obj.get("spec", {}).get("nodeName"):
                bound.setdefault(obj["metadata"]["name"], time.perf_counter())
                if len(bound) >= want:
                    return


def start_scheduler(master: str, tmp: Path) -> tuple[subprocess.Popen[bytes], Path]:
    log_path = tmp / f"scheduler-{uuid.uuid4().hex[:6]}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "scheduler", "--master", master, "--leader-elect=false",
                                 "-v", "0"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    return proc, log_path


async def scenario_run(master: str, tmp: Path, scenario: str, nodes: int, init_pods: int, pods: int) -> dict:
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    connector = aiohttp.TCPConnector(limit=CONCURRENCY + 10)
    async with aiohttp.ClientSession(master, connector=connector) as session:
        async with session.post("/api/v1/namespaces", json={"metadata": {"name": ns}}) as resp:
            assert resp.status == 201, await resp.text()
        began = time.perf_counter()
        await post_all(session, "/api/v1/nodes",
                       [orjson.dumps(node(i, scenario == "node-affinity")) for i in range(nodes)])
        owner = await create_owner(session, ns, scenario, init_pods + pods)
        await post_all(session, f"/api/v1/namespaces/{ns}/pods",
                       [orjson.dumps(pod(f"init-{i}", scenario, node_name=f"node-{i % nodes}", owner=owner))
                        for i in range(init_pods)])
        setup = time.perf_counter() - began
        baseline = await binding_baseline(session, ns, min(pods, 2000), nodes)
        proc, log_path = start_scheduler(master, tmp)
        try:
            # Wait until the scheduler has synced and binds: one probe pod.
            probe: dict[str, float] = {}
            async with session.get(f"/api/v1/namespaces/{ns}/pods", params={"limit": "1"}) as resp:
                rv = (await resp.json())["metadata"]["resourceVersion"]
            ready = asyncio.Event()
            watcher = asyncio.create_task(watch_binds(session, ns, rv, 1, probe, ready))
            await ready.wait()
            await post_all(session, f"/api/v1/namespaces/{ns}/pods", [orjson.dumps(pod("probe", "basic"))])
            await asyncio.wait_for(watcher, 120)

            async with session.get(f"/api/v1/namespaces/{ns}/pods", params={"limit": "1"}) as resp:
                rv = (await resp.json())["metadata"]["resourceVersion"]
            bound: dict[str, float] = {}
            ready = asyncio.Event()
            watcher = asyncio.create_task(watch_binds(session, ns, rv, pods, bound, ready))
            await ready.wait()
            bodies = [orjson.dumps(pod(f"p-{i}", scenario, owner=owner)) for i in range(pods)]
            start = time.perf_counter()
            create_rate = await post_all(session, f"/api/v1/namespaces/{ns}/pods", bodies)
            try:
                await asyncio.wait_for(watcher, max(120.0, pods / 20))
            except TimeoutError:
                print(f"  {scenario}: only {len(bound)}/{pods} bound before the timeout; see {log_path}")
            end = max(bound.values(), default=time.perf_counter())
            rate = len(bound) / (end - start)
        finally:
            proc.terminate()
            proc.wait(15)
    return {"scenario": scenario, "nodes": nodes, "init_pods": init_pods, "pods": pods, "bound": len(bound),
            "pods_per_s": rate, "binding_baseline_per_s": baseline, "ratio": rate / baseline,
            "create_per_s": create_rate, "setup_s": setup}


def in_process(scenario: str, nodes: int, init_pods: int, pods: int) -> dict[str, Any]:
    """Median and p90 of one attempt (find_node + assume) over ``pods`` pods; see the module docstring."""
    from scheduler.cache import Cache
    from scheduler.config import Profile
    from scheduler.scheduler import Runner

    owner = None
    if scenario in OWNED:
        labels = {"pod-template-hash": "5d8f9c7b6"} if scenario == "deployment" else {}
        owner = Owner({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "bench", "uid": "uid-bench",
                       "controller": True}, labels)

    def placed(name: str, node_name: str | None = None) -> dict[str, Any]:
        p = pod(name, scenario, node_name=node_name, owner=owner)
        p["metadata"]["namespace"] = "bench"
        p["status"] = {"phase": "Running" if node_name else "Pending"}
        return p

    cache = Cache()
    for i in range(nodes):
        cache.add_node(node(i, scenario == "node-affinity"))
    for i in range(init_pods):
        cache.add_pod(placed(f"init-{i}", f"node-{i % nodes}"))
    runner = Runner(Profile())
    times = []
    for i in range(pods):
        p = placed(f"p-{i}")
        began = time.perf_counter()
        attempt = runner.find_node(p, cache)
        if attempt.node is not None:
            cache.assume_pod(p, attempt.node)
        times.append(time.perf_counter() - began)
    times.sort()
    return {"scenario": scenario, "nodes": nodes, "init_pods": init_pods, "pods": pods,
            "median_ms": statistics.median(times) * 1e3, "p90_ms": times[int(len(times) * 0.9)] * 1e3}


def main_in_process(args: argparse.Namespace, scenarios: list[str]) -> None:
    print(f"{'scenario':>18} {'nodes':>6} {'placed':>6} {'pods':>6} {'median ms':>10} {'p90 ms':>8}")
    for scenario in scenarios:
        count = min(args.pods, args.anti_pods) if scenario == "pod-anti-affinity" else args.pods
        r = in_process(scenario, args.nodes, args.init_pods, count)
        print(f"{scenario:>18} {args.nodes:>6} {args.init_pods:>6} {count:>6} {r['median_ms']:>10.3f} "
              f"{r['p90_ms']:>8.3f}", flush=True)
        if args.json:
            print(json.dumps(r))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--init-pods", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--anti-pods", type=int, default=1000, help="pods to schedule in pod-anti-affinity")
    parser.add_argument("--scenarios", default="basic,replicaset,deployment,node-affinity,pod-anti-affinity")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print each result as a JSON line too")
    parser.add_argument("--in-process", action="store_true", help="time the scheduler's attempt alone")
    args = parser.parse_args()
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if "pod-anti-affinity" in scenarios and not (ROOT / "scheduler/plugins/interpodaffinity.py").exists():
        scenarios.remove("pod-anti-affinity")
    if args.in_process:
        main_in_process(args, scenarios)
        return
    print(f"{'scenario':>18} {'nodes':>6} {'pods':>6} {'pods/s':>8} {'bind baseline/s':>16} {'ratio':>6} "
          f"{'creates/s':>10}")
    for scenario in scenarios:
        count = args.anti_pods if scenario == "pod-anti-affinity" else args.pods
        results = []
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="kubelab-bench-sched-") as tmp:
                etcd, proc, master = start_cluster(Path(tmp))
                try:
                    results.append(asyncio.run(scenario_run(master, Path(tmp), scenario, args.nodes,
                                                            args.init_pods, count)))
                finally:
                    proc.terminate()
                    proc.wait(10)
                    etcd.stop()
        med = {k: statistics.median(r[k] for r in results) for k in ("pods_per_s", "binding_baseline_per_s",
                                                                      "ratio", "create_per_s")}
        print(f"{scenario:>18} {args.nodes:>6} {count:>6} {med['pods_per_s']:>8.0f} "
              f"{med['binding_baseline_per_s']:>16.0f} {med['ratio']:>6.2f} {med['create_per_s']:>10.0f}", flush=True)
        if args.json:
            for r in results:
                print(json.dumps(r))
    print(f"(median of {args.repeat} run(s); pods/s = pods bound / (last bind - first create))")


if __name__ == "__main__":
    from stopping import stop_on_termination

    stop_on_termination()
    main()
