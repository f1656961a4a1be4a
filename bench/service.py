"""Requests/s through a Service's ClusterIP vs to its pod's IP directly, in the same run.

One cluster per kube-proxy mode (``kubelab.Cluster(pod_network="bridge", proxy_mode=...)``: linux kubelets on the
cluster network, kube-proxy's nftables rules, then its iptables rules) with one busybox ``httpd`` pod behind a
ClusterIP Service. From the host, aiohttp makes GETs with
``--concurrency`` in flight for ``--seconds`` to each target in turn (``--rounds`` times, alternating), each on a new
connection by default (``Connection: close``: every request is a new conntrack entry, so the ClusterIP's DNAT is
paid per request; ``--keepalive`` measures the steady state instead). The ratio ClusterIP / pod IP of each mode is
the figure (target ≥ 0.8), pod IP and ClusterIP measured alternately in the same cluster. Needs root, nft (and
iptables for its mode) and a host whose routes to 10.244.0.0/16 and 10.96.0.0/12 are free (no other kubelab
cluster with the bridge network running).

    python bench/service.py [--seconds 5] [--concurrency 20] [--rounds 2] [--keepalive] [--modes nftables,iptables]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kubelab  # noqa: E402
from kubelet.network import ClusterNetwork, default_name, usable  # noqa: E402

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
       "spec": {"containers": [{"name": "web", "image": "busybox", "command": [
           "sh", "-c", "mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www"]}]}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}


async def load(url: str, seconds: float, concurrency: int, keepalive: bool) -> tuple[int, int]:
    """(successful requests, failures) in ``seconds``."""
    done = failed = 0
    deadline = time.monotonic() + seconds
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=not keepalive)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def worker() -> None:
            nonlocal done, failed
            while time.monotonic() < deadline:
                try:
                    async with session.get(url, timeout=aiohttp.ClientTimeout(total=5)) as resp:
                        await resp.read()
                        done += resp.status == 200
                        failed += resp.status != 200
                except (TimeoutError, aiohttp.ClientError):
                    failed += 1
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done, failed


def wait(check: object, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--concurrency", type=int, default=20)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--keepalive", action="store_true")
    p.add_argument("--modes", default="nftables,iptables", help="kube-proxy modes, one cluster each")
    args = p.parse_args()
    why = usable()
    if why is not None:
        raise SystemExit(f"bench/service.py: no pod network here: {why}")
    results = {mode: measure(args, mode) for mode in args.modes.split(",")}
    for mode, (pod, cluster_ip) in results.items():
        print(f"service.py: {mode}, {'keep-alive' if args.keepalive else 'a connection per request'}, "
              f"concurrency {args.concurrency}: pod IP {pod:.0f} req/s, ClusterIP {cluster_ip:.0f} req/s, "
              f"ratio {cluster_ip / pod:.2f} (target >= 0.8)")


def measure(args: argparse.Namespace, mode: str) -> tuple[float, float]:
    """(pod IP, ClusterIP) requests/s, the best round of each, through kube-proxy's ``mode``."""
    print(f"kube-proxy --proxy-mode {mode}:", flush=True)
    with tempfile.TemporaryDirectory(prefix="kubelab-bench-") as tmp, \
            kubelab.Cluster(nodes=1, data_dir=Path(tmp) / "data", pod_network="bridge", proxy_mode=mode) as cluster:
        api = httpx.Client(base_url=cluster.api_url, timeout=10)
        api.post("/api/v1/namespaces/default/pods", json=POD).raise_for_status()
        cluster_ip = api.post("/api/v1/namespaces/default/services", json=SERVICE).json()["spec"]["clusterIP"]

        def pod_ip() -> str:
            return str(api.get("/api/v1/namespaces/default/pods/web").json().get("status", {}).get("podIP") or "")
        wait(lambda: pod_ip().startswith("10.244."), "the pod's IP")
        network = ClusterNetwork(default_name(Path(tmp) / "data"))
        if not network.host_reaches(pod_ip()):
            raise SystemExit("the host's routes to the pod network belong to another cluster: stop it first")
        targets = {"pod IP": f"http://{pod_ip()}:8080/", "ClusterIP": f"http://{cluster_ip}/"}
        for url in targets.values():
            wait(lambda url=url: _answers(url), f"{url} to answer")
        rates: dict[str, list[float]] = {name: [] for name in targets}
        for _ in range(args.rounds):
            for name, url in targets.items():
                ok, failed = asyncio.run(load(url, args.seconds, args.concurrency, args.keepalive))
                rates[name].append(ok / args.seconds)
                print(f"  {name:<10} {url:<28} {ok / args.seconds:8.0f} req/s  ({failed} failed)", flush=True)
        return max(rates["pod IP"]), max(rates["ClusterIP"])


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


if __name__ == "__main__":
    from stopping import stop_on_termination

    stop_on_termination()
    main()
