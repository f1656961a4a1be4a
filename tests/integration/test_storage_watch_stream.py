"""The etcd watch stream is read off the event loop: what arrives while the loop is busy comes as one batch.

A real etcd (the session apiserver's). The loop is kept busy by writing with a blocking gRPC client from the loop's
own thread, so no loop turn happens between the writes; the reader thread still takes every response in.
"""

from __future__ import annotations

import time
import uuid

import grpc
from aetcd import rpc

from apiserver.storage.etcd3 import EtcdStorage, grpc_target
from kubelab.etcd import EtcdServer


async def test_responses_that_arrive_while_the_loop_is_busy_come_as_one_batch_in_order(etcd: EtcdServer) -> None:
    storage = EtcdStorage([etcd.url])
    await storage.connect()
    prefix = f"/watch-stream-{uuid.uuid4().hex[:6]}/".encode()
    stream = storage.watch(prefix, await storage.current_revision() + 1)
    batches = stream.batches()
    channel = grpc.insecure_channel(grpc_target([etcd.url]))
    kv = rpc.KVStub(channel)
    try:
        kv.Put(rpc.PutRequest(key=prefix + b"first", value=b"0"))
        assert [c.kv.key for c in await batches.__anext__()] == [prefix + b"first"]

        keys = [prefix + f"k{i}".encode() for i in range(5)]
        for key in keys:  # five transactions, five etcd watch responses; the loop does not turn meanwhile
            kv.Put(rpc.PutRequest(key=key, value=b"1"))
        deadline = time.monotonic() + 10
        while len(stream._received) < len(keys) and time.monotonic() < deadline:
            time.sleep(0.01)  # still without a loop turn: only the reader thread takes them in
        assert len(stream._received) == len(keys)

        batch = await batches.__anext__()
        assert [c.kv.key for c in batch] == keys
        assert [c.kind for c in batch] == ["put"] * len(keys)
        assert [c.kv.mod_revision for c in batch] == sorted(c.kv.mod_revision for c in batch)
    finally:
        stream.cancel()
        await batches.aclose()
        channel.close()
        await storage.close()
