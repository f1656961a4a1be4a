"""kubeclient.eventsv1: the events.k8s.io/v1 shape and the new recorder's series for isomorphic repeats."""

from __future__ import annotations

import asyncio

from kubeclient.client import Clientset
from kubeclient.eventsv1 import EventsV1Recorder, make_event_v1
from kubeclient.fake import FakeAPIServer
from kubeclient.resources import EVENTS_V1
from kubeclient.types import Object
from support.clock import FakeClock

POD: Object = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web-1", "namespace": "prod", "uid": "u-1", "resourceVersion": "7"}}
NODE: Object = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "uid": "u-n"}}




def setup(window: float = 360.0) -> tuple[FakeAPIServer, EventsV1Recorder, FakeClock]:
    fake, clock = FakeAPIServer(), FakeClock()
    return fake, EventsV1Recorder(Clientset(fake).events_v1, "default-scheduler", "default-scheduler-host-a",
                                  clock=clock, window=window), clock


def test_make_event_v1_has_the_events_k8s_io_shape() -> None:
    clock = FakeClock()
    event = make_event_v1(POD, NODE, event_type="Normal", reason="Scheduled", action="Binding", note="assigned",
                          controller="default-scheduler", instance="default-scheduler-h", now=clock.now())
    assert (event["apiVersion"], event["kind"]) == ("events.k8s.io/v1", "Event")
    assert event["eventTime"] == "2024-05-01T12:00:00.000000Z"
    assert event["regarding"]["name"] == "web-1" and event["related"]["kind"] == "Node"
    assert (event["reportingController"], event["reportingInstance"], event["action"], event["note"]) == (
        "default-scheduler", "default-scheduler-h", "Binding", "assigned")
    assert event["metadata"] == {"name": event["metadata"]["name"], "namespace": "prod"}
    assert "series" not in event and "source" not in event and "count" not in event


def test_the_instance_defaults_to_controller_and_hostname() -> None:
    recorder = EventsV1Recorder(Clientset(FakeAPIServer()).events_v1, "default-scheduler")
    assert recorder.instance.startswith("default-scheduler-") and len(recorder.instance) > len("default-scheduler-")


def test_repeats_become_a_series_whatever_their_note() -> None:
    async def scenario() -> None:
        fake, recorder, clock = setup()
        first = await recorder.record(POD, None, "Warning", "FailedScheduling", "Scheduling", "0/3 nodes")
        clock.advance(2.5)
        second = await recorder.record(POD, None, "Warning", "FailedScheduling", "Scheduling", "0/4 nodes")
        clock.advance(1)
        third = await recorder.record(POD, None, "Warning", "FailedScheduling", "Scheduling", "0/4 nodes")
        assert second["metadata"]["name"] == third["metadata"]["name"] == first["metadata"]["name"]
        assert third["series"] == {"count": 3, "lastObservedTime": "2024-05-01T12:00:03.500000Z"}
        assert third["eventTime"] == first["eventTime"] and second["series"]["count"] == 2
        assert len(fake.objects(EVENTS_V1, "prod")) == 1
        other = await recorder.record(POD, None, "Warning", "FailedScheduling", "Preempting", "x")
        assert other["metadata"]["name"] != first["metadata"]["name"]  # another action: another event
    asyncio.run(scenario())


def test_after_the_window_a_repeat_is_a_new_event() -> None:
    async def scenario() -> None:
        fake, recorder, clock = setup(window=10)
        await recorder.record(POD, None, "Normal", "Scheduled", "Binding", "a")
        clock.advance(11)
        again = await recorder.record(POD, None, "Normal", "Scheduled", "Binding", "a")
        assert "series" not in again and len(fake.objects(EVENTS_V1, "prod")) == 2
    asyncio.run(scenario())


def test_eventf_queues_with_the_time_of_the_call() -> None:
    async def scenario() -> None:
        fake, recorder, clock = setup()
        recorder.eventf(POD, None, "Normal", "Scheduled", "Binding", "assigned")
        clock.advance(5)  # written later: eventTime is still the call's
        await recorder.close()
        [event] = fake.objects(EVENTS_V1, "prod")
        assert event["eventTime"] == "2024-05-01T12:00:00.000000Z"
    asyncio.run(scenario())
