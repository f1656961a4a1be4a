"""Watch fan-out: one write to ``--watchers`` pod watches through the apiserver, against raw etcd watches.

Set-up: a fresh etcd + apiserver (bench/api.py's), and ``--watchers`` watches opened before the first write,
each its own HTTP/1.1 connection, in two shapes:
- ``node``: as kubelets watch, ``fieldSelector=spec.nodeName=node-<i>`` — each pod write (a pod created bound to
  one node) reaches one watcher, and the apiserver must not pay for the other 999;
- ``all``: unfiltered — each write reaches every watcher.
Measured client-side with one monotonic clock (``time.monotonic()``, system-wide on Linux): from just before a
write's request (in the parent process) to a reader process's receipt of its event (a pod named after the write's
number). Two loads per shape:
- ``single``: ``--writes`` writes one after another, each waited for at every watcher it should reach: p50/p99/max
  of the delivery latencies (for ``all``, the max of one write is its delivery to the last of the watchers);
- ``sustained``: ``--rate`` writes/s for ``--seconds`` (creates at concurrency 50, paced), then the delivered
  share and p50/p99 latency.
How the streams are read, so that the figure is the server's, not its client's: ``--readers`` (4) processes each
read a share of the streams off raw sockets — one ``select`` loop, a minimal chunked-body parser, every event line
decoded with orjson — and send (write number, receipt time) to the parent, which writes (aiohttp for the
apiserver, aetcd for etcd) and tallies.
Baseline (same run, same etcd, same readers): the same watches as raw etcd watches through etcd's JSON gateway
(``POST /v3/watch``, one HTTP stream per watch, on the node's key prefix or the whole prefix), and the same puts.
Target: p99 ≤ 100 ms from write to the last watcher.

    python bench/watchfanout.py [--watchers 1000] [--writes 20] [--rate 200] [--seconds 5] [--shapes node,all]
                                [--through apiserver,etcd] [--readers 4]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import multiprocessing
import os
import selectors
import socket
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from multiprocessing.connection import Connection
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

    def note(self, i: int, at: float) -> None:
        times = self.seen.setdefault(i, [])
        times.append(at)
        if len(times) >= self.expect(i) and i in self.waiters:
            self.waiters[i].set()

    def latencies(self) -> list[float]:
        return [t - self.sent[i] for i, times in self.seen.items() if i in self.sent for t in times]

    def delivered(self) -> float:
        want = sum(self.expect(i) for i in self.sent)
        return sum(len(self.seen.get(i, ())) for i in self.sent) / max(1, want)


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
                     stop: Callable[[], Awaitable[None]]) -> dict[str, dict[str, float]]:
    """The single writes, then the sustained rate; then the watch readers are stopped."""
    results = {"single": await single(write, receipts, args.writes, 0)}
    receipts.sent.clear()
    receipts.seen.clear()
    results["sustained"] = await sustained(write, receipts, args.rate, args.seconds, args.writes)
    await stop()
    return results


def summary(receipts: Receipts) -> dict[str, float]:
    lat = sorted(receipts.latencies())
    if not lat:
        return {"p50": float("nan"), "p99": float("nan"), "max": float("nan"), "delivered": 0.0}
    return {"p50": statistics.median(lat), "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))], "max": lat[-1],
            "delivered": receipts.delivered()}


# --- the readers: processes that each read a share of the watch streams off raw sockets -------------------------
def reader(conn: Connection, host: str, port: int, requests: list[bytes], kind: str) -> None:
    """A reader process: sends ``requests`` (one watch each, its own connection), then reads every stream with one
    ``select`` loop and a minimal chunked-body parser; each event line is decoded (orjson) and its write number sent
    to the parent with the ``time.monotonic()`` of the read (system-wide, so comparable with the parent's)."""
    streams: dict[socket.socket, _Stream] = {}
    selector = selectors.DefaultSelector()
    for request in requests:
        sock = socket.create_connection((host, port))
        sock.sendall(request)
        sock.setblocking(False)
        streams[sock] = _Stream(kind)
        selector.register(sock, selectors.EVENT_READ)
    opened = 0
    while streams:
        if conn.poll():
            break  # the parent is done with this run
        notes: list[tuple[int, float]] = []
        for key, _ in selector.select(0.2):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            data = sock.recv(1 << 20)
            now = time.monotonic()
            stream = streams[sock]
            if not data:
                selector.unregister(sock)
                sock.close()
                del streams[sock]
                continue
            was_open = stream.open
            for i in stream.feed(data):
                notes.append((i, now))
            if stream.open and not was_open:
                opened += 1
                if opened == len(requests):
                    conn.send(("open", opened))
        if notes:
            conn.send(("seen", notes))
    for sock in streams:
        sock.close()


class _Stream:
    """One HTTP/1.1 watch response: its headers, then its chunked body split into lines, each line decoded."""

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "apiserver": WatchEvent lines; "etcd": grpc-gateway WatchResponse lines
        self.buf = bytearray()
        self.headers_done = False
        self.open = False
        self.line = bytearray()

    def feed(self, data: bytes) -> list[int]:
        self.buf += data
        if not self.headers_done:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return []
            status = bytes(self.buf[:self.buf.find(b"\r\n")])
            assert b" 200 " in status, bytes(self.buf[:end])
            del self.buf[:end + 4]
            self.headers_done = True
            self.open = self.kind == "apiserver"  # registered before its headers are sent; etcd: on "created"
        out: list[int] = []
        while True:
            eol = self.buf.find(b"\r\n")
            if eol < 0:
                return out
            size = int(self.buf[:eol].split(b";", 1)[0], 16)
            if len(self.buf) < eol + 2 + size + 2:
                return out
            self.line += self.buf[eol + 2:eol + 2 + size]
            del self.buf[:eol + 2 + size + 2]
            *lines, rest = self.line.split(b"\n")
            self.line = bytearray(rest)
            for line in lines:
                out.extend(self._numbers(line))

    def _numbers(self, line: bytes) -> list[int]:
        message = orjson.loads(line)
        if self.kind == "apiserver":
            names = [message["object"]["metadata"]["name"]]
        else:
            result = message.get("result", {})
            if result.get("created"):
                self.open = True
            names = [base64.b64decode(e["kv"]["key"]).rsplit(b"/", 1)[1].decode() for e in result.get("events", ())]
        return [int(name[1:]) for name in names if name.startswith("w") and name[1:].isdigit()]


async def read_all(host: str, port: int, requests: list[bytes], kind: str, processes: int,
                   receipts: Receipts) -> Callable[[], Awaitable[None]]:
    """Start ``processes`` readers with a share of ``requests`` each, wait until every watch is open; feed their
    receipts into ``receipts``. Returns the function that stops them."""
    ctx = multiprocessing.get_context("spawn")
    loop = asyncio.get_running_loop()
    opened = 0
    all_open = asyncio.Event()
    conns: list[Connection] = []
    procs = []
    for k in range(processes):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=reader, args=(child, host, port, requests[k::processes], kind), daemon=True)
        proc.start()
        child.close()
        conns.append(parent)
        procs.append(proc)

        def ready(conn: Connection = parent) -> None:
            nonlocal opened
            try:
                what, payload = conn.recv()
            except EOFError:
                loop.remove_reader(conn.fileno())
                return
            if what == "open":
                opened += payload
                if opened == len(requests):
                    all_open.set()
            else:
                for i, at in payload:
                    receipts.note(i, at)

        loop.add_reader(parent.fileno(), ready)
    await asyncio.wait_for(all_open.wait(), 180)

    async def stop() -> None:
        for conn in conns:
            loop.remove_reader(conn.fileno())
            conn.send("stop")
        for proc in procs:
            await asyncio.to_thread(proc.join, 10)
            if proc.is_alive():
                proc.kill()

    return stop


