"""A watch stream's record of a delivery (``/debug/watches/deliveries``, what ``kubelab trace`` times steps 5, 8 and
11 by) is taken before the chunk is written: on loopback the client wakes inside the write, and a kubelet that
acted on the pod before the write returned showed its Pulling event ahead of its own delivery (a negative hop)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from types import SimpleNamespace
from typing import Any

import orjson

from apimachinery.meta import parse_time
from apiserver.handlers import watch
from apiserver.handlers.watches import WatchStream
from apiserver.storage.cacher import CachedObject, CacheEvent, CacheWatcher
from apiserver.storage.deliveries import RING


class Everything:
    def matches(self, co: CachedObject) -> bool:
        return True


class SlowConnection:
    """A connection whose write keeps the loop as a preempted ``send`` on a busy machine does; the peer has the
    bytes from the moment the write began (``began``)."""

    def __init__(self) -> None:
        self.began: list[float] = []

    def writable(self) -> bool:
        return True

    def write(self, chunks: bytes) -> None:
        self.began.append(time.time())
        time.sleep(0.02)


class Encoder:
    table = False

    def sent(self, size: int) -> None:
        pass


async def test_a_delivery_is_timed_no_later_than_the_write_that_hands_it_to_the_client() -> None:
    pod = {"metadata": {"name": "timed", "namespace": "deliveries", "resourceVersion": "41"}}
    co = CachedObject("deliveries/timed", None, orjson.dumps(pod), 41, {}, {})
    watcher = CacheWatcher(Everything(), 10, lambda co, rv: co)  # type: ignore[arg-type]
    connection = SlowConnection()
    stream = WatchStream("system:node:n1", "kubelet/v1.32.0", "pods", "", "", "", watcher,
                         SimpleNamespace(rv=40))  # type: ignore[arg-type]

    async def write(data: bytes) -> None:
        raise AssertionError("the event goes straight to the connection")

    store: Any = SimpleNamespace(cache=SimpleNamespace(rv=40))
    task = asyncio.create_task(watch._stream(watcher, store, Encoder(), 5.0, False, False, True,  # type: ignore
                                             stream, time.time(), write, connection))  # type: ignore[arg-type]
    while watcher.direct is None:  # the stream parks on its empty queue
        await asyncio.sleep(0)
    watcher.offer(CacheEvent("ADDED", co, None, 41))
    while not connection.began:
        await asyncio.sleep(0.001)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    (delivery,) = [d for d in RING.document(namespace="deliveries", name="timed")["items"]
                   if d["watcher"]["userAgent"] == "kubelet/v1.32.0"]
    assert parse_time(delivery["time"]).timestamp() <= connection.began[0], (delivery["time"], connection.began)
