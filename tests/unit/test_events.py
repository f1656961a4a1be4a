"""kubeclient.events: the Event shape, and EventRecorder's correlation (client-go's EventCorrelator rules)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from apimachinery.errors import Forbidden
from kubeclient.client import Clientset
from kubeclient.eventcorrelator import Aggregator, SpamFilter
from kubeclient.events import EventRecorder, make_event, object_reference
from kubeclient.fake import FakeAPIServer
from kubeclient.resources import EVENTS
from kubeclient.types import Object
from support.clock import FakeClock

POD: Object = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web-1", "namespace": "prod", "uid": "u-1", "resourceVersion": "7"}}
NODE: Object = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "uid": "u-n"}}


def setup(*, window: float = 600.0, queue_size: int = 1000) -> tuple[FakeAPIServer, EventRecorder, FakeClock]:
    fake, clock = FakeAPIServer(), FakeClock()
    recorder = EventRecorder(Clientset(fake).events, "default-scheduler", "host-a", clock=clock, window=window,
                             queue_size=queue_size)
    return fake, recorder, clock


def test_make_event_has_the_core_v1_shape() -> None:
    now = datetime(2024, 5, 1, 12, 0, 0, 500000, tzinfo=UTC)
    event = make_event(POD, event_type="Warning", reason="FailedScheduling", message="0/3 nodes are available",
                       component="default-scheduler", host="host-a", now=now)
    assert event["kind"] == "Event" and event["apiVersion"] == "v1"
    assert event["metadata"]["namespace"] == "prod"
    assert event["metadata"]["name"].startswith("web-1.")
    assert event["involvedObject"] == {"kind": "Pod", "namespace": "prod", "name": "web-1", "uid": "u-1",
                                       "apiVersion": "v1", "resourceVersion": "7"}
    assert (event["type"], event["reason"], event["count"]) == ("Warning", "FailedScheduling", 1)
    assert event["source"] == {"component": "default-scheduler", "host": "host-a"}
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2024-05-01T12:00:00Z"
    other = make_event(POD, event_type="Normal", reason="x", message="y", component="c", now=now)
    assert other["metadata"]["name"] != event["metadata"]["name"]  # unique even at the same instant


def test_events_about_cluster_scoped_objects_go_to_default() -> None:
    event = make_event(NODE, event_type="Normal", reason="NodeReady", message="ready", component="kubelet")
    assert event["metadata"]["namespace"] == "default"
    assert "namespace" not in event["involvedObject"]
    assert object_reference(NODE, "spec")["fieldPath"] == "spec"


async def test_a_repeat_within_the_window_patches_count_and_last_timestamp() -> None:
    fake, recorder, clock = setup()
    first = await recorder.record(POD, "Warning", "FailedScheduling", "no nodes")
    clock.advance(30)
    second = await recorder.record(POD, "Warning", "FailedScheduling", "no nodes")
    (stored,) = fake.objects(EVENTS, "prod")
    assert stored["metadata"]["name"] == first["metadata"]["name"] == second["metadata"]["name"]
    assert stored["count"] == 2
    assert stored["firstTimestamp"] == "2024-05-01T12:00:00Z"
    assert stored["lastTimestamp"] == "2024-05-01T12:00:30Z"
    patch = [a for a in fake.actions if a.verb == "PATCH"]
    assert len(patch) == 1 and patch[0].content_type == "application/merge-patch+json"
    assert patch[0].body["count"] == 2


async def test_different_message_reason_or_object_creates_a_new_event() -> None:
    fake, recorder, _ = setup()
    await recorder.record(POD, "Warning", "FailedScheduling", "no nodes")
    await recorder.record(POD, "Warning", "FailedScheduling", "still no nodes")
    await recorder.record(POD, "Normal", "Scheduled", "assigned")
    other = {**POD, "metadata": {**POD["metadata"], "name": "web-2", "uid": "u-2"}}
    await recorder.record(other, "Normal", "Scheduled", "assigned")
    assert len(fake.objects(EVENTS, "prod")) == 4
    assert all(e["count"] == 1 for e in fake.objects(EVENTS, "prod"))


async def test_a_repeat_after_the_window_creates_a_new_event() -> None:
    fake, recorder, clock = setup(window=60.0)
    await recorder.record(POD, "Normal", "Pulled", "image pulled")
    clock.advance(61)
    await recorder.record(POD, "Normal", "Pulled", "image pulled")
    assert len(fake.objects(EVENTS, "prod")) == 2


async def test_a_repeat_of_an_expired_event_recreates_it() -> None:
    fake, recorder, _ = setup()
    first = await recorder.record(POD, "Normal", "Pulled", "image pulled")
    await Clientset(fake).events.delete(first["metadata"]["name"], "prod")  # TTL expiry on the server
    again = await recorder.record(POD, "Normal", "Pulled", "image pulled")
    assert again["metadata"]["name"] != first["metadata"]["name"]
    assert [e["count"] for e in fake.objects(EVENTS, "prod")] == [1]


async def test_event_is_fire_and_forget_and_serializes_repeats() -> None:
    fake, recorder, _ = setup()
    for _ in range(5):
        recorder.event(POD, "Warning", "BackOff", "restarting failed container")
    assert fake.objects(EVENTS, "prod") == []  # nothing written synchronously
    await asyncio.wait_for(recorder.flush(), 2)
    (stored,) = fake.objects(EVENTS, "prod")
    assert stored["count"] == 5
    await recorder.close()


async def test_event_drops_when_the_queue_is_full_and_survives_api_errors() -> None:
    fake, recorder, _ = setup(queue_size=2)
    for i in range(4):
        recorder.event(POD, "Normal", "R", f"m{i}")
    await asyncio.wait_for(recorder.flush(), 2)
    assert sorted(e["message"] for e in fake.objects(EVENTS, "prod")) == ["m0", "m1"]
    fake.fail_next(Forbidden("nope"), verb="POST")
    recorder.event(POD, "Normal", "R", "lost")
    recorder.event(POD, "Normal", "R", "kept")
    await asyncio.wait_for(recorder.flush(), 2)
    assert "kept" in {e["message"] for e in fake.objects(EVENTS, "prod")}
    await recorder.close()


async def test_clientset_create_event_writes_one_event() -> None:
    fake = FakeAPIServer()
    created = await Clientset(fake).create_event(NODE, event_type="Normal", reason="Starting",
                                                 message="Starting kubelet.", component="kubelet", host="node-1")
    assert created["metadata"]["namespace"] == "default"
    assert fake.objects(EVENTS, "default")[0]["source"] == {"component": "kubelet", "host": "node-1"}


async def test_container_events_name_the_container_and_aggregate_per_container() -> None:
    """The kubelet's events point at a container (``spec.containers{web}``), as ``kubectl describe`` shows them;
    the same message about two containers is two events."""
    fake, recorder, _ = setup()
    await recorder.record(POD, "Normal", "Pulled", "already present", field_path="spec.containers{web}")
    await recorder.record(POD, "Normal", "Pulled", "already present", field_path="spec.containers{side}")
    recorder.event(POD, "Normal", "Pulled", "already present", field_path="spec.containers{web}")
    await recorder.flush()
    events = {e["involvedObject"]["fieldPath"]: e["count"] for e in fake.objects(EVENTS, "prod")}
    assert events == {"spec.containers{web}": 2, "spec.containers{side}": 1}


def test_event_time_adds_an_exact_time_and_keeps_the_legacy_fields() -> None:
    """The kubelet's events: eventTime (µs) for kubelab trace, the legacy fields for kubectl as before."""
    async def scenario() -> None:
        fake, clock = FakeAPIServer(), FakeClock()
        clock.wall = clock.wall.replace(microsecond=123456)
        recorder = EventRecorder(Clientset(fake).events, "kubelet", "node01", clock=clock, event_time=True)
        stored = await recorder.record(POD, "Normal", "Pulling", 'Pulling image "busybox"')
        assert stored["eventTime"] == "2024-05-01T12:00:00.123456Z"
        assert (stored["action"], stored["reportingComponent"], stored["reportingInstance"]) == (
            "Pulling", "kubelet", "node01")
        assert stored["firstTimestamp"] == stored["lastTimestamp"] == "2024-05-01T12:00:00Z"
        assert stored["source"] == {"component": "kubelet", "host": "node01"} and stored["count"] == 1
    asyncio.run(scenario())


