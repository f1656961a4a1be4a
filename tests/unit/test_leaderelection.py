"""kubeclient.leaderelection on the fake: one leader, takeover after expiry or release, loss on failed renew."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from apimachinery.errors import ServiceUnavailable
from kubeclient.client import Clientset
from kubeclient.fake import FakeAPIServer
from kubeclient.leaderelection import LeaderElector
from kubeclient.resources import LEASES

TIMINGS = {"lease_duration": 1.0, "renew_deadline": 0.5, "retry_period": 0.1}


async def until(predicate: Callable[[], bool], timeout: float = 3.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


class Candidate:
    def __init__(self, cs: Clientset, identity: str, **kwargs: Any) -> None:
        self.events: list[str] = []
        self.leading_stopped: asyncio.Event | None = None

        async def started(stopped: asyncio.Event) -> None:
            self.events.append("started")
            self.leading_stopped = stopped
            await stopped.wait()

        self.elector = LeaderElector(
            cs.leases, name="kube-scheduler", namespace="kube-system", identity=identity,
            on_started_leading=started, on_stopped_leading=lambda: self.events.append("stopped"),
            on_new_leader=lambda who: self.events.append(f"leader:{who}"), **{**TIMINGS, **kwargs})
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(self.elector.run(self.stop))

    async def halt(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, 3)


def lease(fake: FakeAPIServer) -> dict[str, Any]:
    (obj,) = fake.objects(LEASES, "kube-system")
    return obj


async def test_the_first_candidate_creates_the_lease_and_leads() -> None:
    fake = FakeAPIServer()
    a = Candidate(Clientset(fake), "a")
    try:
        await until(a.elector.is_leader)
        spec = lease(fake)["spec"]
        assert spec["holderIdentity"] == "a"
        assert spec["leaseDurationSeconds"] == 1
        assert spec["leaseTransitions"] == 0
        assert spec["acquireTime"].endswith("Z") and "." in spec["renewTime"]  # MicroTime
        first_renew = spec["renewTime"]
        await until(lambda: lease(fake)["spec"]["renewTime"] != first_renew)  # it keeps renewing
        assert lease(fake)["spec"]["acquireTime"] == spec["acquireTime"]
        assert a.events[:2] == ["leader:a", "started"] or a.events[:2] == ["started", "leader:a"]
    finally:
        await a.halt()
    assert a.events[-1] == "stopped"
    assert a.leading_stopped is not None and a.leading_stopped.is_set()


async def test_only_one_of_two_leads_and_the_other_takes_over_after_expiry() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    a = Candidate(cs, "a", release_on_cancel=False)
    await until(a.elector.is_leader)
    b = Candidate(cs, "b")
    both = False

    async def watch_for_two_leaders() -> None:
        nonlocal both
        while True:
            both = both or (a.elector.is_leader() and b.elector.is_leader())
            await asyncio.sleep(0.005)

    monitor = asyncio.create_task(watch_for_two_leaders())
    try:
        await until(lambda: b.elector.leader == "a")
        await asyncio.sleep(0.5)
        assert not b.elector.is_leader()
        await a.halt()  # a stops renewing without releasing
        loop = asyncio.get_running_loop()
        gone = loop.time()
        await until(b.elector.is_leader)
        assert loop.time() - gone >= 0.5  # b waited for the lease to expire on its own clock
        spec = lease(fake)["spec"]
        assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
        await until(lambda: "leader:b" in b.events and "started" in b.events)  # callbacks run as tasks
        assert a.events[-1] == "stopped"
        assert not both
    finally:
        monitor.cancel()
        await asyncio.gather(monitor, return_exceptions=True)
        await b.halt()


async def test_release_on_cancel_hands_over_at_once() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    a = Candidate(cs, "a", lease_duration=5.0)
    await until(a.elector.is_leader)
    b = Candidate(cs, "b", lease_duration=5.0)
    try:
        await until(lambda: b.elector.leader == "a")
        await a.halt()
        assert lease(fake)["spec"]["holderIdentity"] == ""
        loop = asyncio.get_running_loop()
        start = loop.time()
        await until(b.elector.is_leader)
        assert loop.time() - start < 1.0  # far sooner than the 5 s lease
        assert lease(fake)["spec"]["leaseTransitions"] == 1
    finally:
        await b.halt()


async def test_leader_steps_down_when_it_cannot_renew_within_the_deadline() -> None:
    fake = FakeAPIServer()
    a = Candidate(Clientset(fake), "a")
    try:
        await until(a.elector.is_leader)
        fake.fail_next(ServiceUnavailable("apiserver down"), path="/apis/coordination.k8s.io", times=10_000)
        await until(lambda: "stopped" in a.events, timeout=2.0)
        assert not a.elector.is_leader()
        assert a.leading_stopped is not None and a.leading_stopped.is_set()
    finally:
        await a.halt()


async def test_concurrent_candidates_elect_exactly_one() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    candidates = [Candidate(cs, f"c{i}") for i in range(4)]
    try:
        await until(lambda: any(c.elector.is_leader() for c in candidates))
        await asyncio.sleep(0.4)
        leaders = [c for c in candidates if c.elector.is_leader()]
        assert len(leaders) == 1
        assert lease(fake)["spec"]["holderIdentity"] == leaders[0].elector.identity
        assert all(c.elector.leader == leaders[0].elector.identity for c in candidates)
    finally:
        for c in candidates:
            await c.halt()


def test_timings_are_validated() -> None:
    cs = Clientset(FakeAPIServer())
    with pytest.raises(ValueError):
        LeaderElector(cs.leases, name="x", namespace="y", identity="a", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError):
        LeaderElector(cs.leases, name="x", namespace="y", identity="a", renew_deadline=2, retry_period=2)
    with pytest.raises(ValueError):
        LeaderElector(cs.leases, name="x", namespace="y", identity="")
