"""Counts the node table keeps as pods come and go (podcounts.SelectorCounts, InterPodAffinity's groups, topology
domains) stay equal to a count from scratch through assume, forget, bind, update, delete and node churn; and
PodTopologySpread's batch forms, which read them, equal its per-node path on random clusters."""

from __future__ import annotations

import random
from typing import Any

import pytest

from scheduler.cache import Cache
from scheduler.config import Profile
from scheduler.nodetable import NodeTable
from scheduler.plugins.podaffinityindex import AffinityIndex, affinity_index
from scheduler.plugins.podtopologyspread import constraints_of, default_constraints, matching_rows
from scheduler.podcounts import selector_counts
from scheduler.runner import Runner

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"


def node(rng: random.Random, i: int) -> dict[str, Any]:
    labels = {HOST: f"n{i}"}
    if rng.random() < 0.85:
        labels[ZONE] = rng.choice(("a", "b", "c", ""))
    if rng.random() < 0.5:
        labels["rack"] = rng.choice(("r1", "r2"))
    if rng.random() < 0.3:
        labels["disk"] = "ssd"
    return {"metadata": {"name": f"n{i}", "labels": labels},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": rng.choice(("4", "110"))}}}


def spread_constraint(rng: random.Random) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": rng.choice((1, 1, 2)), "topologyKey": rng.choice((ZONE, HOST, "rack")),
                         "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
                         "labelSelector": rng.choice(({"matchLabels": {"app": "web"}},
                                                      {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                                                      {}))}
    if rng.random() < 0.3:
        c["matchLabelKeys"] = ["tier"]
    if rng.random() < 0.2:
        c["minDomains"] = rng.choice((2, 4))
    return c


def pod(rng: random.Random, name: str, node_name: str | None = None) -> dict[str, Any]:
    labels = {"app": rng.choice(("web", "db"))}
    if rng.random() < 0.5:
        labels["tier"] = rng.choice(("front", "back"))
    meta: dict[str, Any] = {"name": name, "namespace": rng.choice(("d", "d", "e")), "labels": labels}
    if rng.random() < 0.6:
        owner = rng.choice(("rs1", "rs2"))
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                    "uid": f"uid-{owner}", "controller": True}]
    if rng.random() < 0.1:
        meta["deletionTimestamp"] = "2026-12-04T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    if rng.random() < 0.4:
        spec["topologySpreadConstraints"] = [spread_constraint(rng) for _ in range(rng.choice((1, 1, 2)))]
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"disk": "ssd"}
    if rng.random() < 0.15:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": labels["app"]}}, "topologyKey": rng.choice((HOST, ZONE))}]}}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": meta, "spec": spec, "status": {"phase": "Running"}}


def from_scratch(table: NodeTable, predicate: Any, namespace: str) -> list[int]:
    return [sum(1 for p in info.pods.values() if p["metadata"]["namespace"] == namespace and predicate(p))
            for info in table.infos]


def label_groups(index: AffinityIndex, n: int) -> dict[Any, list[int]]:
    return {key: g.rows[:n].tolist() for key, g in index.label_groups.items()}


def term_groups(index: AffinityIndex, n: int) -> dict[Any, list[int]]:
    return {key: g.rows[:n].tolist() for key, g in index.term_groups.items()}


