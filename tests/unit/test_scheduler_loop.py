"""The scheduler's informers, queue and cycle over the in-memory apiserver, driven one cycle at a time: the room a
preemption made stays the preemptor's, and namespace labels reach InterPodAffinity's ``namespaceSelector``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeclient.client import Clientset
from kubeclient.fake import FakeAPIServer
from scheduler.queue import QueuedPodInfo
from scheduler.scheduler import Scheduler
from support.builders import make_node, make_pod


class Clock:
    """The queue's clock, moved by hand, so no backoff ends while a test looks."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def until(check: Callable[[], Any], what: str, timeout: float = 5.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while not (value := check()):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)
    return value


@pytest.fixture
async def running() -> AsyncIterator[tuple[Scheduler, Clientset, Clock]]:
    client = Clientset(FakeAPIServer())
    scheduler = Scheduler(client)
    clock = Clock()
    scheduler.queue.clock = clock
    stop = asyncio.Event()
    tasks = await scheduler.start_informers(stop)
    try:
        yield scheduler, client, clock
    finally:
        stop.set()
        await scheduler.close(tasks)
        await client.close()


def pod(name: str, priority: int, node: str | None = None, ns: str = "d", **spec: Any) -> dict[str, Any]:
    builder = make_pod(name).namespace(ns).requests(cpu="1")
    if node:
        builder = builder.node(node)
    p = builder.build()
    p["spec"].update(priority=priority, **spec)
    return p


async def next_pod(scheduler: Scheduler) -> QueuedPodInfo:
    return await asyncio.wait_for(scheduler.queue.pop(), 5)


async def settle(scheduler: Scheduler) -> None:
    """Let the cycle's writes (status, events, deletions, binds) finish."""
    while scheduler._tasks:
        await asyncio.gather(*scheduler._tasks)


async def test_a_lower_priority_pod_does_not_take_the_room_a_preemption_made(
        running: tuple[Scheduler, Clientset, Clock]) -> None:
    scheduler, client, clock = running
    await client.nodes.create(make_node("n1", cpu="1"))
    await client.pods.create(pod("low", 0, node="n1"), "d")
    await client.pods.create(pod("high", 10), "d")
    info = await next_pod(scheduler)
    assert info.key == "d/high"
    attempt = scheduler.schedule_one(info)
    assert attempt is not None and attempt.node is None
    assert scheduler.queue.nominator.node_of("d/high") == "n1"  # held at once, before any write lands
    await settle(scheduler)
    high = await client.pods.get("high", "d")
    assert high["status"]["nominatedNodeName"] == "n1"
    await client.pods.delete("low", "d", grace_period_seconds=0)  # the victim's kubelet confirms
    await until(lambda: "d/low" not in scheduler.cache.pod_nodes, "the victim to leave the cache")

    # high waits out its backoff; a newer, less important pod comes first and must not take n1.
    await client.pods.create(pod("medium", 5), "d")
    info = await next_pod(scheduler)
    assert info.key == "d/medium"
    attempt = scheduler.schedule_one(info)
    assert attempt is not None and attempt.node is None
    assert attempt.message.startswith("0/1 nodes are available: 1 Insufficient cpu. preemption: ")
    await settle(scheduler)
    assert scheduler.queue.nominator.node_of("d/medium") is None

    clock.now += 60
    scheduler.queue.flush()
    info = await next_pod(scheduler)
    assert info.key == "d/high"
    attempt = scheduler.schedule_one(info)
    assert attempt is not None and attempt.node == "n1"
    assert scheduler.queue.nominator.node_of("d/high") is None  # assumed: its own pod holds the room now
    await settle(scheduler)
    assert (await client.pods.get("high", "d"))["spec"]["nodeName"] == "n1"
    assert not (await client.pods.get("medium", "d"))["spec"].get("nodeName")


async def test_namespace_labels_reach_the_namespace_selector_and_wake_the_pod(
        running: tuple[Scheduler, Clientset, Clock]) -> None:
    scheduler, client, _ = running
    await client.namespaces.create({"metadata": {"name": "team-a"}})
    for name in ("n1", "n2"):
        await client.nodes.create(make_node(name))
    db = make_pod("db").namespace("team-a").label(app="db").node("n2").build()
    await client.pods.create(db, "team-a")
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}}, "namespaceSelector": {"matchLabels": {"team": "a"}},
        "topologyKey": "kubernetes.io/hostname"}]}}
    await client.pods.create(pod("web", 0, affinity=affinity), "d")
    info = await next_pod(scheduler)
    attempt = scheduler.schedule_one(info)
    assert attempt is not None and attempt.node is None
    assert "didn't match pod affinity rules" in attempt.message
    assert scheduler.queue.where("d/web") == "unschedulable"

    await client.namespaces.patch("team-a", {"metadata": {"labels": {"team": "a"}}}, "merge")
    await until(lambda: scheduler.queue.where("d/web") in ("active", "backoff"), "the namespace event to wake web")
    assert scheduler.namespace_labels("team-a")["team"] == "a"
    scheduler.queue.clock.now += 60  # type: ignore[attr-defined]
    scheduler.queue.flush()
    attempt = scheduler.schedule_one(await next_pod(scheduler))
    assert attempt is not None and attempt.node == "n2"
