"""End to end at scale: N hollow nodes and a ReplicationController (or Deployment) of M pods until all Running.

The cluster is ``kubelab.Cluster(nodes=0, hollow_nodes=N)``: etcd, the apiserver, the controller-manager, the
scheduler and one hollow kubelet process simulating N nodes (each renewing its Lease as a real kubelet does).
Then one ReplicationController (``--kind deployment``: a Deployment) of M replicas is created, and a client
watch on the namespace's pods (opened before the create) notes when each pod is first seen, first seen bound
and first seen Running. Figures:
- seconds from the create to all M Running, and pods/s per stage (created, bound, Running: M / the seconds
  from the owner's create to the stage's last pod), with the stage's count every 10 s;
- each component's CPU seconds over the run and its peak RSS (``/proc``: utime + stime, ``VmHWM``), the
  apiserver's RSS per 1,000 pods and per 1,000 nodes (RSS after the nodes registered vs before, and after the
  pods vs before them);
- the apiserver's requests over the workload per verb and resource (per 1,000 pods, mean latency; from its
  ``apiserver_request_duration_seconds``), and of them the Event writes (creates + patches) per API group: what
  the recorders' client-go event correlation leaves of one event per pod;
- LIST of all pods from the watch cache (``resourceVersion=0``), JSON and protobuf, median of 5; ``kubectl get
  pods -A`` wall time (kubectl pages by 500), median of 3.
``--profile DIR``: ``py-spy record`` (when installed) attached to every component during the workload; its
collapsed stacks land in DIR, one file per component.

``--apiservers N``: N apiserver processes sharing the secure port, every component's (``kubelab up --apiservers``).

    python bench/scale.py [--nodes 1000] [--pods 10000] [--kind rc|deployment] [--timeout 900] [--profile DIR]
                          [--apiservers N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kubelab  # noqa: E402

KUBECTL = os.environ.get("KUBELAB_KUBECTL", "/usr/lib/google-cloud-sdk/bin/kubectl.1.32")
NS = "scale"
PROTOBUF = "application/vnd.kubernetes.protobuf"
TICKS = os.sysconf("SC_CLK_TCK")


def owner(kind: str, replicas: int) -> tuple[str, dict[str, Any]]:
    """The collection path and the body of the workload."""
    labels = {"app": "scale"}
    template = {"metadata": {"labels": labels},
                "spec": {"terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"],
                                         "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
    if kind == "rc":
        return (f"/api/v1/namespaces/{NS}/replicationcontrollers",
                {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "scale"},
                 "spec": {"replicas": replicas, "selector": labels, "template": template}})
    return (f"/apis/apps/v1/namespaces/{NS}/deployments",
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "scale"},
             "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template}})


# --- processes ------------------------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def rss_mb(pid: int, key: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def component_pids(cluster: kubelab.Cluster) -> dict[str, int]:
    """Each process of the cluster (etcd included) by its unit name."""
    return {record.name: record.pid for record in cluster.running.state.processes}


def cpu_all(pids: dict[str, int]) -> dict[str, float]:
    out = {}
    for name, pid in pids.items():
        try:
            out[name] = cpu_seconds(pid)
        except OSError:
            out[name] = float("nan")
    return out


# --- the run --------------------------------------------------------------------------------------------------
async def watch_pods(session: aiohttp.ClientSession, rv: str, want: int, seen: dict[str, float],
                     bound: dict[str, float], running: dict[str, float], ready: asyncio.Event) -> None:
    """Note when each pod is first seen, first seen bound and first seen Running, until ``want`` run."""
    params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true"}
    while len(running) < want:
        async with session.get(f"/api/v1/namespaces/{NS}/pods", params=params,
                               timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as resp:
            ready.set()
            async for line in resp.content:
                now = time.monotonic()
                event = orjson.loads(line)
                obj = event.get("object") or {}
                meta = obj.get("metadata") or {}
                params["resourceVersion"] = meta.get("resourceVersion", params["resourceVersion"])
                if event.get("type") in ("BOOKMARK", "ERROR", "DELETED"):
                    continue
                name = meta.get("name", "")
                seen.setdefault(name, now)
                if (obj.get("spec") or {}).get("nodeName"):
                    bound.setdefault(name, now)
                if (obj.get("status") or {}).get("phase") == "Running":
                    running.setdefault(name, now)
                    if len(running) >= want:
                        return


async def progress(began: float, stages: dict[str, dict[str, float]], done: asyncio.Event,
                   supervise: Callable[[], bool], every: float = 10.0) -> list[str]:
    """Each stage's count every ``every`` seconds; meanwhile components that exited are restarted (as `kubelab
    up` supervises them: a controller-manager that lost its leader lease exits) and the restart is shown."""
    rows = []
    while not done.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), every)
        restarted = supervise()
        row = f"  t={time.monotonic() - began:6.1f}s " + " ".join(f"{k}={len(v)}" for k, v in stages.items())
        row += " (a component exited and was restarted)" if restarted else ""
        print(row, flush=True)
        rows.append(row)
    return rows


async def wait_default_account(session: aiohttp.ClientSession, timeout: float = 60.0) -> None:
    """Until the namespace's ``default`` ServiceAccount exists (as kube's e2e framework waits): before it,
    ServiceAccount admission refuses the controller's pod creates and the controller backs off."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        async with session.get(f"/api/v1/namespaces/{NS}/serviceaccounts/default") as resp:
            if resp.status == 200:
                return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"no ServiceAccount {NS}/default after {timeout:.0f} s")


async def run_workload(api: str, kind: str, pods: int, timeout: float,
                       supervise: Callable[[], bool]) -> dict[str, Any]:
    async with aiohttp.ClientSession(api) as session:
        async with session.post("/api/v1/namespaces", json={"metadata": {"name": NS}}) as resp:
            assert resp.status == 201, await resp.text()
        await wait_default_account(session)
        async with session.get(f"/api/v1/namespaces/{NS}/pods") as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        seen: dict[str, float] = {}
        bound: dict[str, float] = {}
        running: dict[str, float] = {}
        ready = asyncio.Event()
        watcher = asyncio.create_task(watch_pods(session, rv, pods, seen, bound, running, ready))
        await ready.wait()
        path, body = owner(kind, pods)
        began = time.monotonic()
        async with session.post(path, data=orjson.dumps(body), headers={"Content-Type": "application/json"}) as resp:
            assert resp.status == 201, await resp.text()
        done = asyncio.Event()
        ticker = asyncio.create_task(progress(began, {"created": seen, "bound": bound, "running": running}, done,
                                              supervise))
        try:
            await asyncio.wait_for(watcher, timeout)
            finished = True
        except TimeoutError:
            finished = False
        done.set()
        await ticker
        return {"began": began, "finished": finished, "created": seen, "bound": bound, "running": running}


def time_list(api: str, accept: str, runs: int = 5) -> tuple[float, int, str]:
    """Median seconds of a LIST of all pods from the watch cache, the body's size and its media type."""
    times, size, served = [], 0, ""
    with httpx.Client(timeout=120) as client:
        for _ in range(runs):
            began = time.monotonic()
            resp = client.get(f"{api}/api/v1/pods", params={"resourceVersion": "0"}, headers={"Accept": accept})
            body = resp.raise_for_status().content
            times.append(time.monotonic() - began)
            size, served = len(body), resp.headers.get("content-type", "")
    return statistics.median(times), size, served


def time_kubectl(kubeconfig: Path, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        began = time.monotonic()
        subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "get", "pods", "-A", "--no-headers"],
                       check=True, stdout=subprocess.DEVNULL, timeout=300)
        times.append(time.monotonic() - began)
    return statistics.median(times)


Requests = dict[tuple[str, str], tuple[float, float]]


def apiserver_requests(api: str) -> Requests:
    """(verb, [group/]resource[/subresource]) -> (requests, seconds) from the apiserver's ``/metrics``
    (``apiserver_request_duration_seconds``' count and sum, WATCH and CONNECT left out: they are streams)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"{api}/metrics", timeout=60).raise_for_status().text
    out: Requests = {}
    for family in text_string_to_metric_families(text):
        if family.name != "apiserver_request_duration_seconds":
            continue
        for sample in family.samples:
            labels = sample.labels
            if labels.get("verb") in ("WATCH", "CONNECT") or not sample.name.endswith(("_count", "_sum")):
                continue
            group = f"{labels['group']}/" if labels.get("group") else ""
            key = (labels.get("verb", ""), group + labels.get("resource", "") +
                   (f"/{labels['subresource']}" if labels.get("subresource") else ""))
            count, seconds = out.get(key, (0.0, 0.0))
            out[key] = (count + sample.value, seconds) if sample.name.endswith("_count") else \
                (count, seconds + sample.value)
    return out


def print_requests(before: Requests, after: Requests, pods: int, top: int = 12) -> None:
    """The workload's requests per verb and resource: per 1,000 pods and their mean latency."""
    rows = []
    for key, (count, seconds) in after.items():
        count0, seconds0 = before.get(key, (0.0, 0.0))
        if count > count0:
            rows.append((count - count0, (seconds - seconds0) / (count - count0), key))
    rows.sort(reverse=True)
    total = sum(row[0] for row in rows)
    print(f"\napiserver requests during the workload: {total:.0f} ({total / pods * 1000:.0f} per 1,000 pods)")
    print(f"{'verb':<8} {'resource':<38} {'per 1k pods':>11} {'mean ms':>8}")
    for count, mean, (verb, resource) in rows[:top]:
        print(f"{verb:<8} {resource:<38} {count / pods * 1000:>11.0f} {mean * 1000:>8.1f}")


def print_event_writes(before: Requests, after: Requests, seconds: float) -> None:
    """Event creates and patches over the workload, per API group: the write load the recorders' correlation
    (client-go's EventCorrelator for core/v1; the scheduler's events.k8s.io series) leaves of one event per pod."""
    writes = {"core/v1": 0.0, "events.k8s.io": 0.0}
    for (verb, resource), (count, _) in after.items():
        if verb in ("POST", "PATCH") and resource in ("events", "events.k8s.io/events"):
            writes["core/v1" if resource == "events" else "events.k8s.io"] += count - before.get((verb, resource),
                                                                                                    (0.0, 0.0))[0]
    print(f"event writes (POST + PATCH) during the workload: {sum(writes.values()):.0f}, "
          f"{sum(writes.values()) / max(seconds, 1e-9):.1f}/s (core/v1 {writes['core/v1']:.0f}, "
          f"events.k8s.io {writes['events.k8s.io']:.0f})")


def stage_rate(began: float, times: dict[str, float], want: int) -> tuple[float, float]:
    """(seconds from the create to the stage's last pod, pods/s); inf seconds when not all got there."""
    if len(times) < want:
        return float("inf"), len(times) / max(1e-9, max(times.values(), default=began) - began)
    last = max(times.values()) - began
    return last, want / last


def start_profilers(pids: dict[str, int], out: Path) -> list[subprocess.Popen[bytes]]:
    """``py-spy record`` attached to every component (collapsed stacks, one file each); stopped by SIGINT."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        print("py-spy is not installed: no profiles (pip install py-spy)")
        return []
    return [subprocess.Popen([spy, "record", "--pid", str(pid), "--rate", "50", "--nonblocking", "--format", "raw",
                              "--output", str(out / f"{name}.txt")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for name, pid in pids.items() if not name.startswith("etcd")]


def stop_profilers(spies: list[subprocess.Popen[bytes]]) -> None:
    for spy in spies:
        spy.send_signal(signal.SIGINT)
    for spy in spies:
        try:
            spy.wait(30)
        except subprocess.TimeoutExpired:
            spy.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--kind", choices=("rc", "deployment"), default="rc")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for all pods Running")
    parser.add_argument("--profile", type=Path, help="py-spy every component; collapsed stacks in DIR")
    parser.add_argument("--keep", type=Path, help="the cluster's data dir (kept: logs of every component)")
    parser.add_argument("--apiservers", type=int, default=1, help="apiserver processes sharing the secure port")
    parser.add_argument("--no-fork-server", action="store_true", help="components in fresh interpreters, no zygote")
    args = parser.parse_args()
    os.environ.setdefault("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    cluster = kubelab.Cluster(nodes=0, hollow_nodes=args.nodes, data_dir=args.keep, timeout=600,
                              apiservers=args.apiservers, fork_server=not args.no_fork_server)
    print(f"starting: {args.nodes} hollow nodes ...", flush=True)
    began = time.monotonic()
    # The apiserver's RSS before the nodes: the cluster without the hollow kubelet first would need a second
    # start, so the RSS per 1,000 nodes is measured against an apiserver's RSS just after it is healthy.
    cluster.start()
    try:
        print(f"  {args.nodes} nodes Ready after {time.monotonic() - began:.1f}s", flush=True)
        pids = component_pids(cluster)
        api = cluster.api_url
        apiserver = pids["apiserver"]
        rss_nodes = rss_mb(apiserver)
        spies = start_profilers(pids, args.profile) if args.profile else []
        requests_before = apiserver_requests(api)
        cpu_before = cpu_all(pids)
        result = asyncio.run(run_workload(api, args.kind, args.pods, args.timeout,
                                              cluster.running.supervise_once))
        cpu_after = cpu_all(pids)
        requests_after = apiserver_requests(api)
        stop_profilers(spies)
        rss_pods = rss_mb(apiserver)
        t0 = result["began"]
        total, _ = stage_rate(t0, result["running"], args.pods)
        print(f"\n{args.nodes} hollow nodes, {args.kind} of {args.pods} pods: "
              + (f"all Running after {total:.1f} s" if result["finished"] else
                 f"NOT all Running within {args.timeout:.0f} s ({len(result['running'])})"))
        print(f"{'stage':<10} {'last pod s':>10} {'pods/s':>8}")
        for stage in ("created", "bound", "running"):
            last, rate = stage_rate(t0, result[stage], args.pods)
            print(f"{stage:<10} {last:>10.1f} {rate:>8.0f}")
        print_event_writes(requests_before, requests_after, total)
        print(f"\n{'component':<20} {'CPU s':>7} {'CPU s/1k pods':>13} {'peak RSS MB':>11}")
        for name, pid in pids.items():
            used = cpu_after[name] - cpu_before[name]
            try:
                peak = rss_mb(pid, "VmHWM")
            except OSError:
                peak = float("nan")
            print(f"{name:<20} {used:>7.1f} {used / args.pods * 1000:>13.2f} {peak:>11.0f}")
        print_requests(requests_before, requests_after, args.pods)
        print(f"apiserver RSS: {rss_nodes:.0f} MB with {args.nodes} nodes, {rss_pods:.0f} MB with the pods "
              f"({(rss_pods - rss_nodes) / args.pods * 1000:.1f} MB per 1,000 pods)")
        for accept in ("application/json", f"{PROTOBUF}, application/json"):
            seconds, size, served = time_list(api, accept)
            print(f"LIST all pods (Accept: {accept}; served {served}; resourceVersion=0, median of 5): "
                  f"{seconds:.3f} s, {size / 1e6:.1f} MB")
        print(f"kubectl get pods -A (median of 3): {time_kubectl(cluster.kubeconfig):.2f} s")
        print(f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores, shared)")
    finally:
        cluster.stop()
    if args.profile:
        print(f"profiles: {sorted(p.name for p in args.profile.iterdir())}")


if __name__ == "__main__":
    from stopping import stop_on_termination

    stop_on_termination()
    main()
