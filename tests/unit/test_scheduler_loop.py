"""The scheduler's informers, queue and cycle over the in-memory apiserver, driven one cycle at a time: the room a
preemption made stays the preemptor's, and namespace labels reach InterPodAffinity's ``namespaceSelector``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from apimachinery import errors
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


# --- the nominated node: tried first, cleared when the pod fails elsewhere ------------------------------------------

async def nominate(client: Clientset, scheduler: Scheduler, name: str, node: str, ns: str = "d") -> None:
    """Write ``status.nominatedNodeName`` (as a preemption did) and wait until the queue's copy carries it."""
    await client.pods.patch(name, {"status": {"nominatedNodeName": node}}, "strategic", ns, subresource="status")
    await until(lambda: queued_nomination(scheduler, f"{ns}/{name}") == node, "the queue to see the nomination")


def queued_nomination(scheduler: Scheduler, key: str) -> str:
    """``status.nominatedNodeName`` of the queue's copy of the pod ("" if none, or not queued)."""
    info = scheduler.queue.get(key)
    return (info.pod.get("status") or {}).get("nominatedNodeName") or "" if info else ""


def pod_scheduled(pod: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in pod.get("status", {}).get("conditions") or [] if c["type"] == "PodScheduled"), {})


async def test_a_preemptor_is_bound_to_its_nominated_node_though_another_node_scores_higher(
        running: tuple[Scheduler, Clientset, Clock]) -> None:
    scheduler, client, clock = running
    await client.nodes.create(make_node("n1", cpu="1"))
    await client.pods.create(pod("low", 0, node="n1"), "d")
    await client.pods.create(pod("high", 10), "d")
    attempt = scheduler.schedule_one(await next_pod(scheduler))
    assert attempt is not None and attempt.node is None  # preempts low
    await settle(scheduler)
    assert (await client.pods.get("high", "d"))["status"]["nominatedNodeName"] == "n1"
    await until(lambda: queued_nomination(scheduler, "d/high") == "n1", "the queue to see the nomination")

    # Meanwhile an empty, bigger node joins: scoring would pick it (LeastAllocated), PreferNominatedNode does not.
    await client.nodes.create(make_node("n2", cpu="8"))
    await client.pods.delete("low", "d", grace_period_seconds=0)
    await until(lambda: "d/low" not in scheduler.cache.pod_nodes and scheduler.cache.table.n == 2, "the cache")
    clock.now += 60
    scheduler.queue.flush()
    attempt = scheduler.schedule_one(await next_pod(scheduler))
    assert attempt is not None and attempt.node == "n1"
    assert [attempt.node_names[r] for r in attempt.evaluated.tolist()] == ["n1"]  # n2 was neither filtered nor scored
    assert attempt.scores == []
    await settle(scheduler)
    assert (await client.pods.get("high", "d"))["spec"]["nodeName"] == "n1"


async def test_a_nominated_node_that_no_longer_fits_falls_back_to_all_nodes(
        running: tuple[Scheduler, Clientset, Clock]) -> None:
    scheduler, client, _ = running
    for name in ("n1", "n2"):
        await client.nodes.create(make_node(name, cpu="2"))
    await client.pods.create(pod("big", 100, node="n1", ns="d"), "d")  # n1 now has 1 of 2 cpus left
    await client.pods.create(pod("p", 0), "d")
    await until(lambda: "d/big" in scheduler.cache.pod_nodes, "the cache")
    await nominate(client, scheduler, "p", "n1")
    await client.nodes.patch("n1", {"spec": {"unschedulable": True}}, "merge")  # cordoned after the nomination
    await until(lambda: scheduler.cache.nodes["n1"].node.get("spec", {}).get("unschedulable"), "the cordon")
    attempt = scheduler.schedule_one(await next_pod(scheduler))
    assert attempt is not None and attempt.node == "n2"
    await settle(scheduler)
    assert (await client.pods.get("p", "d"))["spec"]["nodeName"] == "n2"


