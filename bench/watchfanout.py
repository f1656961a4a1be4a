"""Watch fan-out: one write to ``--watchers`` pod watches through the apiserver, against raw etcd watches.

Set-up: a fresh etcd + apiserver (bench/api.py's), and ``--watchers`` watches opened before the first write,
each its own HTTP stream (aiohttp, one process), in two shapes:
- ``node``: as kubelets watch, ``fieldSelector=spec.nodeName=node-<i>`` — each pod write (a pod created bound to
  one node) reaches one watcher, and the apiserver must not pay for the other 999;
- ``all``: unfiltered — each write reaches every watcher.
Measured client-side with one monotonic clock: from just before a write's request to each watcher's receipt of
its event (a pod named after the write's number). Two loads per shape:
- ``single``: ``--writes`` writes one after another, each waited for at every watcher it should reach: p50/p99/max
  of the delivery latencies (for ``all``, the max of one write is its delivery to the last of the watchers);
- ``sustained``: ``--rate`` writes/s for ``--seconds`` (creates at concurrency 50, paced), then the delivered
  share and p50/p99 latency.
Baseline (same run, same etcd): the same watches as raw etcd watches (aetcd, one watch per watcher on a key
prefix — the node's, or the whole prefix — all multiplexed on one gRPC stream) and the same puts.
Target: p99 ≤ 100 ms from write to the last watcher.

    python bench/watchfanout.py [--watchers 1000] [--writes 20] [--rate 200] [--seconds 5] [--shapes node,all]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

import aetcd
import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


from api import cluster  # noqa: E402

TARGET_P99 = 0.100
HEADERS = {"Content-Type": "application/json"}
Write = Callable[[int], Awaitable[None]]  # write number i (its object named w<i>, on node i % watchers)


def pod(i: int, node: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"w{i}"},
                         "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}})


class Receipts:
    """When each watcher first saw each write; ``expect(i)`` the watchers write ``i`` should reach."""

    def __init__(self, watchers: int, shape: str) -> None:
        self.watchers = watchers
        self.shape = shape
        self.sent: dict[int, float] = {}
        self.seen: dict[int, list[float]] = {}
        self.waiters: dict[int, asyncio.Event] = {}

    def expect(self, i: int) -> int:
        return 1 if self.shape == "node" else self.watchers

    def note(self, i: int) -> None:
        times = self.seen.setdefault(i, [])
        times.append(time.monotonic())
        if len(times) >= self.expect(i) and i in self.waiters:
            self.waiters[i].set()

    def latencies(self) -> list[float]:
        return [t - self.sent[i] for i, times in self.seen.items() if i in self.sent for t in times]

    def delivered(self) -> float:
        want = sum(self.expect(i) for i in self.sent)
        return sum(len(self.seen.get(i, ())) for i in self.sent) / max(1, want)


def number(line: bytes) -> int | None:
    """The write number in an event line (``"name":"w<i>"``), without decoding the whole event."""
    at = line.find(b'"name":"w')
    if at < 0:
        return None
    end = line.find(b'"', at + 9)
    try:
        return int(line[at + 9:end])
    except ValueError:
        return None


async def single(write: Write, receipts: Receipts, writes: int, first: int) -> dict[str, float]:
    for i in range(first, first + writes):
        receipts.waiters[i] = asyncio.Event()
        receipts.sent[i] = time.monotonic()
        await write(i)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(receipts.waiters[i].wait(), 30)
    return summary(receipts)


async def sustained(write: Write, receipts: Receipts, rate: float, seconds: float, first: int) -> dict[str, float]:
    count = int(rate * seconds)
    began = time.monotonic()
    gate = asyncio.Semaphore(50)

    async def one(i: int) -> None:
        async with gate:
            delay = began + (i - first) / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            receipts.sent[i] = time.monotonic()
            await write(i)

    await asyncio.gather(*(one(i) for i in range(first, first + count)))
    achieved = count / (time.monotonic() - began)
    await asyncio.sleep(2.0)  # stragglers
    out = summary(receipts)
    out["writes/s"] = achieved
    return out


async def both_loads(write: Write, receipts: Receipts, args: argparse.Namespace,
                     readers: list[asyncio.Task[None]]) -> dict[str, dict[str, float]]:
    """The single writes, then the sustained rate; then the watch readers are stopped."""
    results = {"single": await single(write, receipts, args.writes, 0)}
    receipts.sent.clear()
    receipts.seen.clear()
    results["sustained"] = await sustained(write, receipts, args.rate, args.seconds, args.writes)
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    return results


def summary(receipts: Receipts) -> dict[str, float]:
    lat = sorted(receipts.latencies())
    if not lat:
        return {"p50": float("nan"), "p99": float("nan"), "max": float("nan"), "delivered": 0.0}
    return {"p50": statistics.median(lat), "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))], "max": lat[-1],
            "delivered": receipts.delivered()}


# --- through the apiserver ------------------------------------------------------------------------------------
async def apiserver_run(master: str, shape: str, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    ns = f"fanout-{uuid.uuid4().hex[:6]}"
    n = args.watchers
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with aiohttp.ClientSession(master, connector=connector, timeout=timeout) as session:
        async with session.post("/api/v1/namespaces", json={"metadata": {"name": ns}}) as resp:
            assert resp.status == 201, await resp.text()
        async with session.get(f"/api/v1/namespaces/{ns}/pods") as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        receipts = Receipts(n, shape)
        opened = 0
        all_open = asyncio.Event()

        async def watch(k: int) -> None:
            nonlocal opened
            params = {"watch": "true", "resourceVersion": rv}
            if shape == "node":
                params["fieldSelector"] = f"spec.nodeName=node-{k}"
            async with session.get(f"/api/v1/namespaces/{ns}/pods", params=params) as resp:
                assert resp.status == 200, await resp.text()
                opened += 1
                if opened == n:
                    all_open.set()
                async for line in resp.content:
                    i = number(line)
                    if i is not None:
                        receipts.note(i)

        tasks = [asyncio.create_task(watch(k)) for k in range(n)]
        await asyncio.wait_for(all_open.wait(), 120)

        async def write(i: int) -> None:
            async with session.post(f"/api/v1/namespaces/{ns}/pods", data=pod(i, f"node-{i % n}"),
                                    headers=HEADERS) as resp:
                assert resp.status == 201, await resp.text()

        results = await both_loads(write, receipts, args, tasks)
    return results


# --- raw etcd -------------------------------------------------------------------------------------------------
async def etcd_run(etcd_url: str, shape: str, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    parts = urlsplit(etcd_url)
    prefix = f"/fanout/{uuid.uuid4().hex[:6]}/"
    n = args.watchers
    receipts = Receipts(n, shape)
    async with aetcd.Client(host=parts.hostname or "127.0.0.1", port=parts.port or 2379) as client:
        watches = [await client.watch_prefix(f"{prefix}node-{k}/".encode() if shape == "node" else prefix.encode())
                   for k in range(n)]

        async def follow(watch: aetcd.rtypes.Watch) -> None:
            async for event in watch:
                i = number(b'"name":"' + event.kv.key.rsplit(b"/", 1)[1] + b'"')
                if i is not None:
                    receipts.note(i)

        tasks = [asyncio.create_task(follow(w)) for w in watches]

        async def write(i: int) -> None:
            await client.put(f"{prefix}node-{i % n}/w{i}".encode(), pod(i, f"node-{i % n}"))

        results = await both_loads(write, receipts, args, tasks)
        for w in watches:
            await w.cancel()
        await client.delete_prefix(prefix.encode())
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=20, help="single writes, each waited for")
    parser.add_argument("--rate", type=float, default=200.0, help="sustained writes per second")
    parser.add_argument("--seconds", type=float, default=5.0, help="sustained load's duration")
    parser.add_argument("--shapes", default="node,all")
    parser.add_argument("--master", help="use a running apiserver (also pass --etcd)")
    parser.add_argument("--etcd", help="the etcd that apiserver uses")
    args = parser.parse_args()
    os.environ.setdefault("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")
    with (tempfile.TemporaryDirectory(prefix="kubelab-bench-"),
          cluster(args.master, args.etcd) as (master, etcd_url)):
            assert etcd_url is not None
            print(f"{args.watchers} watchers; single: {args.writes} writes; sustained: {args.rate:.0f} writes/s "
                  f"for {args.seconds:.0f} s. Latency write -> watcher, ms")
            print(f"{'shape':<6} {'through':<10} {'load':<10} {'writes/s':>8} {'p50':>8} {'p99':>8} {'max':>8} "
                  f"{'delivered':>9}")
            for shape in args.shapes.split(","):
                for label, run in (("apiserver", lambda s=shape: apiserver_run(master, s, args)),
                                   ("etcd", lambda s=shape: etcd_run(etcd_url, s, args))):
                    results = asyncio.run(run())
                    for load, r in results.items():
                        rate = f"{r['writes/s']:.0f}" if "writes/s" in r else "-"
                        print(f"{shape:<6} {label:<10} {load:<10} {rate:>8} {r['p50'] * 1e3:>8.1f} "
                              f"{r['p99'] * 1e3:>8.1f} {r['max'] * 1e3:>8.1f} {r['delivered']:>9.2f}", flush=True)
            print(f"target: p99 <= {TARGET_P99 * 1e3:.0f} ms (single writes, the last watcher); "
                  f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores, shared)")


if __name__ == "__main__":
    main()