RC: Object = {"apiVersion": "v1", "kind": "ReplicationController",
              "metadata": {"name": "web", "namespace": "prod", "uid": "u-rc"}}


def rc_recorder() -> tuple[FakeAPIServer, EventRecorder, FakeClock]:
    fake, clock = FakeAPIServer(), FakeClock()
    return fake, EventRecorder(Clientset(fake).events, "replication-controller", clock=clock), clock


def by_message(fake: FakeAPIServer) -> dict[str, int]:
    return {e["message"]: e["count"] for e in fake.objects(EVENTS, "prod")}


async def test_the_tenth_similar_event_becomes_the_combined_one_that_later_ones_count_into() -> None:
    """client-go's EventAggregator: 9 events as written, then one aggregate event named after the latest."""
    fake, recorder, clock = rc_recorder()
    for i in range(12):
        clock.advance(1)
        await recorder.record(RC, "Normal", "SuccessfulCreate", f"Created pod: web-{i}")
    events = by_message(fake)
    assert len(events) == 10
    assert all(events[f"Created pod: web-{i}"] == 1 for i in range(9))
    assert events["(combined from similar events): Created pod: web-11"] == 3
    (combined,) = [e for e in fake.objects(EVENTS, "prod") if e["message"].startswith("(combined")]
    assert (combined["firstTimestamp"], combined["lastTimestamp"]) == ("2024-05-01T12:00:10Z", "2024-05-01T12:00:12Z")
    assert "reportingComponent" not in combined and "eventTime" not in combined
    assert [a.verb for a in fake.actions if "/events" in a.path] == ["POST"] * 10 + ["PATCH"] * 2