@pytest.mark.parametrize("seed", range(8))
def test_kept_counts_equal_a_count_from_scratch(seed: int) -> None:
    rng = random.Random(seed)
    cache = Cache()
    nodes = rng.choice((3, 12, 40))
    for i in range(nodes):
        cache.add_node(node(rng, i))
    probes = [pod(rng, f"probe{k}") for k in range(6)]  # whose selectors the table keeps counts for
    table = cache.table
    for step in range(150):
        action = rng.random()
        names = sorted(cache.pods)
        if action < 0.35:  # the scheduler assumes a pending pod
            cache.assume_pod(pod(rng, f"p{step}"), f"n{rng.randrange(nodes)}")
        elif action < 0.5 and cache.assumed:  # its bind fails
            cache.forget_pod(rng.choice(sorted(cache.assumed)))
        elif action < 0.65 and names:  # the watch shows a pod bound, or updated while bound (relabelled, ...)
            key = rng.choice(names)
            seen = pod(rng, key.split("/")[1], cache.pod_nodes[key])
            seen["metadata"]["namespace"] = key.split("/")[0]
            cache.add_pod(seen)
        elif action < 0.8 and names:  # deleted
            cache.remove_pod(rng.choice(names))
        elif action < 0.85:  # a pod bound by someone else (created with spec.nodeName)
            cache.add_pod(pod(rng, f"b{step}", f"n{rng.randrange(nodes)}"))
        elif action < 0.92:  # a node goes (its pods stay in the cache) and may come back relabelled
            name = f"n{rng.randrange(nodes)}"
            cache.remove_node(name)
            if rng.random() < 0.6:
                cache.add_node(node(rng, int(name[1:])))
        else:  # a node is relabelled
            cache.add_node(node(rng, rng.randrange(nodes)))
        for probe in probes[:1 + step // 25]:  # selectors start being kept at different moments
            ns = probe["metadata"]["namespace"]
            for c in constraints_of(probe, "DoNotSchedule") + constraints_of(probe, "ScheduleAnyway") + \
                    default_constraints(probe):
                kept = matching_rows(table, probe, c).tolist()
                assert kept == from_scratch(table, lambda p, c=c: not p["metadata"].get("deletionTimestamp")
                                            and c.matches(p), ns)
            for key in (ZONE, HOST, "rack"):
                assert table.domain_ids(key).tolist() == [
                    table.domains(key).lookup[i.labels[key]] if key in i.labels else -1 for i in table.infos]
        kept_index = affinity_index(table)
        fresh = NodeTable()  # the same rows, counted from scratch
        for info in table.infos:
            fresh.upsert(info)
        scratch = affinity_index(fresh)
        assert label_groups(kept_index, table.n) == label_groups(scratch, fresh.n)
        assert term_groups(kept_index, table.n) == term_groups(scratch, fresh.n)
    assert len(selector_counts(table).entries) > 1


def spread_pod(rng: random.Random, name: str, node_name: str | None = None) -> dict[str, Any]:
    p = pod(rng, name, node_name)
    p["spec"].pop("affinity", None)
    return p


@pytest.mark.parametrize("seed", range(16))
def test_batch_pod_topology_spread_equals_per_node(seed: int) -> None:
    rng = random.Random(500 + seed)
    nodes = rng.choice((4, 25, 120))
    cache = Cache()
    for i in range(nodes):
        cache.add_node(node(rng, i))
    for j in range(rng.randint(0, 100)):
        cache.add_pod(spread_pod(rng, f"bound{j}", f"n{rng.randrange(nodes)}"))
    profile = Profile(filters=("NodeAffinity", "NodeResourcesFit", "PodTopologySpread"),
                      scores=(("PodTopologySpread", 2), ("NodeResourcesFit", 1)),
                      percentage_of_nodes_to_score=rng.choice((0, 100)))
    fast, slow = Runner(profile), Runner(profile)
    for i in range(25):
        if rng.random() < 0.1 and cache.pods:
            cache.forget_pod(rng.choice(sorted(cache.pods)))
        incoming = spread_pod(rng, f"new{i}")
        incoming["metadata"].pop("deletionTimestamp", None)
        fast.next_start = slow.next_start = rng.randrange(cache.table.n)
        a = fast.find_node(incoming, cache)
        b = slow.finish_reference(slow.find_node_reference(incoming, cache), incoming, cache)
        assert a.to_dict()["nodes"] == b.to_dict()["nodes"]  # verdicts, reasons, raw/normalised scores, totals
        assert a.message == b.message
        assert fast.next_start == slow.next_start
        if a.node is not None:
            cache.assume_pod(incoming, a.node)
