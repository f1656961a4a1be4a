"""The nominator (kube-scheduler's rules for adding, updating and dropping nominations), the queue keeping it, and
the runner keeping nominated pods' room (RunFilterPluginsWithNominatedPods: both passes must succeed)."""

from __future__ import annotations

from typing import Any

from scheduler.cache import Cache
from scheduler.config import Profile
from scheduler.framework import Handle
from scheduler.nominator import Nominator
from scheduler.queue import SchedulingQueue
from scheduler.scheduler import Runner
from support.builders import make_node, make_pod


def pod(name: str, cpu: str = "1", priority: int = 0, nominated: str = "", **spec: Any) -> dict[str, Any]:
    p = make_pod(name).namespace("d").requests(cpu=cpu).build()
    p["spec"].update(priority=priority, **spec)
    p["status"] = {"nominatedNodeName": nominated} if nominated else {}
    return p


def test_add_takes_the_decision_or_the_pods_status() -> None:
    n = Nominator()
    n.add(pod("a", nominated="n1"))  # no decision: the status says
    n.add(pod("b"), "n2")  # the scheduler's decision
    n.add(pod("c"))  # neither: not nominated
    assert n.node_of("d/a") == "n1" and n.node_of("d/b") == "n2" and n.node_of("d/c") is None
    n.add(pod("a", nominated="n1"), "n2")  # a pod is nominated to one node at most
    assert [p["metadata"]["name"] for p in n.nominated_pods_for_node("n2")] == ["b", "a"]
    assert n.nominated_pods_for_node("n1") == [] and sorted(n.nodes()) == ["n2"]
    n.add(pod("a"), "")  # "" clears
    assert n.node_of("d/a") is None and len(n) == 1
    n.add(pod("e", nominated="n1", nodeName="n1"))  # bound pods are never nominated
    assert n.node_of("d/e") is None


def test_update_keeps_an_in_memory_nomination_until_the_status_speaks() -> None:
    n = Nominator()
    n.add(pod("a"), "n1")  # decided; the status write has not arrived yet
    n.update(pod("a"), pod("a", cpu="2"))  # an update without nominatedNodeName on either side keeps it
    assert n.node_of("d/a") == "n1"
    assert n.nominated_pods_for_node("n1")[0]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "2"
    n.update(pod("a"), pod("a", nominated="n2"))  # the status names another node
    assert n.node_of("d/a") == "n2"
    n.update(pod("a", nominated="n2"), pod("a"))  # the status cleared it
    assert n.node_of("d/a") is None


def test_the_queue_keeps_the_nominator() -> None:
    q = SchedulingQueue()
    q.add(pod("a", nominated="n1"))
    assert q.nominator.node_of("d/a") == "n1"
    q.update(pod("a", nominated="n2"))
    assert q.nominator.node_of("d/a") == "n2"
    q.delete("d/a")  # deleted or bound
    assert q.nominator.node_of("d/a") is None


def cluster(cpu: str = "2") -> Cache:
    cache = Cache()
    cache.add_node(make_node("n1", cpu=cpu))
    return cache


def test_nominated_pods_of_equal_or_higher_priority_keep_their_room() -> None:
    cache = cluster()
    nominator = Nominator()
    nominator.add(pod("preemptor", cpu="2", priority=10), "n1")
    runner = Runner(Profile(), Handle(nominator=nominator))
    for priority in (5, 10):
        attempt = runner.find_node(pod("late", priority=priority), cache)
        assert attempt.node is None and attempt.message == "0/1 nodes are available: 1 Insufficient cpu."
        assert attempt.unschedulable_plugins() == {"NodeResourcesFit"}
        reference = runner.find_node_reference(pod("late", priority=priority), cache)
        assert reference.node is None and reference.message == attempt.message
    assert runner.find_node(pod("urgent", priority=11), cache).node == "n1"  # more important: not held back
    # The preemptor itself is not kept out by its own nomination.
    assert runner.find_node(pod("preemptor", cpu="2", priority=10), cache).node == "n1"
    assert Runner(Profile()).find_node(pod("late", priority=5), cache).node == "n1"  # without the nominator


def test_both_passes_must_succeed() -> None:
    """With the nominated pod added the affinity would hold, but that pod is not running yet: the second pass,
    without it, rejects the node, as Kubernetes does (affinity must not rely on a pod that may land elsewhere)."""
    cache = cluster(cpu="4")
    nominator = Nominator()
    leader = pod("leader", priority=10)
    leader["metadata"]["labels"] = {"app": "db"}
    nominator.add(leader, "n1")
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    follower = pod("follower", priority=0, affinity=affinity)
    runner = Runner(Profile(), Handle(nominator=nominator))
    attempt = runner.find_node(follower, cache)
    assert attempt.node is None and "didn't match pod affinity rules" in attempt.message
    leader["spec"]["nodeName"] = "n1"
    cache.add_pod(leader)
    assert runner.find_node(follower, cache).node == "n1"
