"""kubeclient.events: the Event shape, and EventRecorder's aggregation of repeats."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from apimachinery.errors import Forbidden
from kubeclient.client import Clientset
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
