"""client-go's workqueue and REST client metrics as kubeclient records them."""

from __future__ import annotations

import asyncio

from prometheus_client import REGISTRY

from kubeclient.metrics import observe_request
from kubeclient.workqueue import Queue, RateLimitingQueue


def sample(metric: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(metric, labels) or 0.0


async def test_a_named_queue_counts_adds_depth_latency_work_and_retries() -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue(name="unit_test_queue")
    q = {"name": "unit_test_queue"}
    queue.add("a")
    queue.add("a")  # already waiting: not an add (dedup)
    queue.add("b")
    assert sample("workqueue_adds_total", **q) == 2
    assert sample("workqueue_depth", **q) == 2
    item = await queue.get()
    assert sample("workqueue_depth", **q) == 1
    assert sample("workqueue_queue_duration_seconds_count", **q) == 1
    await asyncio.sleep(0.01)
    assert sample("workqueue_unfinished_work_seconds", **q) >= 0.01
    assert sample("workqueue_longest_running_processor_seconds", **q) >= 0.01
    queue.done(item)
    assert sample("workqueue_work_duration_seconds_count", **q) == 1
    assert sample("workqueue_unfinished_work_seconds", **q) == 0
    queue.add_rate_limited("c")
    assert sample("workqueue_retries_total", **q) == 1
    queue.shut_down()


def test_an_unnamed_queue_is_not_measured() -> None:
    before = sample("workqueue_adds_total", name="")
    Queue().add("x")
    assert sample("workqueue_adds_total", name="") == before == 0


def test_rest_client_requests_by_code_method_and_host() -> None:
    labels = {"code": "201", "method": "POST", "host": "unit.test:6443"}
    observe_request("POST", "unit.test:6443", "201", 0.02)
    observe_request("POST", "unit.test:6443", "<error>", 0.5)
    assert sample("rest_client_requests_total", **labels) == 1
    assert sample("rest_client_requests_total", **{**labels, "code": "<error>"}) == 1
    assert sample("rest_client_request_duration_seconds_count", verb="POST", host="unit.test:6443") == 2
    assert sample("rest_client_request_duration_seconds_bucket", verb="POST", host="unit.test:6443", le="0.025") == 1
