"""DefaultPreemption: victims (lower priority only, most important reprieved first), the node kube-scheduler
would pick, and the PostFilter note FailedScheduling carries when preemption cannot help."""

from __future__ import annotations

from typing import Any

from scheduler.cache import Cache
from scheduler.config import Profile
from scheduler.plugins.defaultpreemption import Candidate, pick_one_node
from scheduler.scheduler import Runner
from support.builders import make_node, make_pod


def pod(name: str, cpu: str, priority: int = 0, node: str | None = None, **spec: Any) -> dict[str, Any]:
    builder = make_pod(name).namespace("d").requests(cpu=cpu)
    if node:
        builder = builder.node(node)
    p = builder.build()
    p["spec"].update(priority=priority, **spec)
    p["status"] = {"phase": "Running"}
    return p


def cluster(*nodes: dict[str, Any], pods: tuple[dict[str, Any], ...] = ()) -> Cache:
    cache = Cache()
    for node in nodes:
        cache.add_node(node)
    for p in pods:
        cache.add_pod(p)
    return cache


def preempt(cache: Cache, incoming: dict[str, Any]) -> tuple[str, Any]:
    runner = Runner(Profile())
    attempt = runner.find_node(incoming, cache)
    assert attempt.node is None
    return attempt.message, runner.preempt(incoming, cache, attempt)


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_victims_are_lower_priority_pods_not_reprieved() -> None:
    cache = cluster(make_node("n1", cpu="4"), pods=(
        pod("a", "1", priority=1, node="n1"), pod("b", "2", priority=5, node="n1"),
        pod("c", "1", priority=20, node="n1")))
    _, result = preempt(cache, pod("p", "2", priority=10))
    # Without a and b 3 cpu are free; b (more important) is tried back first and leaves too little; a fits back.
    assert result.candidate.node == "n1" and names(result.candidate.victims) == ["b"]


def test_the_node_with_the_least_important_victims_wins() -> None:
    cache = cluster(make_node("n1", cpu="2"), make_node("n2", cpu="2"), make_node("n3", cpu="2"), pods=(
        pod("x", "2", priority=5, node="n1"),
        pod("y1", "1", priority=1, node="n2"), pod("y2", "1", priority=1, node="n2"),
        pod("z", "2", priority=1, node="n3")))
    _, result = preempt(cache, pod("p", "2", priority=10))
    assert result.candidate.node == "n3"  # lowest highest priority (1 < 5), then fewest victims (1 < 2)
    assert names(result.candidate.victims) == ["z"]


def test_pick_one_node_prefers_the_latest_started_highest_priority_victims() -> None:
    early = {"metadata": {"name": "e"}, "spec": {"priority": 1}, "status": {"startTime": "2024-01-01T00:00:00Z"}}
    late = {"metadata": {"name": "l"}, "spec": {"priority": 1}, "status": {"startTime": "2024-06-01T00:00:00Z"}}
    assert pick_one_node([Candidate("n1", [early]), Candidate("n2", [late])]).node == "n2"


def test_messages_when_preemption_cannot_help() -> None:
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    tainted = make_node("n3", cpu="8")
    tainted["spec"] = {"taints": [taint]}
    cache = cluster(make_node("n1", cpu="1"), make_node("n2", cpu="1"), tainted,
                    pods=(pod("same", "1", priority=10, node="n1"),))
    message, result = preempt(cache, pod("p", "2", priority=10))
    assert result.candidate is None
    # n1's only pod is not of lower priority; n2 has none; the taint is not something preemption can remove.
    assert result.message == ("0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
                              "2 No preemption victims found for incoming pod.")
    assert message == "0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu."
    # Removing every lower-priority pod is still not enough: the filter's own reason stands.
    cache = cluster(make_node("n1", cpu="1"), pods=(pod("low", "1", priority=0, node="n1"),))
    _, result = preempt(cache, pod("p", "2", priority=10))
    assert result.message == "0/1 nodes are available: 1 Insufficient cpu."


def test_preemption_policy_never_and_terminating_victims() -> None:
    cache = cluster(make_node("n1", cpu="1"), pods=(pod("low", "1", priority=0, node="n1"),))
    _, result = preempt(cache, pod("p", "1", priority=10, preemptionPolicy="Never"))
    assert result.candidate is None and result.message == "not eligible due to preemptionPolicy=Never."
    terminating = pod("low", "1", priority=0, node="n1")
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    cache = cluster(make_node("n1", cpu="1"), pods=(terminating,))
    waiting = pod("p", "1", priority=10)
    waiting["status"] = {"nominatedNodeName": "n1"}
    _, result = preempt(cache, waiting)
    assert result.message == "not eligible due to a terminating pod on the nominated node."
