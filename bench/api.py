"""Pod creates per second through the apiserver, against raw etcd writes of the same bytes (the baselines).

All run from the same process against the same etcd, at concurrency 1 and 50:
- baseline "put": ``aetcd`` ``put`` of the pod's JSON bytes to fresh keys (what storage alone costs);
- baseline "txn": the conditional create the apiserver itself must do (a transaction on ``create_revision == 0``,
  as kube-apiserver does), through the same aetcd client — etcd serves these several times slower than puts;
- apiserver: ``POST /api/v1/namespaces/<ns>/pods`` over HTTP with aiohttp (decode, default, validate, etcd
  transaction, watch cache fan-out, encode);
- with ``--https``, also over HTTPS on the secure port with the admin client certificate (TLS, x509
  authentication, and whatever authorization the apiserver runs), and its ratio to the plain port in the same run
  (target: >= 0.9).
With ``--apiservers N`` (N > 1), also N apiserver processes on the same etcd sharing the plain port
(``--reuse-port``, as ``kubelab up --apiservers N`` shares the secure port) against one, at concurrency 50 in the
same run: per repeat the transaction baseline, the one apiserver, then N (the others started for their turn and
stopped after it, so the one-apiserver figure carries no idle watch caches), each creates/s and its ratio to the
transaction rate — the issue's figure. Each figure is the median of ``--repeat`` runs; ratios are apiserver /
baseline. Target: >= 0.5 of raw puts at
concurrency 50. The apiserver authorizes as ``kubelab up``'s does (``--authorization-mode Node,RBAC``); the plain
port's user is ``system:masters``, so ``--as USER`` measures the whole RBAC path instead: each create impersonates
USER, whom a RoleBinding in the namespace grants ``create`` on pods.

    python bench/api.py [--count 2000] [--repeat 3] [--https] [--master URL --etcd URL [--kubeconfig FILE]]
                        [--authorization-mode MODES] [--as USER] [--apiservers N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
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

from kubeclient.config import load_kubeconfig  # noqa: E402
from kubelab.clusterpki import ADMIN, make_cluster_pki  # noqa: E402
from kubelab.etcd import EtcdServer, free_port  # noqa: E402
from kubelab.kubeconfig import write_kubeconfig  # noqa: E402
from kubelab.net import listening_sockets  # noqa: E402


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


async def through_apiserver(master: str, count: int, concurrency: int, tls: ssl.SSLContext | None = None) -> float:
    return await creates(master, "/api/v1/namespaces/{ns}/pods", pod, count, concurrency, tls)


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


async def creates(master: str, path: str, make: Callable[[str], dict], count: int, concurrency: int,
                  tls: ssl.SSLContext | None = None) -> float:
    """``count`` POSTs of ``make(name)`` to ``path`` (``{ns}``: a fresh namespace) with ``concurrency`` in flight;
    returns creates/second. ``tls``: the client's TLS context for an ``https`` master (CA and client certificate)."""
    ns = f"bench-{uuid.uuid4().hex[:8]}"
    connector = aiohttp.TCPConnector(limit=concurrency + 5, ssl=tls if tls is not None else True)
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


