"""PodTopologySpread: hard constraints filter (maxSkew, minDomains, missing labels); soft ones and the system
defaults (pods of one owner over hostnames and zones) score."""

from __future__ import annotations

import math
from typing import Any

import pytest

from scheduler.framework import Code, CycleState, NodeInfo
from scheduler.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
)
from support.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
WEB = {"matchLabels": {"app": "web"}}


def pod(name: str, ns: str = "d", labels: dict[str, str] | None = None, owner: str | None = None,
        constraints: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    p = make_pod(name).namespace(ns).label(**(labels or {})).build()
    if owner:
        p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                             "uid": f"uid-{owner}", "controller": True}]
    if constraints:
        p["spec"]["topologySpreadConstraints"] = constraints
    p["spec"].update(spec)
    return p


def constraint(key: str = ZONE, max_skew: int = 1, when: str = "DoNotSchedule", selector: Any = None,
               **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": WEB if selector is None else selector, **extra}


def cluster(placed: dict[str, int], zones: dict[str, str | None] | None = None, **pod_kwargs: Any) -> list[NodeInfo]:
    """Nodes with zones (default node1, node2 in a; node3 in b) and ``placed[node]`` web pods on each."""
    zones = zones or {"node1": "a", "node2": "a", "node3": "b"}
    nodes = []
    for name, zone in zones.items():
        info = NodeInfo(make_node(name, {ZONE: zone} if zone else {}))
        for i in range(placed.get(name, 0)):
            info.add_pod(f"d/{name}-{i}", pod(f"{name}-{i}", labels={"app": "web"}, **pod_kwargs))
        nodes.append(info)
    return nodes


def filter_all(incoming: dict[str, Any], nodes: list[NodeInfo]) -> dict[str, tuple[str, ...]]:
    plugin, state = PodTopologySpread(), CycleState(nodes)
    assert plugin.pre_filter(state, incoming, nodes).ok
    return {n.name: plugin.filter(state, incoming, n).reasons for n in nodes}


SKEW, MISSING, OK = (ERR_REASON_CONSTRAINTS_NOT_MATCH,), (ERR_REASON_NODE_LABEL_NOT_MATCH,), ()
WEB_POD = {"labels": {"app": "web"}}


@pytest.mark.parametrize("incoming,nodes,expected", [
    # zone a holds 2 web pods, zone b none: a third in a would make the skew 3 - 0 > 1
    (pod("p", constraints=[constraint()], **WEB_POD), cluster({"node1": 1, "node2": 1}),
     {"node1": SKEW, "node2": SKEW, "node3": OK}),
    # maxSkew 2 allows a skew of 2 but not 3
    (pod("p", constraints=[constraint(max_skew=2)], **WEB_POD), cluster({"node1": 1}),
     {"node1": OK, "node2": OK, "node3": OK}),
    (pod("p", constraints=[constraint(max_skew=2)], **WEB_POD), cluster({"node1": 2}),
     {"node1": SKEW, "node2": SKEW, "node3": OK}),
    # per hostname
    (pod("p", constraints=[constraint(HOST)], **WEB_POD), cluster({"node1": 1, "node3": 1}),
     {"node1": SKEW, "node2": OK, "node3": SKEW}),
    # a pod that does not match its own selector adds nothing to the skew
    (pod("p", constraints=[constraint()]), cluster({"node1": 1}), {"node1": OK, "node2": OK, "node3": OK}),
    # a node without the topology key is out (unresolvably)
    (pod("p", constraints=[constraint()], **WEB_POD), cluster({}, zones={"node1": "a", "node4": None}),
     {"node1": OK, "node4": MISSING}),
    # minDomains 3 with only 2 zones: the global minimum counts as 0
    (pod("p", constraints=[constraint(minDomains=3)], **WEB_POD), cluster({"node1": 1, "node3": 1}),
     {"node1": SKEW, "node2": SKEW, "node3": SKEW}),
    # pods in other namespaces are not counted
    (pod("p", constraints=[constraint()], **WEB_POD), cluster({"node1": 2}, ns="other"),
     {"node1": OK, "node2": OK, "node3": OK}),
    # nodes the pod's nodeSelector excludes are not domains: only zone a is left, so no skew
    (pod("p", constraints=[constraint()], nodeSelector={ZONE: "a"}, **WEB_POD), cluster({"node1": 2}),
     {"node1": OK, "node2": OK, "node3": OK}),
    # matchLabelKeys narrows the selector to the pod's own value of that label
    (pod("p", constraints=[constraint(matchLabelKeys=["rev"])], labels={"app": "web", "rev": "2"}),
     cluster({"node1": 2}), {"node1": OK, "node2": OK, "node3": OK}),
    # ScheduleAnyway never filters
    (pod("p", constraints=[constraint(when="ScheduleAnyway")], **WEB_POD), cluster({"node1": 5}),
     {"node1": OK, "node2": OK, "node3": OK}),
])
def test_filter(incoming: dict[str, Any], nodes: list[NodeInfo], expected: dict[str, tuple[str, ...]]) -> None:
    assert filter_all(incoming, nodes) == expected


def test_terminating_pods_do_not_count() -> None:
    nodes = cluster({"node1": 2})
    for p in nodes[0].pods.values():
        p["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert filter_all(pod("p", constraints=[constraint()], **WEB_POD), nodes) == \
        {"node1": OK, "node2": OK, "node3": OK}


def test_missing_label_is_unresolvable() -> None:
    nodes = cluster({}, zones={"node4": None})
    plugin, incoming = PodTopologySpread(), pod("p", constraints=[constraint()], **WEB_POD)
    assert plugin.filter(CycleState(nodes), incoming, nodes[0]).code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def scores(incoming: dict[str, Any], nodes: list[NodeInfo], feasible: list[NodeInfo] | None = None
           ) -> tuple[dict[str, int], dict[str, int]]:
    feasible = nodes if feasible is None else feasible
    plugin, state = PodTopologySpread(), CycleState(nodes)
    plugin.pre_score(state, incoming, feasible)
    raw = {n.name: plugin.score(state, incoming, n) for n in feasible}
    return raw, plugin.normalize(state, incoming, dict(raw))


def test_system_default_spreads_pods_of_one_owner() -> None:
    """hostname (maxSkew 3) and zone (maxSkew 5) over the owner's pods: node1 already has 2, node3 has 1."""
    nodes = cluster({"node1": 2, "node3": 1}, owner="web-1")
    host_w, zone_w = math.log(3 + 2), math.log(2 + 2)
    raw, normalized = scores(pod("p", owner="web-1"), nodes)
    assert raw == {"node1": round(2 * host_w + 2 + 2 * zone_w + 4), "node2": round(2 + 2 * zone_w + 4),
                   "node3": round(host_w + 2 + zone_w + 4)} == {"node1": 12, "node2": 9, "node3": 9}
    assert normalized == {"node1": 75, "node2": 100, "node3": 100}


def test_system_default_ignores_other_owners_and_ownerless_pods() -> None:
    nodes = cluster({"node1": 3}, owner="other")
    assert scores(pod("p", owner="web-1"), nodes)[1] == {"node1": 100, "node2": 100, "node3": 100}
    raw, normalized = scores(pod("p"), cluster({"node1": 3}))  # no owner: no default constraints
    assert raw == normalized == {"node1": 0, "node2": 0, "node3": 0}


def test_system_default_scores_nodes_without_a_zone_by_hostname() -> None:
    nodes = cluster({"node1": 1}, zones={"node1": None, "node2": None}, owner="web-1")
    raw, normalized = scores(pod("p", owner="web-1"), nodes)
    assert raw == {"node1": round(math.log(4) + 2), "node2": 2}
    assert normalized == {"node1": 66, "node2": 100}  # 100 × (3 + 2 − 3) // 3


def test_soft_constraint_ignores_nodes_without_the_key() -> None:
    nodes = cluster({"node1": 2}, zones={"node1": "a", "node3": "b", "node4": None})
    incoming = pod("p", constraints=[constraint(when="ScheduleAnyway")], **WEB_POD)
    raw, normalized = scores(incoming, nodes)
    weight = math.log(2 + 2)
    assert raw == {"node1": round(2 * weight), "node3": 0, "node4": 0}
    assert normalized == {"node1": 0, "node3": 100, "node4": 0}


def test_soft_constraint_counts_pods_on_infeasible_nodes_of_a_feasible_domain() -> None:
    nodes = cluster({"node2": 3})
    incoming = pod("p", constraints=[constraint(when="ScheduleAnyway")], **WEB_POD)
    raw, _ = scores(incoming, nodes, feasible=[nodes[0], nodes[2]])  # node2 filtered out, its zone still counts
    assert raw == {"node1": round(3 * math.log(4)), "node3": 0}


def test_assigned_pod_add_hint() -> None:
    from scheduler.plugins.podtopologyspread import assigned_pod_add_may_help
    waiting = pod("w", labels={"app": "web"}, constraints=[constraint()])
    assert assigned_pod_add_may_help(waiting, pod("x", labels={"app": "web"}))
    assert not assigned_pod_add_may_help(waiting, pod("x", labels={"app": "db"}))
    assert not assigned_pod_add_may_help(waiting, pod("x", "other", labels={"app": "web"}))
    soft = pod("w", labels={"app": "web"}, constraints=[constraint(when="ScheduleAnyway")])
    assert not assigned_pod_add_may_help(soft, pod("x", labels={"app": "web"}))
