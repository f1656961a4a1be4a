"""controllers.garbagecollector over the FakeAPIServer (which, like etcd, does no collection itself): dangling
owners, orphaning, and foreground deletion."""

from __future__ import annotations

import asyncio
from typing import Any

from controllers.garbagecollector import GarbageCollector
from kubeclient import PODS, REPLICA_SETS, Clientset
from support.fakecontrollers import running, until


async def owner_and_pods(cs: Clientset, finalizers: list[str] | None = None, block: bool = True) -> dict[str, Any]:
    owner = await cs.replica_sets.create({"metadata": {"name": "rs", "namespace": "default",
                                                       "finalizers": finalizers or []}, "spec": {}})
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": owner["metadata"]["uid"],
           "controller": True, "blockOwnerDeletion": block}
    for name in ("a", "b"):
        await cs.pods.create({"metadata": {"name": name, "namespace": "default", "ownerReferences": [ref]},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}})
    return owner


async def test_dangling_owner_deletes_dependents_but_not_those_with_a_live_owner() -> None:
    async with running(lambda cs, f: GarbageCollector(cs, f, workers=2)) as (fake, cs):
        await owner_and_pods(cs)
        other = await cs.replica_sets.create({"metadata": {"name": "other", "namespace": "default"}, "spec": {}})
        await cs.pods.patch("b", {"metadata": {"ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "other", "uid": other["metadata"]["uid"]}]}},
            "strategic", "default")
        await asyncio.sleep(0.1)
        assert len(fake.objects(PODS)) == 2  # owners alive: nothing happens
        await cs.replica_sets.delete("rs", "default")
        await until(lambda: [p["metadata"]["name"] for p in fake.objects(PODS)] == ["b"])
        await until(lambda: [r["name"] for r in fake.objects(PODS)[0]["metadata"]["ownerReferences"]] == ["other"])


async def test_orphan_finalizer_releases_dependents() -> None:
    async with running(lambda cs, f: GarbageCollector(cs, f, workers=2)) as (fake, cs):
        await owner_and_pods(cs, finalizers=["orphan"])
        await cs.replica_sets.delete("rs", "default")  # what propagationPolicy=Orphan leaves behind
        await until(lambda: not fake.objects(REPLICA_SETS))
        assert len(fake.objects(PODS)) == 2
        assert all(not p["metadata"].get("ownerReferences") for p in fake.objects(PODS))


async def test_foreground_removes_finalizer_after_blocking_dependents() -> None:
    async with running(lambda cs, f: GarbageCollector(cs, f, workers=2)) as (fake, cs):
        await owner_and_pods(cs, finalizers=["foregroundDeletion"])
        await cs.replica_sets.delete("rs", "default")  # what propagationPolicy=Foreground leaves behind
        await until(lambda: not fake.objects(PODS))
        await until(lambda: not fake.objects(REPLICA_SETS))
