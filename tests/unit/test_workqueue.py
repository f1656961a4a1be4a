"""kubeclient.workqueue: dedup, one worker per key, delays, rate limits, shutdown."""

from __future__ import annotations

import asyncio

import pytest

from kubeclient.workqueue import (
    BucketRateLimiter,
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    Queue,
    QueueShutDown,
    RateLimitingQueue,
    default_controller_rate_limiter,
)


async def test_add_dedups_waiting_items_and_keeps_fifo_order() -> None:
    q: Queue[str] = Queue()
    for key in ["a", "b", "a", "c", "b"]:
        q.add(key)
    assert len(q) == 3
    assert [await q.get() for _ in range(3)] == ["a", "b", "c"]


async def test_item_added_while_processing_is_requeued_only_after_done() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    assert await q.get() == "a"
    q.add("a")
    q.add("a")
    assert len(q) == 0  # not handed to a second worker while the first holds it
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0.01)
    assert not second.done()
    q.done("a")
    assert await asyncio.wait_for(second, 1) == "a"
    q.done("a")
    assert len(q) == 0


async def test_done_without_re_add_does_not_requeue() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    await q.get()
    q.done("a")
    assert len(q) == 0


async def test_concurrent_workers_never_process_one_key_at_once() -> None:
    q: Queue[int] = Queue()
    in_flight: set[int] = set()
    overlaps = 0
    processed: list[int] = []

    async def worker() -> None:
        nonlocal overlaps
        while True:
            try:
                key = await q.get()
            except QueueShutDown:
                return
            if key in in_flight:
                overlaps += 1
            in_flight.add(key)
            await asyncio.sleep(0.001)
            processed.append(key)
            in_flight.discard(key)
            q.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(4)]
    for round_ in range(20):
        for key in range(5):
            q.add(key)
        await asyncio.sleep(0.0005 * (round_ % 3))
    await q.shut_down_with_drain()
    await asyncio.gather(*workers)
    assert overlaps == 0
    assert set(processed) == set(range(5))


async def test_shutdown_hands_out_queued_items_then_raises_and_ignores_adds() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.shut_down()
    q.add("b")
    assert await q.get() == "a"
    with pytest.raises(QueueShutDown):
        await q.get()


async def test_shutdown_wakes_blocked_getters() -> None:
    q: Queue[str] = Queue()
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.shut_down()
    results = await asyncio.gather(*getters, return_exceptions=True)
    assert all(isinstance(r, QueueShutDown) for r in results)


async def test_cancelled_getter_does_not_swallow_an_item() -> None:
    q: Queue[str] = Queue()
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("a")  # wakes `first`…
    first.cancel()  # …which is cancelled before it runs: the wakeup must pass to `second`
    assert await asyncio.wait_for(second, 1) == "a"
    assert first.cancelled()


async def test_shut_down_with_drain_waits_for_done() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    await q.get()
    drain = asyncio.create_task(q.shut_down_with_drain())
    await asyncio.sleep(0.01)
    assert not drain.done()
    q.done("a")
    await asyncio.wait_for(drain, 1)


async def test_add_after_delays_and_the_earliest_ready_time_wins() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    q.add_after("slow", 0.05)
    q.add_after("slow", 10.0)  # later: ignored, the 50 ms timer stays
    q.add_after("now", 0)
    assert len(q) == 1
    assert await q.get() == "now"
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await asyncio.wait_for(q.get(), 1) == "slow"
    assert 0.04 <= loop.time() - start < 1.0


async def test_add_after_earlier_time_replaces_a_later_one() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    q.add_after("k", 10.0)
    q.add_after("k", 0.01)
    assert await asyncio.wait_for(q.get(), 1) == "k"


async def test_shutdown_cancels_pending_delays() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    q.add_after("k", 0.01)
    q.shut_down()
    await asyncio.sleep(0.03)
    assert len(q) == 0


def test_exponential_limiter_doubles_per_item_caps_and_forgets() -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.005, 0.1)
    assert [limiter.when("a") for _ in range(6)] == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08, 0.1])
    assert limiter.when("b") == pytest.approx(0.005)  # per item
    assert limiter.num_requeues("a") == 6
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.005)


def test_exponential_limiter_defaults_and_huge_exponents() -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("a") for _ in range(100)]
    assert delays[0] == pytest.approx(0.005)
    assert delays[-1] == 1000.0


def test_bucket_limiter_allows_a_burst_then_spaces_by_qps() -> None:
    now = [0.0]
    limiter: BucketRateLimiter[str] = BucketRateLimiter(qps=10.0, burst=2, now=lambda: now[0])
    assert limiter.when("a") == 0.0
    assert limiter.when("b") == 0.0
    assert limiter.when("c") == pytest.approx(0.1)
    assert limiter.when("d") == pytest.approx(0.2)
    now[0] = 1.0  # refilled (capped at the burst)
    assert limiter.when("e") == 0.0


def test_max_of_limiter_takes_the_longest_delay() -> None:
    now = [0.0]
    limiter: MaxOfRateLimiter[str] = MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1.0),
                                                      BucketRateLimiter(qps=1.0, burst=1, now=lambda: now[0]))
    assert limiter.when("a") == pytest.approx(0.005)
    assert limiter.when("a") == pytest.approx(1.0)  # the bucket is empty
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert default_controller_rate_limiter().when("x") == pytest.approx(0.005)


async def test_rate_limiting_queue_backs_off_per_item_until_forget() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(ItemExponentialFailureRateLimiter(0.02, 1.0))
    loop = asyncio.get_running_loop()
    waits = []
    for _ in range(3):
        start = loop.time()
        q.add_rate_limited("k")
        key = await asyncio.wait_for(q.get(), 2)
        waits.append(loop.time() - start)
        q.done(key)
    assert q.num_requeues("k") == 3
    assert waits[0] >= 0.015 and waits[1] >= 0.035 and waits[2] >= 0.075
    q.forget("k")
    assert q.num_requeues("k") == 0
