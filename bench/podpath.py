"""The apiserver's CPU per request on a pod's path through the control plane: create, binding, status patch.

Every pod of issue #18's scale run costs the apiserver these three writes (the controller's create, the
scheduler's binding, the kubelet's status patch), and the one apiserver process is what limits that run. So the
figure here is **CPU microseconds of the apiserver process per request** (``/proc/<pid>/stat``), by phase, which
a loaded machine changes much less than wall time; requests/s is printed beside it.

Per run: a fresh etcd + apiserver (bench/api.py's ``cluster``: plain port, ``system:masters``, RBAC on, no
ServiceAccount admission), a Node, then ``--pods`` pods of one ReplicationController (labels, controller
ownerReference, a container with requests: what the RC controller creates) with ``--concurrency`` in flight:
1. ``POST pods`` (the RC's creates);
2. ``POST pods/<name>/binding`` (the scheduler's);
3. ``PATCH pods/<name>/status``, a JSON merge patch of a Running status (the hollow kubelet's).

``--base DIR`` runs the same bench from another tree (a ``git archive`` of main, same venv) in turn with this one,
``--runs`` times each, alternating which goes first: a same-machine, interleaved A/B; ratios are this tree's CPU
per request over the base's (medians).

    python bench/podpath.py [--pods 2000] [--runs 3] [--concurrency 50] [--base DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from api import APISERVER_PIDS, cluster, cpu_seconds, run_concurrently  # noqa: E402

PHASES = ("create", "binding", "status")
NODE = "node-1"


def rc_pod(ns: str, name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name, "namespace": ns, "labels": {"app": "bench", "tier": "web"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ReplicationController", "name": "bench",
                                 "uid": "6a1c7a3e-0000-4000-8000-000000000001", "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"],
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
    }


def running_status(name: str) -> dict:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conditions = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                  for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")]
    return {"status": {
        "phase": "Running", "conditions": conditions, "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}],
        "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}], "startTime": now, "qosClass": "Burstable",
        "containerStatuses": [{"name": "c", "state": {"running": {"startedAt": now}}, "lastState": {},
                               "ready": True, "restartCount": 0, "image": "docker.io/library/busybox:latest",
                               "imageID": "docker.io/library/busybox@sha256:" + "0" * 64,
                               "containerID": f"kubelab://{name}", "started": True}]}}


async def one_run(master: str, pods: int, concurrency: int) -> dict[str, dict[str, float]]:
    pid = APISERVER_PIDS[0]
    ns = f"bench-{uuid.uuid4().hex[:8]}"
    names = [f"p{i}" for i in range(pods)]
    connector = aiohttp.TCPConnector(limit=concurrency + 5)
    out: dict[str, dict[str, float]] = {}
    async with aiohttp.ClientSession(master, connector=connector) as session:
        for path, body in (("/api/v1/namespaces", {"metadata": {"name": ns}}),
                           ("/api/v1/nodes", {"metadata": {"name": NODE}})):
            async with session.post(path, json=body) as resp:
                assert resp.status in (201, 409), await resp.text()
        base = f"/api/v1/namespaces/{ns}/pods"
        json_type = {"Content-Type": "application/json"}
        merge_type = {"Content-Type": "application/merge-patch+json"}
        requests = {
            "create": lambda i: session.post(base, data=orjson.dumps(rc_pod(ns, names[i])), headers=json_type),
            "binding": lambda i: session.post(f"{base}/{names[i]}/binding", headers=json_type, data=orjson.dumps(
                {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": names[i]},
                 "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}})),
            "status": lambda i: session.patch(f"{base}/{names[i]}/status", headers=merge_type,
                                              data=orjson.dumps(running_status(names[i]))),
        }
        for phase in PHASES:
            make = requests[phase]

            async def op(i: int, make=make) -> None:  # noqa: B023 (bound per phase)
                async with make(i) as resp:
                    if resp.status not in (200, 201):
                        raise RuntimeError(f"{resp.method} {resp.url}: {resp.status} {await resp.text()}")
                    await resp.read()

            cpu = cpu_seconds([pid])
            rate = await run_concurrently(pods, concurrency, op)
            out[phase] = {"per_s": rate, "cpu_us": (cpu_seconds([pid]) - cpu) / pods * 1e6}
    return out


def run_here(args: argparse.Namespace) -> list[dict[str, dict[str, float]]]:
    results = []
    for _ in range(args.runs):
        with cluster(None) as (master, _etcd):
            results.append(asyncio.run(one_run(master, args.pods, args.concurrency)))
    return results


def run_tree(tree: Path, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """One run of this bench from ``tree`` (its own apiserver code), in a fresh interpreter."""
    argv = [sys.executable, str(tree / "bench" / "podpath.py"), "--pods", str(args.pods), "--runs", "1",
            "--concurrency", str(args.concurrency), "--json"]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(argv, cwd=tree, env=env, check=True, capture_output=True, text=True)
    result: dict[str, dict[str, float]] = json.loads(done.stdout.strip().splitlines()[-1])[0]
    return result


def table(label: str, runs: list[dict[str, dict[str, float]]]) -> dict[str, float]:
    medians = {}
    for phase in PHASES:
        cpu = [r[phase]["cpu_us"] for r in runs]
        rate = [r[phase]["per_s"] for r in runs]
        medians[phase] = statistics.median(cpu)
        print(f"{label:6} {phase:8} CPU µs/request {medians[phase]:7.0f} (runs: "
              f"{', '.join(f'{c:.0f}' for c in cpu)})   requests/s {statistics.median(rate):6.0f}")
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--base", type=Path, help="another tree to compare with (interleaved runs)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(run_here(args)))
        return
    load = os.getloadavg()[0]
    if args.base is None:
        table("this", run_here(args))
    else:
        here: list[dict[str, dict[str, float]]] = []
        base: list[dict[str, dict[str, float]]] = []
        for i in range(args.runs):
            order = [(ROOT, here), (args.base.resolve(), base)]
            for tree, into in order if i % 2 == 0 else order[::-1]:
                into.append(run_tree(tree, args))
        new = table("this", here)
        old = table("base", base)
        for phase in PHASES:
            print(f"{phase:8} CPU per request this/base: {new[phase] / old[phase]:.2f}")
        total_new, total_old = sum(new.values()), sum(old.values())
        print(f"per pod (create + binding + status): {total_new:.0f} vs {total_old:.0f} µs of apiserver CPU, "
              f"ratio {total_new / total_old:.2f}")
    print(f"load average: {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end (2 cores, shared)")


if __name__ == "__main__":
    from stopping import stop_on_termination

    stop_on_termination()
    main()
