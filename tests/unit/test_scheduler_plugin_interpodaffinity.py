"""InterPodAffinity: required (anti-)affinity filter, existing pods' anti-affinity, preferred-term scores."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import Code, CycleState, NodeInfo
from scheduler.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    InterPodAffinity,
)
from support.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def pod(name: str, ns: str = "d", labels: dict[str, str] | None = None, **affinity: Any) -> dict[str, Any]:
    p = make_pod(name).namespace(ns).label(**(labels or {})).build()
    if affinity:
        p["spec"]["affinity"] = affinity
    return p


def term(topology_key: str = HOST, namespaces: list[str] | None = None, namespace_selector: Any = None,
         **selector: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": topology_key, "labelSelector": selector}
    if namespaces is not None:
        t["namespaces"] = namespaces
    if namespace_selector is not None:
        t["namespaceSelector"] = namespace_selector
    return t


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": w, "podAffinityTerm": t}
                                                                 for w, t in weighted]}


def cluster(*placed: tuple[str, dict[str, Any]]) -> list[NodeInfo]:
    """node1 and node2 in zone a, node3 in zone b; ``placed`` puts pods on nodes by name."""
    nodes = {n: NodeInfo(make_node(n, {ZONE: z})) for n, z in (("node1", "a"), ("node2", "a"), ("node3", "b"))}
    for node_name, p in placed:
        nodes[node_name].add_pod(f"{p['metadata']['namespace']}/{p['metadata']['name']}", p)
    return list(nodes.values())


def filter_all(incoming: dict[str, Any], nodes: list[NodeInfo]) -> dict[str, tuple[str, ...]]:
    plugin, state = InterPodAffinity(), CycleState(nodes)
    assert plugin.pre_filter(state, incoming, nodes).ok
    return {n.name: plugin.filter(state, incoming, n).reasons for n in nodes}


WEB = {"matchLabels": {"app": "web"}}
AFFINE, ANTI, EXISTING = (ERR_REASON_AFFINITY_RULES_NOT_MATCH,), (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,), \
    (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,)
OK: tuple[str, ...] = ()


@pytest.mark.parametrize("incoming,placed,expected", [
    # required affinity to app=web by hostname: only the node running web
    (pod("p", podAffinity=required(term(HOST, **WEB))), [("node1", pod("w", labels={"app": "web"}))],
     {"node1": OK, "node2": AFFINE, "node3": AFFINE}),
    # by zone: every node of web's zone
    (pod("p", podAffinity=required(term(ZONE, **WEB))), [("node1", pod("w", labels={"app": "web"}))],
     {"node1": OK, "node2": OK, "node3": AFFINE}),
    # no web pod anywhere and p is not web itself: nowhere
    (pod("p", podAffinity=required(term(ZONE, **WEB))), [],
     {"node1": AFFINE, "node2": AFFINE, "node3": AFFINE}),
    # the first pod of a self-affine group may go anywhere that has the topology key
    (pod("p", labels={"app": "web"}, podAffinity=required(term(ZONE, **WEB))), [],
     {"node1": OK, "node2": OK, "node3": OK}),
    # ... but not once a matching pod exists elsewhere
    (pod("p", labels={"app": "web"}, podAffinity=required(term(ZONE, **WEB))),
     [("node3", pod("w", labels={"app": "web"}))],
     {"node1": AFFINE, "node2": AFFINE, "node3": OK}),
    # a node without the topology key never satisfies affinity
    (pod("p", labels={"app": "web"}, podAffinity=required(term("rack", **WEB))), [],
     {"node1": AFFINE, "node2": AFFINE, "node3": AFFINE}),
    # pods in another namespace do not count, unless the term names it
    (pod("p", podAffinity=required(term(HOST, **WEB))), [("node1", pod("w", ns="other", labels={"app": "web"}))],
     {"node1": AFFINE, "node2": AFFINE, "node3": AFFINE}),
    (pod("p", podAffinity=required(term(HOST, namespaces=["other"], **WEB))),
     [("node1", pod("w", ns="other", labels={"app": "web"}))], {"node1": OK, "node2": AFFINE, "node3": AFFINE}),
    # namespaceSelector {} means every namespace; a label selector matches namespace labels
    (pod("p", podAffinity=required(term(HOST, namespace_selector={}, **WEB))),
     [("node2", pod("w", ns="other", labels={"app": "web"}))], {"node1": AFFINE, "node2": OK, "node3": AFFINE}),
    (pod("p", podAffinity=required(term(HOST, namespace_selector={"matchLabels": {
        "kubernetes.io/metadata.name": "other"}}, **WEB))),
     [("node2", pod("w", ns="other", labels={"app": "web"}))], {"node1": AFFINE, "node2": OK, "node3": AFFINE}),
    # two affinity terms: a pod must match both to count
    (pod("p", podAffinity=required(term(HOST, **WEB), term(ZONE, matchLabels={"tier": "front"}))),
     [("node1", pod("w", labels={"app": "web"})), ("node3", pod("x", labels={"app": "web", "tier": "front"}))],
     {"node1": AFFINE, "node2": AFFINE, "node3": OK}),
    # anti-affinity by hostname: not beside web
    (pod("p", podAntiAffinity=required(term(HOST, **WEB))), [("node1", pod("w", labels={"app": "web"}))],
     {"node1": ANTI, "node2": OK, "node3": OK}),
    # anti-affinity by zone: not in web's zone
    (pod("p", podAntiAffinity=required(term(ZONE, **WEB))), [("node2", pod("w", labels={"app": "web"}))],
     {"node1": ANTI, "node2": ANTI, "node3": OK}),
    # matchExpressions in the selector: In / NotIn / Exists / DoesNotExist
    (pod("p", podAntiAffinity=required(term(HOST, matchExpressions=[
        {"key": "app", "operator": "In", "values": ["web", "api"]}]))),
     [("node1", pod("w", labels={"app": "api"})), ("node2", pod("x", labels={"app": "db"}))],
     {"node1": ANTI, "node2": OK, "node3": OK}),
    (pod("p", podAntiAffinity=required(term(HOST, matchExpressions=[
        {"key": "app", "operator": "NotIn", "values": ["web"]}]))),
     [("node1", pod("w", labels={"app": "web"})), ("node2", pod("x", labels={"app": "db"}))],
     {"node1": OK, "node2": ANTI, "node3": OK}),
    (pod("p", podAntiAffinity=required(term(HOST, matchExpressions=[{"key": "app", "operator": "Exists"}]))),
     [("node1", pod("w", labels={"app": "web"})), ("node2", pod("x"))], {"node1": ANTI, "node2": OK, "node3": OK}),
    (pod("p", podAntiAffinity=required(term(HOST, matchExpressions=[{"key": "app", "operator": "DoesNotExist"}]))),
     [("node1", pod("w", labels={"app": "web"})), ("node2", pod("x"))], {"node1": OK, "node2": ANTI, "node3": OK}),
    # an existing pod's anti-affinity keeps the incoming pod away from its zone
    (pod("p", labels={"app": "web"}), [("node3", pod("e", podAntiAffinity=required(term(ZONE, **WEB))))],
     {"node1": OK, "node2": OK, "node3": EXISTING}),
    (pod("p", labels={"app": "db"}), [("node3", pod("e", podAntiAffinity=required(term(ZONE, **WEB))))],
     {"node1": OK, "node2": OK, "node3": OK}),
])
def test_filter(incoming: dict[str, Any], placed: list[tuple[str, dict[str, Any]]],
                expected: dict[str, tuple[str, ...]]) -> None:
    assert filter_all(incoming, cluster(*placed)) == expected


def test_status_codes_as_kubernetes() -> None:
    nodes = cluster(("node1", pod("w", labels={"app": "web"})))
    plugin, state = InterPodAffinity(), CycleState(nodes)
    affine = pod("p", podAffinity=required(term(HOST, matchLabels={"app": "none"})))
    plugin.pre_filter(state, affine, nodes)
    assert plugin.filter(state, affine, nodes[0]).code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    state = CycleState(nodes)
    anti = pod("p", podAntiAffinity=required(term(HOST, **WEB)))
    plugin.pre_filter(state, anti, nodes)
    assert plugin.filter(state, anti, nodes[0]).code is Code.UNSCHEDULABLE


def test_filter_without_pre_filter_computes_it() -> None:
    nodes = cluster(("node1", pod("w", labels={"app": "web"})))
    plugin, incoming = InterPodAffinity(), pod("p", podAntiAffinity=required(term(HOST, **WEB)))
    assert plugin.filter(CycleState(nodes), incoming, nodes[0]).reasons == ANTI


def scores(incoming: dict[str, Any], nodes: list[NodeInfo]) -> tuple[dict[str, int], dict[str, int]]:
    plugin, state = InterPodAffinity(), CycleState(nodes)
    plugin.pre_score(state, incoming, nodes)
    raw = {n.name: plugin.score(state, incoming, n) for n in nodes}
    return raw, plugin.normalize(state, incoming, dict(raw))


def test_preferred_affinity_weights_and_normalisation() -> None:
    incoming = pod("p", podAffinity=preferred((10, term(ZONE, **WEB)), (5, term(HOST, matchLabels={"app": "db"}))))
    nodes = cluster(("node1", pod("w", labels={"app": "web"})), ("node3", pod("d", labels={"app": "db"})))
    raw, normalized = scores(incoming, nodes)
    assert raw == {"node1": 10, "node2": 10, "node3": 5}
    assert normalized == {"node1": 100, "node2": 100, "node3": 50}


def test_preferred_anti_affinity_subtracts() -> None:
    incoming = pod("p", podAntiAffinity=preferred((20, term(HOST, **WEB))))
    raw, normalized = scores(incoming, cluster(("node1", pod("w", labels={"app": "web"}))))
    assert raw == {"node1": -20, "node2": 0, "node3": 0}
    assert normalized == {"node1": 0, "node2": 100, "node3": 100}


def test_existing_pods_terms_count_for_the_incoming_pod() -> None:
    """Existing required affinity adds hardPodAffinityWeight 1; existing preferred terms add/subtract weights."""
    placed = [("node1", pod("a", podAffinity=required(term(HOST, **WEB)))),
              ("node2", pod("b", podAffinity=preferred((7, term(ZONE, **WEB))))),
              ("node3", pod("c", podAntiAffinity=preferred((3, term(ZONE, **WEB)))))]
    raw, normalized = scores(pod("p", labels={"app": "web"}), cluster(*placed))
    assert raw == {"node1": 8, "node2": 7, "node3": -3}
    assert normalized == {"node1": 100, "node2": 90, "node3": 0}


def test_no_terms_anywhere_leaves_scores_zero() -> None:
    raw, normalized = scores(pod("p"), cluster(("node1", pod("w", labels={"app": "web"}))))
    assert raw == normalized == {"node1": 0, "node2": 0, "node3": 0}


def test_assigned_pod_add_hint() -> None:
    from scheduler.plugins.interpodaffinity import assigned_pod_add_may_help
    waiting = pod("w", podAffinity=required(term(**WEB), term(ZONE, matchLabels={"tier": "front"})))
    assert assigned_pod_add_may_help(waiting, pod("x", labels={"app": "web", "tier": "front"}))
    assert not assigned_pod_add_may_help(waiting, pod("x", labels={"app": "web"}))  # must match all terms
    assert not assigned_pod_add_may_help(waiting, pod("x", "other", labels={"app": "web", "tier": "front"}))
    # Adding a pod never helps anti-affinity, nor a pod without required affinity.
    anti = pod("w", podAntiAffinity=required(term(**WEB)))
    assert not assigned_pod_add_may_help(anti, pod("x", labels={"app": "web"}))
