"""apiserver/apiextensions/conversion.py: which objects are sent, and how a webhook's answer is checked and worded
(kube's ``webhookConverter``), with the webhook client replaced by a function of the test's choosing."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pytest

from apiserver.admission.webhook.client import CallError
from apiserver.apiextensions.conversion import ConversionFailed, WebhookConverter

Object = dict[str, Any]
GROUP = "stable.example.com"


class FakeClient:
    """Answers each review with ``respond(review)``; records what was sent."""

    def __init__(self, respond: Callable[[Object], Any]) -> None:
        self.respond = respond
        self.sent: list[Object] = []

    async def call(self, config: Object, body: Object, timeout: int) -> Any:
        self.sent.append(copy.deepcopy(body))
        return self.respond(body)


def crd(review_versions: list[str]) -> Object:
    return {"metadata": {"name": f"crontabs.{GROUP}"},
            "spec": {"group": GROUP, "names": {"kind": "CronTab", "plural": "crontabs"},
                     "conversion": {"strategy": "Webhook", "webhook": {
                         "clientConfig": {"url": "https://hook/convert"},
                         "conversionReviewVersions": review_versions}}}}


def cron(name: str, version: str = "v1") -> Object:
    return {"apiVersion": f"{GROUP}/{version}", "kind": "CronTab",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "7",
                         "labels": {"a": "b"}},
            "spec": {"x": 1}}


def success(review: Object, change: Callable[[Object], None] = lambda o: None) -> Object:
    request = review["request"]
    objects = []
    for obj in request["objects"]:
        out = copy.deepcopy(obj)
        out["apiVersion"] = request["desiredAPIVersion"]
        change(out)
        objects.append(out)
    return {"apiVersion": review["apiVersion"], "kind": "ConversionReview",
            "response": {"uid": request["uid"], "convertedObjects": objects, "result": {"status": "Success"}}}


def convert(respond: Callable[[Object], Any], objs: list[Object], versions: list[str] | None = None,
            to: str = "v2") -> tuple[list[Object], FakeClient]:
    client = FakeClient(respond)
    converter = WebhookConverter(crd(versions or ["v1"]), client, "v1")  # type: ignore[arg-type]
    return asyncio.run(converter.convert(objs, f"{GROUP}/{to}")), client


def failure(respond: Callable[[Object], Any], objs: list[Object] | None = None,
            versions: list[str] | None = None) -> str:
    with pytest.raises(ConversionFailed) as err:
        convert(respond, objs or [cron("a")], versions)
    assert err.value.code == 500 and err.value.reason == "InternalError"
    return err.value.message


def test_only_objects_of_another_version_are_sent_in_one_review() -> None:
    objs = [cron("a"), cron("b", "v2"), cron("c")]
    out, client = convert(success, objs)
    assert [o["apiVersion"] for o in out] == [f"{GROUP}/v2"] * 3
    assert out[1] is objs[1]  # already in v2: untouched
    assert len(client.sent) == 1
    review = client.sent[0]
    assert review["apiVersion"] == "apiextensions.k8s.io/v1" and review["kind"] == "ConversionReview"
    assert [o["metadata"]["name"] for o in review["request"]["objects"]] == ["a", "c"]
    assert review["request"]["desiredAPIVersion"] == f"{GROUP}/v2"


def test_no_call_when_every_object_is_in_the_wanted_version() -> None:
    objs = [cron("a", "v2")]
    out, client = convert(success, objs)
    assert out == objs and client.sent == []


def test_the_first_review_version_spoken_here_is_used() -> None:
    _, client = convert(success, [cron("a")], ["v9", "v1beta1", "v1"])
    assert client.sent[0]["apiVersion"] == "apiextensions.k8s.io/v1beta1"
    assert failure(success, versions=["v9"]) == "Internal error occurred: no supported conversion review versions"


def test_metadata_is_the_originals_but_labels_and_annotations() -> None:
    def change(obj: Object) -> None:
        obj["metadata"].update(resourceVersion="99", labels={"c": "d"}, annotations={"e": "f"}, generation=5)
    out, _ = convert(lambda r: success(r, change), [cron("a")])
    meta = out[0]["metadata"]
    assert meta["resourceVersion"] == "7" and "generation" not in meta
    assert meta["labels"] == {"c": "d"} and meta["annotations"] == {"e": "f"}


@pytest.mark.parametrize(("respond", "why"), [
    (lambda r: {**success(r), "response": {**success(r)["response"], "result": {"status": "Failure",
                                                                              "message": "nope"}}},
     "failed: nope"),
    (lambda r: {**success(r), "response": {**success(r)["response"], "result": {"status": "Failure"}}},
     "failed: response.result.status was 'Failure', not 'Success'"),
    (lambda r: {**success(r), "response": {**success(r)["response"], "uid": "other"}},
     'failed: expected response.uid="'),
    (lambda r: {**success(r), "kind": "AdmissionReview"},
     "failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got "
     "apiextensions.k8s.io/v1, Kind=AdmissionReview"),
    (lambda r: {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}, "failed: no response provided"),
    (lambda r: {**success(r), "response": {**success(r)["response"], "convertedObjects": []}},
     "returned 0 objects, expected 1"),
    (lambda r: success(r, lambda o: o.update(apiVersion=f"{GROUP}/v3")),
     f"returned invalid object at index 0: invalid groupVersion (expected {GROUP}/v2, received {GROUP}/v3)"),
    (lambda r: success(r, lambda o: o["metadata"].update(name="b")),
     "returned invalid object at index 0: must have the same name: a != b"),
    (lambda r: success(r, lambda o: o["metadata"].update(labels={"a": 1})),
     "returned invalid metadata in object at index 0: metadata.labels[a] must be a string"),
    (lambda r: success(r, lambda o: o.pop("metadata")),
     "returned invalid metadata in object at index 0: missing metadata in converted object"),
])
def test_bad_answers_are_refused_in_kubes_words(respond: Callable[[Object], Any], why: str) -> None:
    message = failure(respond)
    assert message.startswith(f"Internal error occurred: conversion webhook for {GROUP}/v1, Kind=CronTab ")
    assert why in message


def test_a_call_error_is_wrapped() -> None:
    def refuse(review: Object) -> Any:
        raise CallError('Post "https://hook/convert?timeout=30s": dial tcp 10.0.0.1:443: connect: connection refused')
    assert failure(refuse) == (f'Internal error occurred: conversion webhook for {GROUP}/v1, Kind=CronTab failed: '
                               f'Post "https://hook/convert?timeout=30s": dial tcp 10.0.0.1:443: connect: '
                               f'connection refused')