APISERVER_ARGV: list[str] = []  # the own apiserver's command line: more processes of it share its ports
APISERVER_PIDS: list[int] = []  # the own apiserver processes running now
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """user + system CPU seconds the processes have used (``/proc/<pid>/stat``)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICKS


def start_cluster(tmp: Path, https: bool = False, authorization_mode: str = "Node,RBAC",
                  reuse_port: bool = False) -> tuple[EtcdServer, subprocess.Popen[bytes], str]:
    """An etcd and an apiserver; ``https``: the apiserver also serves HTTPS, described by ``tmp/kubeconfig``. Its
    pods need no service account (no controller-manager makes ``default``): ServiceAccount admission is off, as in
    kube's integration benchmarks. ``reuse_port``: its ports bound with SO_REUSEPORT, for ``more_apiservers``."""
    etcd = EtcdServer(tmp / "etcd", log_path=tmp / "etcd.log")
    etcd.start()
    port = free_port()
    secure: list[str] = []
    if https:
        pki = make_cluster_pki(tmp / "pki")
        secure_port = free_port()
        secure = ["--secure-port", str(secure_port), *pki.apiserver_flags()]
        write_kubeconfig(tmp / "kubeconfig", f"https://127.0.0.1:{secure_port}", ca=pki.ca_cert,
                         client=pki.client(ADMIN))
    log = open(tmp / "apiserver.log", "wb")  # noqa: SIM115 (the apiserver's stdout for as long as it runs)
    APISERVER_ARGV[:] = [sys.executable, "-m", "apiserver", "--etcd-servers", etcd.url, "--port", str(port),
                         *secure, "--authorization-mode", authorization_mode,
                         "--disable-admission-plugins", "ServiceAccount", "-v", "0",
                         *(["--reuse-port"] if reuse_port else [])]
    proc = subprocess.Popen(APISERVER_ARGV, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    APISERVER_PIDS[:] = [proc.pid]
    master = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # a loaded machine (load 15+) starts the apiserver in well over 30 s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{master}/healthz", timeout=1).status_code == 200:
                return etcd, proc, master
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()  # callers only stop what they were given: leave nothing running behind the error
    proc.wait()
    etcd.stop()
    raise RuntimeError(f"apiserver did not become healthy; see {tmp / 'apiserver.log'}")


@contextmanager
def more_apiservers(master: str, count: int) -> Iterator[None]:
    """``count`` more processes of the own apiserver, serving its port beside it (SO_REUSEPORT) once every one
    listens; stopped after."""
    port = urlsplit(master).port or 80
    want = len(listening_sockets(port)) + count
    procs = [subprocess.Popen(APISERVER_ARGV, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(count)]
    APISERVER_PIDS.extend(p.pid for p in procs)
    try:
        deadline = time.monotonic() + 60
        while len(listening_sockets(port)) < want:  # uvicorn listens once the app has started
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError("the other apiservers did not start")
            time.sleep(0.1)
        yield
    finally:
        del APISERVER_PIDS[-count:]
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)


@contextmanager
def cluster(master: str | None, etcd_url: str | None = None, https: bool = False,
            kubeconfig: str | None = None, authorization_mode: str = "Node,RBAC",
            reuse_port: bool = False) -> Iterator[tuple[str, str | None]]:
    """``master`` (and its etcd) when given, else an etcd and an apiserver of the benchmark's own, stopped after.
    ``https``: an own apiserver serves HTTPS too; its kubeconfig is written to ``kubeconfig``."""
    if master:
        yield master, etcd_url
        return
    with tempfile.TemporaryDirectory(prefix="kubelab-bench-") as tmp:
        etcd, proc, url = start_cluster(Path(tmp), https, authorization_mode, reuse_port)
        if https and kubeconfig:
            Path(kubeconfig).write_bytes((Path(tmp) / "kubeconfig").read_bytes())
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
    parser.add_argument("--https", action="store_true",
                        help="also create over HTTPS with a client certificate (an own apiserver, or the server and "
                             "credentials of --kubeconfig), compared with the plain port in the same run")
    parser.add_argument("--kubeconfig", help="with --master and --https: the running apiserver's HTTPS kubeconfig")
    parser.add_argument("--authorization-mode", default="Node,RBAC", help="the benchmark's own apiserver's")
    parser.add_argument("--as", dest="user", help="impersonate USER, granted pod creates by RBAC")
    parser.add_argument("--apiservers", type=int, default=1, metavar="N",
                        help="also compare N apiserver processes sharing the port with one (an own apiserver only)")
    args = parser.parse_args()
    if args.user:
        IMPERSONATE["Impersonate-User"] = args.user

    assert args.etcd or not args.master, "--master needs --etcd"
    assert not (args.master and args.https) or args.kubeconfig, "--master --https needs --kubeconfig"
    assert args.apiservers == 1 or not args.master, "--apiservers starts the apiservers itself: no --master"
    with tempfile.TemporaryDirectory(prefix="kubelab-bench-") as scratch:
        kubeconfig = args.kubeconfig if args.master else str(Path(scratch) / "kubeconfig")
        with cluster(args.master, args.etcd, args.https, kubeconfig, args.authorization_mode,
                     args.apiservers > 1) as (master, etcd_url):
            assert etcd_url is not None
            run(args, master, etcd_url, kubeconfig if args.https else None)
            if args.apiservers > 1:
                run_apiservers(args, master, etcd_url)


def run(args: argparse.Namespace, master: str, etcd_url: str, kubeconfig: str | None) -> None:
    """One table row per concurrency: the baselines, the plain port and (with a kubeconfig) HTTPS."""
    secure = load_kubeconfig(kubeconfig) if kubeconfig else None
    tls = secure.ssl_context() if secure else None
    print(f"{'concurrency':>11} {'etcd puts/s':>12} {'etcd txn/s':>11} {'apiserver creates/s':>20} "
          f"{'vs put':>7} {'vs txn':>7}" + (f" {'https creates/s':>16} {'https/plain':>11}" if secure else ""))
    for concurrency, count in ((1, max(args.count // 4, 100)), (50, args.count)):
        put = statistics.median(asyncio.run(raw_etcd(etcd_url, count, concurrency))
                                for _ in range(args.repeat))
        txn = statistics.median(asyncio.run(raw_etcd_txn(etcd_url, count, concurrency))
                                for _ in range(args.repeat))
        api = statistics.median(asyncio.run(through_apiserver(master, count, concurrency))
                                for _ in range(args.repeat))
        line = f"{concurrency:>11} {put:>12.0f} {txn:>11.0f} {api:>20.0f} {api / put:>7.2f} {api / txn:>7.2f}"
        if secure:
            rate = statistics.median(asyncio.run(through_apiserver(secure.host, count, concurrency, tls))
                                     for _ in range(args.repeat))
            line += f" {rate:>16.0f} {rate / api:>11.2f}"
        print(line)
    print(f"(median of {args.repeat} runs; {args.count} creates per run at concurrency 50)")

def run_apiservers(args: argparse.Namespace, master: str, etcd_url: str, concurrency: int = 50) -> None:
    """Creates/s through one apiserver and through ``--apiservers`` sharing its port, per repeat interleaved with
    the transaction baseline; medians, each one's ratio to the transaction rate, and the apiservers' CPU
    milliseconds per create (all processes together: what a machine with a core per apiserver would need)."""
    many = f"{args.apiservers} apiservers"
    rates: dict[str, list[float]] = {"etcd txn": [], "1 apiserver": [], many: []}
    cpu: dict[str, list[float]] = {"1 apiserver": [], many: []}

    def measure(name: str) -> None:
        before = cpu_seconds(APISERVER_PIDS)
        rates[name].append(asyncio.run(through_apiserver(master, args.count, concurrency)))
        cpu[name].append((cpu_seconds(APISERVER_PIDS) - before) / args.count * 1000)

    for _ in range(args.repeat):
        rates["etcd txn"].append(asyncio.run(raw_etcd_txn(etcd_url, args.count, concurrency)))
        measure("1 apiserver")
        with more_apiservers(master, args.apiservers - 1):
            measure(many)
    txn = statistics.median(rates["etcd txn"])
    one = statistics.median(rates["1 apiserver"])
    print(f"\nconcurrency {concurrency}, one port (SO_REUSEPORT), median of {args.repeat} interleaved runs:")
    print(f"{'':>14} {'creates/s':>10} {'vs txn':>7} {'vs 1':>6} {'CPU ms/create':>14}   runs")
    for name, values in rates.items():
        median = statistics.median(values)
        per_create = f"{statistics.median(cpu[name]):.2f}" if name in cpu else "-"
        print(f"{name:>14} {median:>10.0f} {median / txn:>7.2f} {median / one:>6.2f} {per_create:>14}   "
              + ", ".join(f"{v:.0f}" for v in values))


if __name__ == "__main__":
    from stopping import stop_on_termination

    stop_on_termination()
    main()