# --- through the apiserver ------------------------------------------------------------------------------------
async def apiserver_run(master: str, shape: str, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    ns = f"fanout-{uuid.uuid4().hex[:6]}"
    n = args.watchers
    parts = urlsplit(master)
    async with aiohttp.ClientSession(master) as session:
        async with session.post("/api/v1/namespaces", json={"metadata": {"name": ns}}) as resp:
            assert resp.status == 201, await resp.text()
        async with session.get(f"/api/v1/namespaces/{ns}/pods") as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        receipts = Receipts(n, shape)
        requests = []
        for k in range(n):
            query = f"watch=true&resourceVersion={rv}" + (f"&fieldSelector=spec.nodeName%3Dnode-{k}"
                                                          if shape == "node" else "")
            requests.append(f"GET /api/v1/namespaces/{ns}/pods?{query} HTTP/1.1\r\n"
                            f"Host: {parts.netloc}\r\nAccept: application/json\r\n\r\n".encode())
        stop = await read_all(parts.hostname or "127.0.0.1", parts.port or 80, requests, "apiserver",
                              args.readers, receipts)

        async def write(i: int) -> None:
            async with session.post(f"/api/v1/namespaces/{ns}/pods", data=pod(i, f"node-{i % n}"),
                                    headers=HEADERS) as resp:
                assert resp.status == 201, await resp.text()

        return await both_loads(write, receipts, args, stop)


# --- raw etcd -------------------------------------------------------------------------------------------------
async def etcd_run(etcd_url: str, shape: str, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    parts = urlsplit(etcd_url)
    prefix = f"/fanout/{uuid.uuid4().hex[:6]}/"
    n = args.watchers
    receipts = Receipts(n, shape)

    def b64(key: bytes) -> str:
        return base64.b64encode(key).decode()

    requests = []
    for k in range(n):
        key = f"{prefix}node-{k}/".encode() if shape == "node" else prefix.encode()
        body = orjson.dumps({"create_request": {"key": b64(key), "range_end": b64(key[:-1] + b"0")}})
        requests.append(f"POST /v3/watch HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    async with aetcd.Client(host=parts.hostname or "127.0.0.1", port=parts.port or 2379) as client:
        stop = await read_all(parts.hostname or "127.0.0.1", parts.port or 2379, requests, "etcd", args.readers,
                              receipts)

        async def write(i: int) -> None:
            await client.put(f"{prefix}node-{i % n}/w{i}".encode(), pod(i, f"node-{i % n}"))

        results = await both_loads(write, receipts, args, stop)
        await client.delete_prefix(prefix.encode())
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=20, help="single writes, each waited for")
    parser.add_argument("--rate", type=float, default=200.0, help="sustained writes per second")
    parser.add_argument("--seconds", type=float, default=5.0, help="sustained load's duration")
    parser.add_argument("--shapes", default="node,all")
    parser.add_argument("--through", default="apiserver,etcd", help="apiserver, etcd or both")
    parser.add_argument("--readers", type=int, default=4, help="reader processes sharing the watch streams")
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
                p99: dict[str, float] = {}
                for label, run in (("apiserver", lambda s=shape: apiserver_run(master, s, args)),
                                   ("etcd", lambda s=shape: etcd_run(etcd_url, s, args))):
                    if label not in args.through.split(","):
                        continue
                    results = asyncio.run(run())
                    for load, r in results.items():
                        rate = f"{r['writes/s']:.0f}" if "writes/s" in r else "-"
                        print(f"{shape:<6} {label:<10} {load:<10} {rate:>8} {r['p50'] * 1e3:>8.1f} "
                              f"{r['p99'] * 1e3:>8.1f} {r['max'] * 1e3:>8.1f} {r['delivered']:>9.2f}", flush=True)
                    p99[label] = results["single"]["p99"]
                if len(p99) == 2:
                    print(f"{shape:<6} single p99 apiserver/etcd (same run): {p99['apiserver'] / p99['etcd']:.2f}")
            print(f"target: p99 <= {TARGET_P99 * 1e3:.0f} ms (single writes, the last watcher); "
                  f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores, shared)")


if __name__ == "__main__":
    from stopping import stop_on_termination

    stop_on_termination()
    main()