async def test_a_failed_bind_clears_the_nomination_and_the_pod_is_retried(
        running: tuple[Scheduler, Clientset, Clock], monkeypatch: pytest.MonkeyPatch) -> None:
    scheduler, client, clock = running
    await client.nodes.create(make_node("n1"))
    await client.pods.create(pod("p", 0), "d")
    await nominate(client, scheduler, "p", "n1")
    real_bind = client.pods.bind

    async def failing_bind(p: dict[str, Any], node: str) -> dict[str, Any]:
        raise errors.InternalError("etcd is having a bad day")

    monkeypatch.setattr(client.pods, "bind", failing_bind)
    attempt = scheduler.schedule_one(await next_pod(scheduler))
    assert attempt is not None and attempt.node == "n1"
    await settle(scheduler)
    seen = await client.pods.get("p", "d")
    assert not seen["spec"].get("nodeName")
    assert "nominatedNodeName" not in seen["status"]  # kube-scheduler's clearNominatedNode
    condition = pod_scheduled(seen)
    assert (condition["status"], condition["reason"]) == ("False", "SchedulerError")
    assert "etcd is having a bad day" in condition["message"]
    assert scheduler.queue.nominator.node_of("d/p") is None
    assert scheduler.queue.where("d/p") == "backoff"
    assert "d/p" not in scheduler.cache.pod_nodes  # the assumption is forgotten

    monkeypatch.setattr(client.pods, "bind", real_bind)
    clock.now += 60
    scheduler.queue.flush()
    info = await next_pod(scheduler)
    assert not info.pod["status"].get("nominatedNodeName")  # the queue holds the pod as the API shows it
    attempt = scheduler.schedule_one(info)
    assert attempt is not None and attempt.node == "n1"
    await settle(scheduler)
    seen = await client.pods.get("p", "d")
    assert seen["spec"]["nodeName"] == "n1" and pod_scheduled(seen)["status"] == "True"


async def test_a_bind_lost_to_another_binder_is_not_retried(
        running: tuple[Scheduler, Clientset, Clock], monkeypatch: pytest.MonkeyPatch) -> None:
    scheduler, client, _ = running
    for name in ("n1", "n2"):
        await client.nodes.create(make_node(name))
    await client.pods.create(pod("p", 0), "d")
    await nominate(client, scheduler, "p", "n1")
    real_bind = client.pods.bind

    async def raced_bind(p: dict[str, Any], node: str) -> dict[str, Any]:
        await real_bind(p, "n2")  # someone else was quicker, and the informer has seen it
        await until(lambda: (scheduler.pod_informer.store.get_by_key("d/p") or {}).get("spec", {}).get("nodeName"),
                    "the informer to see the other bind")
        return await real_bind(p, node)  # 409: already assigned

    monkeypatch.setattr(client.pods, "bind", raced_bind)
    attempt = scheduler.schedule_one(await next_pod(scheduler))
    assert attempt is not None and attempt.node == "n1"
    await settle(scheduler)
    await until(lambda: scheduler.cache.pod_nodes.get("d/p") == "n2", "the cache to see the other bind")
    seen = await client.pods.get("p", "d")
    assert seen["spec"]["nodeName"] == "n2" and pod_scheduled(seen)["status"] == "True"
    assert scheduler.queue.where("d/p") is None


async def test_a_nominated_pod_that_no_longer_fits_anywhere_loses_its_nomination(
        running: tuple[Scheduler, Clientset, Clock]) -> None:
    scheduler, client, _ = running
    await client.nodes.create(make_node("n1", cpu="1"))
    await client.pods.create(pod("p", 5), "d")
    await nominate(client, scheduler, "p", "n1")
    await client.pods.create(pod("vip", 100, node="n1"), "d")  # not a victim: more important than p
    await until(lambda: "d/vip" in scheduler.cache.pod_nodes, "the cache")
    attempt = scheduler.schedule_one(await next_pod(scheduler))
    assert attempt is not None and attempt.node is None
    await settle(scheduler)
    seen = await client.pods.get("p", "d")
    assert "nominatedNodeName" not in seen["status"]
    assert pod_scheduled(seen)["reason"] == "Unschedulable"
    assert scheduler.queue.nominator.node_of("d/p") is None
