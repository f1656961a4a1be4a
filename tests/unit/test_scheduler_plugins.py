"""Table-driven tests of the scheduler's filter and score plugins (pure functions over NodeInfo)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import NodeInfo
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from apimachinery.taints import tolerates
from scheduler.plugins.tainttoleration import TaintToleration
from scheduler.scheduler import failure_message


def node(name: str = "n1", labels: dict[str, str] | None = None, cpu: str = "4", memory: str = "8Gi",
         taints: list[dict[str, str]] | None = None, unschedulable: bool = False) -> NodeInfo:
    return NodeInfo({"metadata": {"name": name, "labels": labels or {}},
                     "spec": {"taints": taints or [], "unschedulable": unschedulable},
                     "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}})


def pod(cpu: str | None = None, memory: str | None = None, **spec: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return {"metadata": {"name": "p", "namespace": "d"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}}


@pytest.mark.parametrize("toleration,taint,expected", [
    ({"key": "check", "operator": "Equal", "value": "mycheck", "effect": "NoExecute"},
     {"key": "check", "value": "mycheck", "effect": "NoExecute"}, True),
    ({"key": "check", "operator": "Equal", "value": "other", "effect": "NoExecute"},
     {"key": "check", "value": "mycheck", "effect": "NoExecute"}, False),
    ({"key": "check", "operator": "Exists"}, {"key": "check", "value": "x", "effect": "NoSchedule"}, True),
    ({"operator": "Exists"}, {"key": "anything", "value": "x", "effect": "NoExecute"}, True),
    ({"key": "check", "operator": "Exists", "effect": "NoSchedule"},
     {"key": "check", "effect": "NoExecute"}, False),
    ({"key": "", "operator": "Equal"}, {"key": "a", "effect": "NoSchedule"}, False),
])
def test_toleration_matching(toleration: dict[str, str], taint: dict[str, str], expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


def test_taints_filter_and_prefer() -> None:
    plugin = TaintToleration()
    tainted = node(taints=[{"key": "check", "value": "mycheck", "effect": "NoExecute"}])
    status = plugin.filter(pod(), tainted)
    assert not status.ok and status.reasons == ("node(s) had untolerated taint {check: mycheck}",)
    tolerant = pod(tolerations=[{"operator": "Exists"}])
    assert plugin.filter(tolerant, tainted).ok
    soft = node(taints=[{"key": "master", "effect": "PreferNoSchedule"}])
    assert plugin.filter(pod(), soft).ok and plugin.score(pod(), soft) == 1


@pytest.mark.parametrize("operator,values,labels,expected", [
    ("In", ["a", "b"], {"feng": "a"}, True),
    ("In", ["b"], {"feng": "a"}, False),
    ("NotIn", ["b"], {"feng": "a"}, True),
    ("Exists", None, {"feng": "a"}, True),
    ("DoesNotExist", None, {"feng": "a"}, False),
    ("Gt", ["5"], {"feng": "7"}, True),
    ("Lt", ["5"], {"feng": "7"}, False),
])
def test_required_node_affinity_operators(operator: str, values: list[str] | None, labels: dict[str, str],
                                          expected: bool) -> None:
    expression: dict[str, Any] = {"key": "feng", "operator": operator}
    if values is not None:
        expression["values"] = values
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expression]}]}}}
    assert NodeAffinity().filter(pod(affinity=affinity), node(labels=labels)).ok is expected


def test_node_selector_and_preferred_weights() -> None:
    plugin = NodeAffinity()
    assert plugin.filter(pod(nodeSelector={"feng": "a"}), node(labels={"feng": "a"})).ok
    assert not plugin.filter(pod(nodeSelector={"feng": "a"}), node(labels={"feng": "b"})).ok
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 20, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}},
        {"weight": 5, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In",
                                                      "values": ["n2"]}]}}]}}
    assert plugin.score(pod(affinity=preferred), node("n1", {"disk": "ssd"})) == 20
    assert plugin.score(pod(affinity=preferred), node("n2", {"disk": "ssd"})) == 25


def test_resources_fit_and_messages() -> None:
    plugin = NodeResourcesFit()
    small = node(cpu="1", memory="1Gi")
    status = plugin.filter(pod(cpu="2", memory="2Gi"), small)
    assert status.reasons == ("Insufficient cpu", "Insufficient memory")
    assert plugin.filter(pod(cpu="500m", memory="512Mi"), small).ok


def test_balanced_allocation_seed_example() -> None:
    """The seed's example: after placing the pod, node01 would be at cpu 20 % / memory 60 %, node02 at 50 % /
    50 %: BalancedResourceAllocation prefers node02."""
    plugin = NodeResourcesBalancedAllocation()
    node01 = node("node01", cpu="10", memory="10Gi")
    node01.add_pod("d/a", pod(cpu="1", memory="5Gi"))
    node02 = node("node02", cpu="10", memory="10Gi")
    node02.add_pod("d/b", pod(cpu="4", memory="4Gi"))
    incoming = pod(cpu="1", memory="1Gi")
    assert plugin.score(incoming, node02) > plugin.score(incoming, node01)


def test_host_ports_and_cordon() -> None:
    taken = node()
    occupant = pod()
    occupant["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    taken.add_pod("d/x", occupant)
    assert not NodePorts().filter(occupant, taken).ok
    assert NodePorts().filter(occupant, node()).ok
    assert not NodeUnschedulable().filter(pod(), node(unschedulable=True)).ok
    tolerant = pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                 "effect": "NoSchedule"}])
    assert NodeUnschedulable().filter(tolerant, node(unschedulable=True)).ok


def test_failure_message_reads_like_kubernetes() -> None:
    from scheduler.framework import unschedulable

    statuses = {"node01": unschedulable("node(s) had untolerated taint {check: mycheck}"),
                "node02": unschedulable("Insufficient cpu"), "node03": unschedulable("Insufficient cpu")}
    assert failure_message(3, statuses) == \
        "0/3 nodes are available: 1 node(s) had untolerated taint {check: mycheck}, 2 Insufficient cpu."
