"""The Priority admission plugin (``apiserver.admission.priority``) and PriorityClass validation
(``apiserver.registry.priorityclasses``): kube's defaults, rules and texts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from apimachinery.errors import Forbidden
from apiserver.admission.attributes import Attributes
from apiserver.admission.priority import Priority
from apiserver.authentication import UserInfo
from apiserver.registry.priorityclasses import SYSTEM_PRIORITY_CLASSES, PriorityClassStrategy

STRATEGY = PriorityClassStrategy()


class FakeSources:
    """The two reads the plugin makes, over a dict of PriorityClasses."""

    def __init__(self, *classes: dict[str, Any]) -> None:
        self.classes = {pc["metadata"]["name"]: pc for pc in [*SYSTEM_PRIORITY_CLASSES, *classes]}
        self.rv = 1

    def revision(self, group: str, resource: str) -> int:
        return self.rv

    def list(self, group: str, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return list(self.classes.values())

    def get(self, group: str, resource: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.classes.get(name)


def pc(name: str, value: int, **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "value": value, "preemptionPolicy": "PreemptLowerPriority", **fields}


def attrs(operation: str, resource: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> Attributes:
    group = "" if resource == "pods" else "scheduling.k8s.io"
    return Attributes(operation, group, "v1", resource, "", "Pod", "default", obj["metadata"]["name"],  # type: ignore[arg-type]
                      resource == "pods", UserInfo("admin"), obj=obj, old=old)


def admitted(sources: FakeSources, **spec: Any) -> dict[str, Any]:
    pod = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "x"}], **spec}}
    asyncio.run(Priority(sources).admit(attrs("CREATE", "pods", pod)))  # type: ignore[arg-type]
    return pod["spec"]


def refusal(sources: FakeSources, **spec: Any) -> str:
    with pytest.raises(Forbidden) as err:
        admitted(sources, **spec)
    return err.value.message


def test_a_pod_gets_its_class_priority_and_policy() -> None:
    sources = FakeSources(pc("gold", 1000, preemptionPolicy="Never"))
    spec = admitted(sources, priorityClassName="gold")
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
    assert admitted(sources, priorityClassName="system-node-critical")["priority"] == 2000001000


def test_without_a_class_the_global_default_or_zero() -> None:
    spec = admitted(FakeSources())
    assert (spec.get("priorityClassName"), spec["priority"], spec["preemptionPolicy"]) == \
        (None, 0, "PreemptLowerPriority")
    sources = FakeSources(pc("b", 20, globalDefault=True), pc("a", 10, globalDefault=True))
    spec = admitted(sources)
    assert (spec["priorityClassName"], spec["priority"]) == ("a", 10)  # the lowest of several defaults


def test_kube_refusals() -> None:
    sources = FakeSources(pc("gold", 1000))
    assert refusal(sources, priorityClassName="nope") == \
        'pods "web" is forbidden: no PriorityClass with name nope was found'
    assert refusal(sources, priorityClassName="gold", priority=5) == (
        'pods "web" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority '
        "admission controller computed 1000 from the given PriorityClass name")
    assert refusal(sources, priorityClassName="gold", preemptionPolicy="Never") == (
        'pods "web" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; '
        "priority admission controller computed PreemptLowerPriority from the given PriorityClass name")
    assert admitted(sources, priorityClassName="gold", priority=1000)["priority"] == 1000


def test_an_update_keeps_the_stored_priority() -> None:
    old = {"metadata": {"name": "web"}, "spec": {"priority": 7, "preemptionPolicy": "Never"}}
    new: dict[str, Any] = {"metadata": {"name": "web"}, "spec": {}}
    a = attrs("UPDATE", "pods", new, old)
    asyncio.run(Priority(FakeSources()).admit(a))  # type: ignore[arg-type]
    assert a.obj is not None and a.obj["spec"] == {"priority": 7, "preemptionPolicy": "Never"}
    assert new["spec"] == {}  # replaced, not changed: the store's retry loop reuses its object


def test_only_one_global_default() -> None:
    plugin = Priority(FakeSources(pc("a", 10, globalDefault=True)))  # type: ignore[arg-type]
    with pytest.raises(Forbidden) as err:
        asyncio.run(plugin.validate(attrs("CREATE", "priorityclasses", pc("b", 5, globalDefault=True))))
    assert err.value.message == ('priorityclasses.scheduling.k8s.io "b" is forbidden: PriorityClass a is already '
                                 "marked as default. Only one default can exist")
    asyncio.run(plugin.validate(attrs("UPDATE", "priorityclasses", pc("a", 10, globalDefault=True))))


def test_priority_class_validation() -> None:
    def problems(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
        STRATEGY.prepare_for_create(obj)
        causes = STRATEGY.validate(obj) if old is None else STRATEGY.validate_update(obj, old)
        return [f"{c.field}: {c.message}" for c in causes]

    assert problems({"metadata": {"name": "system-mine"}, "value": 5}) == [
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
        "error: system-mine is not a known system priority class"]
    assert problems({"metadata": {"name": "system-node-critical"}, "value": 5}) == [
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
        "error: value of system-node-critical PriorityClass must be 2000001000"]
    assert problems({"metadata": {"name": "big"}, "value": 1000000001}) == [
        "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
    assert problems({"metadata": {"name": "p"}, "value": 1, "preemptionPolicy": "Sometimes"}) == [
        'preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"']
    old = pc("p", 1)
    assert problems({"metadata": {"name": "p"}, "value": 2, "preemptionPolicy": "Never"}, old) == [
        "value: Forbidden: may not be changed in an update.",
        'preemptionPolicy: Invalid value: "Never": field is immutable']
    assert STRATEGY.forbid_delete("system-node-critical") == "this is a system priority class and cannot be deleted"
    assert STRATEGY.forbid_delete("gold") is None
