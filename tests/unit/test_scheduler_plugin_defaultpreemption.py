"""DefaultPreemption: victims (lower priority only, most important reprieved first), the node kube-scheduler
would pick, and the PostFilter note FailedScheduling carries when preemption cannot help."""

from __future__ import annotations

from typing import Any

from scheduler.cache import Cache
from scheduler.config import Profile
from scheduler.framework import Handle
from scheduler.nominator import Nominator
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


def preempt(cache: Cache, incoming: dict[str, Any], nominator: Nominator | None = None) -> tuple[str, Any]:
    runner = Runner(Profile(), Handle(nominator=nominator))
    attempt = runner.find_node(incoming, cache)
    assert attempt.node is None
    return attempt.message, runner.post_filter(incoming, cache, attempt)


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_victims_are_lower_priority_pods_not_reprieved() -> None:
    cache = cluster(make_node("n1", cpu="4"), pods=(
        pod("a", "1", priority=1, node="n1"), pod("b", "2", priority=5, node="n1"),
        pod("c", "1", priority=20, node="n1")))
    _, result = preempt(cache, pod("p", "2", priority=10))
    # Without a and b 3 cpu are free; b (more important) is tried back first and leaves too little; a fits back.
    assert result.candidate.node == "n1" and names(result.candidate.victims) == ["b"]
    assert result.nominated_node == "n1"


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
    assert result.message == ("preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
                              "2 No preemption victims found for incoming pod.")
    assert result.nominated_node == ""  # no candidate: an earlier nomination is cleared
    assert message == "0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu."
    # Removing every lower-priority pod is still not enough: the filter's own reason stands.
    cache = cluster(make_node("n1", cpu="1"), pods=(pod("low", "1", priority=0, node="n1"),))
    _, result = preempt(cache, pod("p", "2", priority=10))
    assert result.message == "preemption: 0/1 nodes are available: 1 Insufficient cpu."


def test_preemption_policy_never_and_terminating_victims() -> None:
    cache = cluster(make_node("n1", cpu="1"), pods=(pod("low", "1", priority=0, node="n1"),))
    _, result = preempt(cache, pod("p", "1", priority=10, preemptionPolicy="Never"))
    assert result.candidate is None and result.message == "preemption: not eligible due to preemptionPolicy=Never."
    assert result.nominated_node is None  # not eligible: the nomination is left as it is
    terminating = pod("low", "1", priority=0, node="n1")
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    cache = cluster(make_node("n1", cpu="1"), pods=(terminating,))
    waiting = pod("p", "1", priority=10)
    waiting["status"] = {"nominatedNodeName": "n1"}
    _, result = preempt(cache, waiting)
    assert result.message == "preemption: not eligible due to a terminating pod on the nominated node."


def test_victims_leave_room_for_pods_nominated_with_equal_or_higher_priority() -> None:
    """SelectVictimsOnNode filters with the node's nominated pods (RunFilterPluginsWithNominatedPods): a pod
    nominated to n1 that is as important as the preemptor keeps its room, so n1 is no candidate any more."""
    cache = cluster(make_node("n1", cpu="2"), pods=(pod("low", "1", priority=0, node="n1"),
                                                    pod("low2", "1", priority=0, node="n1")))
    _, result = preempt(cache, pod("p", "2", priority=10))
    assert result.candidate.node == "n1" and sorted(names(result.candidate.victims)) == ["low", "low2"]
    nominator = Nominator()
    nominator.add(pod("first", "1", priority=10), "n1")
    _, result = preempt(cache, pod("p", "2", priority=10), nominator)
    assert result.candidate is None and result.message == "preemption: 0/1 nodes are available: 1 Insufficient cpu."
    lower = Nominator()
    lower.add(pod("lesser", "1", priority=5), "n1")  # less important nominations do not count
    _, result = preempt(cache, pod("p", "2", priority=10), lower)
    assert result.candidate.node == "n1"


def test_a_profile_without_post_filters_does_not_preempt() -> None:
    cache = cluster(make_node("n1", cpu="1"), pods=(pod("low", "1", priority=0, node="n1"),))
    runner = Runner(Profile(post_filters=()))
    incoming = pod("p", "1", priority=10)
    attempt = runner.find_node(incoming, cache)
    assert attempt.node is None and runner.post_filter(incoming, cache, attempt) is None
