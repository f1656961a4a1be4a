"""Pod creates per second through the apiserver, against raw etcd writes of the same bytes (the baselines).

All run from the same process against the same etcd, at concurrency 1 and 50:
- baseline "put": ``aetcd`` ``put`` of the pod's JSON bytes to fresh keys (what storage alone costs);
- baseline "txn": the conditional create the apiserver itself must do (a transaction on ``create_revision == 0``,
  as kube-apiserver does), through the same aetcd client — etcd serves these several times slower than puts;
- apiserver: ``POST /api/v1/namespaces/<ns>/pods`` over HTTP with aiohttp (decode, default, validate, etcd
  transaction, watch cache fan-out, encode).
Each figure is the median of ``--repeat`` runs; ratios are apiserver / baseline. Target: >= 0.5 of raw puts at
concurrency 50. The apiserver authorizes as ``kubelab up``'s does (``--authorization-mode Node,RBAC``); the plain
port's user is ``system:masters``, so ``--as USER`` measures the whole RBAC path instead: each create impersonates
USER, whom a RoleBinding in the namespace grants ``create`` on pods.

    python bench/api.py [--count 2000] [--repeat 3] [--master URL --etcd URL] [--authorization-mode MODES] [--as USER]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import aetcd
import aiohttp
import httpx
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kubelab.etcd import EtcdServer, free_port  # noqa: E402


def pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"],
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
    }


async def run_concurrently(count: int, concurrency: int, op) -> float:
    """Run ``op(i)`` for i in range(count) with ``concurrency`` in flight; returns ops/second."""
    next_i = 0

    async def worker() -> None:
        nonlocal next_i
        while next_i < count:
            i = next_i
            next_i += 1
            await op(i)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return count / (time.perf_counter() - start)


async def raw_etcd(etcd_url: str, count: int, concurrency: int) -> float:
    parts = urlsplit(etcd_url)
    body = orjson.dumps(pod("x"))
    prefix = f"/bench-raw/{uuid.uuid4().hex}/".encode()
    async with aetcd.Client(host=parts.hostname or "127.0.0.1", port=parts.port or 2379) as client:
        async def put(i: int) -> None:
            await client.put(prefix + str(i).encode(), body)

        rate = await run_concurrently(count, concurrency, put)
        await client.delete_prefix(prefix)
    return rate


async def raw_etcd_txn(etcd_url: str, count: int, concurrency: int) -> float:
    parts = urlsplit(etcd_url)
    body = orjson.dumps(pod("x"))
    prefix = f"/bench-txn/{uuid.uuid4().hex}/".encode()
    async with aetcd.Client(host=parts.hostname or "127.0.0.1", port=parts.port or 2379) as client:
        async def create(i: int) -> None:
            key = prefix + str(i).encode()
            ok, _ = await client.transaction(compare=[client.transactions.create(key) == 0],
                                             success=[client.transactions.put(key, body)], failure=[])
            assert ok

        rate = await run_concurrently(count, concurrency, create)
        await client.delete_prefix(prefix)
    return rate


async def through_apiserver(master: str, count: int, concurrency: int) -> float:
    return await creates(master, "/api/v1/namespaces/{ns}/pods", pod, count, concurrency)


IMPERSONATE: dict[str, str] = {}  # --as: the Impersonate-User header every create carries


async def grant_creates(session: aiohttp.ClientSession, ns: str, user: str) -> None:
    """A Role allowing pod creates in ``ns`` and its RoleBinding to ``user`` (for ``--as``)."""
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}"
    role = {"metadata": {"name": "bench"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}]}
    binding = {"metadata": {"name": "bench"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                          "name": "bench"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    for path, body in ((f"{rbac}/roles", role), (f"{rbac}/rolebindings", binding)):
        async with session.post(path, json=body) as resp:
            assert resp.status == 201, await resp.text()


async def creates(master: str, path: str, make: Callable[[str], dict], count: int, concurrency: int) -> float:
    """``count`` POSTs of ``make(name)`` to ``path`` (``{ns}``: a fresh namespace) with ``concurrency`` in flight;
    returns creates/second."""
    ns = f"bench-{uuid.uuid4().hex[:8]}"
    connector = aiohttp.TCPConnector(limit=concurrency + 5)
    async with aiohttp.ClientSession(master, connector=connector) as session:
        async with session.post("/api/v1/namespaces", json={"metadata": {"name": ns}}) as resp:
            assert resp.status == 201, await resp.text()
        if IMPERSONATE:
            await grant_creates(session, ns, IMPERSONATE["Impersonate-User"])
        bodies = [orjson.dumps(make(f"p{i}")) for i in range(count)]
        headers = {"Content-Type": "application/json", **IMPERSONATE}
        url = path.format(ns=ns)

        async def create(i: int) -> None:
            async with session.post(url, data=bodies[i], headers=headers) as resp:
                if resp.status != 201:
                    raise RuntimeError(f"create failed: {resp.status} {await resp.text()}")
                await resp.read()

        return await run_concurrently(count, concurrency, create)


def start_cluster(tmp: Path, authorization_mode: str) -> tuple[EtcdServer, subprocess.Popen[bytes], str]:
    etcd = EtcdServer(tmp / "etcd", log_path=tmp / "etcd.log")
    etcd.start()
    port = free_port()
    log = open(tmp / "apiserver.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "apiserver", "--etcd-servers", etcd.url, "--port", str(port),
                             "--authorization-mode", authorization_mode, "-v", "0"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    master = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{master}/healthz", timeout=1).status_code == 200:
                return etcd, proc, master
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("apiserver did not become healthy")


@contextmanager
def cluster(master: str | None, etcd_url: str | None = None,
            authorization_mode: str = "Node,RBAC") -> Iterator[tuple[str, str | None]]:
    """``master`` (and its etcd) when given, else an etcd and an apiserver of the benchmark's own, stopped after."""
    if master:
        yield master, etcd_url
        return
    with tempfile.TemporaryDirectory(prefix="kubelab-bench-") as tmp:
        etcd, proc, url = start_cluster(Path(tmp), authorization_mode)
        try:
            yield url, etcd.url
        finally:
            proc.terminate()
            proc.wait(10)
            etcd.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=2000, help="creates per run at concurrency 50")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", help="use a running apiserver (also pass --etcd)")
    parser.add_argument("--etcd", help="the etcd that apiserver uses")
    parser.add_argument("--authorization-mode", default="Node,RBAC", help="the benchmark's own apiserver's")
    parser.add_argument("--as", dest="user", help="impersonate USER, granted pod creates by RBAC")
    args = parser.parse_args()
    if args.user:
        IMPERSONATE["Impersonate-User"] = args.user

    assert args.etcd or not args.master, "--master needs --etcd"
    with cluster(args.master, args.etcd, args.authorization_mode) as (master, etcd_url):
        assert etcd_url is not None
        print(f"{'concurrency':>11} {'etcd puts/s':>12} {'etcd txn/s':>11} {'apiserver creates/s':>20} "
              f"{'vs put':>7} {'vs txn':>7}")
        for concurrency, count in ((1, max(args.count // 4, 100)), (50, args.count)):
            put = statistics.median(asyncio.run(raw_etcd(etcd_url, count, concurrency))
                                    for _ in range(args.repeat))
            txn = statistics.median(asyncio.run(raw_etcd_txn(etcd_url, count, concurrency))
                                    for _ in range(args.repeat))
            api = statistics.median(asyncio.run(through_apiserver(master, count, concurrency))
                                    for _ in range(args.repeat))
            print(f"{concurrency:>11} {put:>12.0f} {txn:>11.0f} {api:>20.0f} {api / put:>7.2f} {api / txn:>7.2f}")
        print(f"(median of {args.repeat} runs; {args.count} creates per run at concurrency 50)")

if __name__ == "__main__":
    main()
