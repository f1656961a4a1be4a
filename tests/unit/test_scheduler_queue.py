"""The scheduling queue: priority order, backoff timing, unschedulable pods moving back on events and on time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.queue import SchedulingQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pod(name: str, priority: int | None = None, **spec: Any) -> dict[str, Any]:
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": {"name": name, "namespace": "d"}, "spec": {"containers": [{"name": "c"}], **spec}}


def pop(q: SchedulingQueue) -> str:
    return asyncio.run(asyncio.wait_for(q.pop(), 1)).key


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def q(clock: FakeClock) -> SchedulingQueue:
    return SchedulingQueue(clock=clock)


def test_priority_then_arrival(q: SchedulingQueue) -> None:
    for name, prio in (("low", 0), ("high", 10), ("low2", None), ("high2", 10)):
        q.add(pod(name, prio))
    assert [pop(q) for _ in range(4)] == ["d/high", "d/high2", "d/low", "d/low2"]
    assert q.pending()["in-flight"] == 4


def test_pop_waits_without_polling_until_a_pod_arrives(q: SchedulingQueue) -> None:
    async def scenario() -> str:
        waiter = asyncio.create_task(q.pop())
        await asyncio.sleep(0.01)
        assert not waiter.done()
        q.add(pod("late"))
        return (await asyncio.wait_for(waiter, 1)).key

    assert asyncio.run(scenario()) == "d/late"


def test_backoff_doubles_from_one_second_to_ten(q: SchedulingQueue, clock: FakeClock) -> None:
    q.add(pod("a"))
    expected = [1, 2, 4, 8, 10, 10]
    for seconds in expected:
        info = asyncio.run(q.pop())
        q.add_backoff(info)
        assert q.where("d/a") == "backoff"
        clock.now += seconds - 0.01
        q.flush()
        assert q.where("d/a") == "backoff"
        clock.now += 0.01
        q.flush()
        assert q.where("d/a") == "active"


def test_unschedulable_waits_for_an_event(q: SchedulingQueue, clock: FakeClock) -> None:
    q.add(pod("a"))
    q.add_unschedulable(asyncio.run(q.pop()))
    clock.now += 20
    q.flush()
    assert q.where("d/a") == "unschedulable"  # no busy retry
    assert q.move_all_to_active_or_backoff("NodeAdd") == 1
    assert q.where("d/a") == "active"  # its 1 s backoff is over


def test_event_during_backoff_goes_to_backoff_queue(q: SchedulingQueue, clock: FakeClock) -> None:
    q.add(pod("a"))
    q.add_unschedulable(asyncio.run(q.pop()))
    clock.now += 0.5
    q.move_all_to_active_or_backoff()
    assert q.where("d/a") == "backoff"
    clock.now += 0.5
    q.flush()
    assert q.where("d/a") == "active"


def test_event_while_in_flight_is_not_missed(q: SchedulingQueue, clock: FakeClock) -> None:
    q.add(pod("a"))
    info = asyncio.run(q.pop())
    q.move_all_to_active_or_backoff("NodeAdd")  # arrives while the attempt runs
    q.add_unschedulable(info)
    assert q.where("d/a") == "backoff"
    # Without an event, the next failure parks it.
    clock.now += 5
    q.flush()
    q.add_unschedulable(asyncio.run(q.pop()))
    assert q.where("d/a") == "unschedulable"


def test_periodic_flush_after_sixty_seconds(q: SchedulingQueue, clock: FakeClock) -> None:
    q.add(pod("a"))
    q.add_unschedulable(asyncio.run(q.pop()))
    clock.now += 59
    q.flush()
    assert q.where("d/a") == "unschedulable"
    clock.now += 1
    q.flush()
    assert q.where("d/a") == "active"


def test_spec_update_retries_an_unschedulable_pod_but_status_does_not(q: SchedulingQueue,
                                                                      clock: FakeClock) -> None:
    q.add(pod("a"))
    q.add_unschedulable(asyncio.run(q.pop()))
    clock.now += 5
    q.update({**pod("a"), "status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}})
    assert q.where("d/a") == "unschedulable"
    q.update(pod("a", tolerations=[{"operator": "Exists"}]))
    assert q.where("d/a") == "active"


def test_delete_and_done_forget(q: SchedulingQueue) -> None:
    q.add(pod("a"))
    q.add(pod("b"))
    q.delete("d/a")
    info = asyncio.run(q.pop())
    assert info.key == "d/b" and info.attempts == 1
    q.done("d/b")
    assert len(q) == 0
    q.add_unschedulable(info)  # a late failure report of a forgotten pod is ignored
    assert q.where("d/b") is None


def test_run_flushes_backoff_on_time() -> None:
    async def scenario() -> str:
        q = SchedulingQueue(initial_backoff=0.05)
        stop = asyncio.Event()
        runner = asyncio.create_task(q.run(stop))
        q.add(pod("a"))
        q.add_backoff(await q.pop())
        info = await asyncio.wait_for(q.pop(), 1)
        stop.set()
        await runner
        return info.key

    assert asyncio.run(scenario()) == "d/a"


def test_targeted_event_moves_only_the_pods_it_concerns(q: SchedulingQueue, clock: FakeClock) -> None:
    for name in ("a", "b"):
        q.add(pod(name))
        q.add_unschedulable(asyncio.run(q.pop()))
    clock.now += 5
    assert q.move_all_to_active_or_backoff("AssignedPodAdd", lambda info: info.key == "d/b") == 1
    assert (q.where("d/a"), q.where("d/b")) == ("unschedulable", "active")
    # A targeted event during an attempt that it does not concern leaves the pod to park.
    info = asyncio.run(q.pop())
    q.move_all_to_active_or_backoff("AssignedPodAdd", lambda info: False)
    q.add_unschedulable(info)
    assert q.where("d/b") == "unschedulable"
    # One that concerns it is not missed.
    clock.now += 5
    q.move_all_to_active_or_backoff("NodeAdd")
    clock.now += 5
    q.flush()
    info = asyncio.run(q.pop())
    q.move_all_to_active_or_backoff("AssignedPodAdd", lambda i: i.key == info.key)
    q.add_unschedulable(info)
    assert q.where(info.key) == "backoff"