async def test_similar_events_start_afresh_after_ten_quiet_minutes() -> None:
    fake, recorder, clock = rc_recorder()
    for i in range(9):
        await recorder.record(RC, "Normal", "SuccessfulCreate", f"Created pod: web-{i}")
    clock.advance(601)
    await recorder.record(RC, "Normal", "SuccessfulCreate", "Created pod: web-9")
    assert not any(m.startswith("(combined") for m in by_message(fake))


async def test_other_reasons_or_objects_are_not_similar() -> None:
    fake, recorder, _ = rc_recorder()
    other = {**RC, "metadata": {**RC["metadata"], "name": "api", "uid": "u-api"}}
    for i in range(5):
        for obj in (RC, other):
            await recorder.record(obj, "Normal", "SuccessfulCreate", f"Created pod: x-{i}")
            await recorder.record(obj, "Normal", "SuccessfulDelete", f"Deleted pod: y-{i}")
    assert len(fake.objects(EVENTS, "prod")) == 20
    assert not any(m.startswith("(combined") for m in by_message(fake))


async def test_the_spam_filter_allows_a_burst_of_25_writes_per_object_then_drops() -> None:
    """Writes, not events: 9 single events + the aggregate's create and 15 patches spend the 25 tokens; the
    dropped events are still counted, so the next write shows them."""
    fake, recorder, _ = rc_recorder()
    results = [await recorder.record(RC, "Normal", "SuccessfulCreate", f"Created pod: web-{i}") for i in range(40)]
    assert sum(r is not None for r in results) == 25 and results[25:] == [None] * 15
    events = by_message(fake)
    assert len(events) == 10 and events["(combined from similar events): Created pod: web-24"] == 16
    assert len([a for a in fake.actions if "/events" in a.path]) == 25
    await recorder.record(RC, "Warning", "FailedCreate", "quota")  # another type: its own bucket
    await recorder.record(NODE, "Normal", "SuccessfulCreate", "other object")
    assert len(fake.objects(EVENTS, "prod")) == 11 and len(fake.objects(EVENTS, "default")) == 1


async def test_the_spam_filter_refills_one_token_per_300_seconds() -> None:
    fake, recorder, clock = rc_recorder()
    for _ in range(26):
        await recorder.record(RC, "Warning", "FailedCreate", "quota exceeded")
    (event,) = fake.objects(EVENTS, "prod")
    assert event["count"] == 25
    clock.advance(299)
    assert await recorder.record(RC, "Warning", "FailedCreate", "quota exceeded") is None
    clock.advance(1)
    stored = await recorder.record(RC, "Warning", "FailedCreate", "quota exceeded")
    assert stored is not None and stored["count"] == 28  # the two dropped ones counted in
    assert await recorder.record(RC, "Warning", "FailedCreate", "quota exceeded") is None


async def test_identical_events_patch_the_count_however_long_apart() -> None:
    """client-go's eventLogger keeps an LRU with no expiry: a repeat an hour later still counts."""
    fake, recorder, clock = rc_recorder()
    await recorder.record(RC, "Warning", "FailedCreate", "quota exceeded")
    clock.advance(3600)
    await recorder.record(RC, "Warning", "FailedCreate", "quota exceeded")
    (event,) = fake.objects(EVENTS, "prod")
    assert (event["count"], event["firstTimestamp"], event["lastTimestamp"]) == (
        2, "2024-05-01T12:00:00Z", "2024-05-01T13:00:00Z")


def test_correlator_state_is_bounded_by_the_lru_size() -> None:
    clock = FakeClock()
    spam, aggregator = SpamFilter(clock.monotonic, cache_size=3), Aggregator(clock.monotonic, cache_size=3)
    for i in range(10):
        spam.allow(("obj", i))
        aggregator.combine(("obj", i), "m")
    assert len(spam._buckets) == len(aggregator._records) == 3
    for _ in range(25):
        assert spam.allow(("obj", 0))  # evicted, so a fresh full bucket
    assert not spam.allow(("obj", 0))
