"""The node table and the vectorised runner: on random clusters they must give exactly what per-node plugin calls
give (verdicts with reasons, raw and normalised scores, totals, which nodes were searched)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.cache import Cache
from scheduler.config import Profile
from scheduler.framework import Handle, NodeInfo, pod_non_zero_requests, pod_requests
from scheduler.nodetable import NodeTable
from scheduler.nominator import Nominator
from scheduler.plugins.noderesources import balanced_allocation as balanced_one
from scheduler.plugins.noderesources import balanced_allocation_rows as balanced_allocation
from scheduler.plugins.noderesources import fit_reasons, insufficient
from scheduler.plugins.noderesources import least_allocated as least_one
from scheduler.plugins.noderesources import least_allocated_rows as least_allocated
from scheduler.scheduler import Runner, num_feasible_nodes_to_find

ZONES = ("a", "b", "c")


def random_node(rng: random.Random, i: int) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": rng.choice(ZONES)}
    if rng.random() < 0.5:
        labels["disk"] = rng.choice(("ssd", "hdd"))
    if rng.random() < 0.3:
        labels["gen"] = str(rng.randint(1, 5))
    taints = []
    if rng.random() < 0.15:
        taints.append({"key": "dedicated", "value": rng.choice(("x", "y")), "effect": rng.choice(
            ("NoSchedule", "NoExecute", "PreferNoSchedule"))})
    status: dict[str, Any] = {"allocatable": {"cpu": rng.choice(("1", "2", "4", "500m")),
                                              "memory": rng.choice(("1Gi", "2Gi", "4Gi")),
                                              "pods": rng.choice(("3", "10", "110"))}}
    if rng.random() < 0.2:
        status["images"] = [{"names": ["busybox"], "sizeBytes": 500 * 1024 * 1024}]
    return {"metadata": {"name": f"n{i}", "labels": labels},
            "spec": {"taints": taints, "unschedulable": rng.random() < 0.05}, "status": status}


def random_pod(rng: random.Random, name: str, node: str | None = None) -> dict[str, Any]:
    requests = {}
    if rng.random() < 0.8:
        requests["cpu"] = rng.choice(("100m", "250m", "1", "1500m"))
    if rng.random() < 0.7:
        requests["memory"] = rng.choice(("64Mi", "512Mi", "1Gi"))
    container: dict[str, Any] = {"name": "c", "image": "busybox", "resources": {"requests": requests}}
    if rng.random() < 0.1:
        container["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    spec: dict[str, Any] = {"containers": [container]}
    labels = {"app": rng.choice(("web", "db"))}
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"disk": rng.choice(("ssd", "hdd"))}
    if rng.random() < 0.2:
        spec["affinity"] = {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "gen", "operator": rng.choice(("Gt", "Lt")), "values": ["2"]}]},
                {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "preference": {"matchExpressions": [{"key": "topology.kubernetes.io/zone",
                                                                    "operator": "In", "values": ["a"]}]}}]}}
    if rng.random() < 0.1:
        spec.setdefault("affinity", {})["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": labels["app"]}}, "topologyKey": "kubernetes.io/hostname"}]}
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "x"}]
    if rng.random() < 0.1:
        spec["volumes"] = [{"name": "d", "gcePersistentDisk": {"pdName": "disk1"}}]
    if rng.random() < 0.1:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                              "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
                                              "labelSelector": {"matchLabels": {"app": labels["app"]}}}]
    meta: dict[str, Any] = {"name": name, "namespace": "d", "labels": labels}
    if rng.random() < 0.2:
        meta["ownerReferences"] = [{"uid": "rs1", "controller": True, "kind": "ReplicaSet", "name": "rs"}]
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": "Running"}}


def random_cluster(rng: random.Random, nodes: int, pods: int) -> Cache:
    cache = Cache()
    for i in range(nodes):
        cache.add_node(random_node(rng, i))
    for j in range(pods):
        cache.add_pod(random_pod(rng, f"bound{j}", f"n{rng.randrange(nodes)}"))
    return cache


def statuses(attempt: Any) -> dict[str, Any]:
    out = {}
    for row in attempt.evaluated.tolist():
        failed = attempt.status_of(row)
        out[attempt.node_names[row]] = None if failed is None else (failed[0], failed[1].code, failed[1].reasons)
    return out


def scores(attempt: Any) -> list[Any]:
    return [(c.plugin, c.weight, c.raw.tolist(), c.normalized.tolist()) for c in attempt.scores]


@pytest.mark.parametrize("seed", range(12))
def test_vectorised_equals_per_node(seed: int) -> None:
    rng = random.Random(seed)
    cache = random_cluster(rng, rng.choice((5, 40, 150)), rng.randint(0, 60))
    percentage = rng.choice((0, 30, 100))
    nominator = Nominator()  # pods a preemption nominated: some nodes are filtered with them first
    for k in range(rng.randint(0, 8)):
        nominated = random_pod(rng, f"nominated{k}")
        nominated["spec"]["priority"] = rng.choice((0, 5, 10))
        nominator.add(nominated, f"n{rng.randrange(cache.table.n)}")
    fast, slow = Runner(Profile(percentage_of_nodes_to_score=percentage), Handle(nominator=nominator)), \
        Runner(Profile(percentage_of_nodes_to_score=percentage), Handle(nominator=nominator))
    for i in range(15):
        pod = random_pod(rng, f"new{i}")
        pod["spec"]["priority"] = rng.choice((0, 5, 10))
        start = rng.randrange(cache.table.n)
        fast.next_start = slow.next_start = start
        a = fast.find_node(pod, cache)
        b = slow.finish_reference(slow.find_node_reference(pod, cache), pod, cache)
        assert a.evaluated.tolist() == b.evaluated.tolist()
        assert fast.next_start == slow.next_start
        assert statuses(a) == statuses(b)
        assert sorted(a.feasible.tolist()) == sorted(b.feasible.tolist())
        assert a.message == b.message
        order = np.argsort(a.feasible)
        other = np.argsort(b.feasible)
        assert [(p, w, np.array(r)[order].tolist(), np.array(n)[order].tolist()) for p, w, r, n in scores(a)] == \
            [(p, w, np.array(r)[other].tolist(), np.array(n)[other].tolist()) for p, w, r, n in scores(b)]
        if a.node is not None:
            cache.assume_pod(pod, a.node)  # the cluster fills up as the scheduler would fill it


def test_resource_maths_equal_the_plugin_functions() -> None:
    rng = random.Random(7)
    cache = random_cluster(rng, 60, 120)
    table = cache.table
    rows = np.arange(table.n)
    for i in range(30):
        pod = random_pod(rng, f"p{i}")
        bits = fit_reasons(table, pod_requests(pod))
        la = least_allocated(table, rows, pod_non_zero_requests(pod))
        ba = balanced_allocation(table, rows, pod_non_zero_requests(pod))
        for row, info in enumerate(table.infos):
            assert bool(bits[row]) == bool(insufficient(pod, info))
            assert la[row] == least_one(pod, info)
            assert ba[row] == balanced_one(pod, info)


def test_rows_stay_dense_when_nodes_go() -> None:
    rng = random.Random(3)
    table = NodeTable(capacity=2)
    infos = [NodeInfo(random_node(rng, i)) for i in range(5)]
    for info in infos:
        table.upsert(info)
    table.remove("n1")
    assert table.n == 4 and table.names == ["n0", "n4", "n2", "n3"]
    assert table.index == {"n0": 0, "n4": 1, "n2": 2, "n3": 3}
    assert table.alloc[1].tolist() == [infos[4].allocatable.milli_cpu, infos[4].allocatable.memory, 0,
                                       infos[4].allocatable.pods]


def test_shape_cache_recomputes_only_changed_nodes() -> None:
    cache = Cache()
    for i in range(3):
        cache.add_node({"metadata": {"name": f"n{i}", "labels": {"disk": "ssd" if i else "hdd"}},
                        "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}})
    calls: list[str] = []

    def check(info: NodeInfo) -> Any:
        from scheduler.framework import SUCCESS, unschedulable
        calls.append(info.name)
        return SUCCESS if info.labels.get("disk") == "ssd" else unschedulable("no")

    assert cache.table.shapes.filter("k", check).ok[:3].tolist() == [False, True, True]
    assert cache.table.shapes.filter("k", check).ok[:3].tolist() == [False, True, True]
    assert calls == ["n0", "n1", "n2"]
    cache.add_node({"metadata": {"name": "n0", "labels": {"disk": "ssd"}},
                    "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}})
    assert cache.table.shapes.filter("k", check).ok[:3].tolist() == [True, True, True]
    assert calls[3:] == ["n0"]


@pytest.mark.parametrize("nodes,percentage,expected", [
    (50, 0, 50), (100, 0, 100), (1000, 0, 420), (5000, 0, 500), (10000, 0, 500), (5000, 30, 1500),
    (150, 10, 100), (5000, 100, 5000),
])
def test_num_feasible_nodes_to_find(nodes: int, percentage: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def random_term(rng: random.Random) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": rng.choice(("kubernetes.io/hostname", "topology.kubernetes.io/zone",
                                                       "disk")),
                            "labelSelector": rng.choice(({"matchLabels": {"app": rng.choice(("web", "db"))}},
                                                         {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
                                                         {}))}
    choice = rng.random()
    if choice < 0.2:
        term["namespaces"] = [rng.choice(("d", "e"))]
    elif choice < 0.3:
        term["namespaceSelector"] = {}
    elif choice < 0.4:
        term["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": "e"}}
    return term


def random_affinity_pod(rng: random.Random, name: str, node: str | None = None) -> dict[str, Any]:
    """A pod with pod (anti-)affinity of every kind, in namespace d or e (the batch InterPodAffinity's inputs)."""
    p = random_pod(rng, name, node)
    p["metadata"]["namespace"] = rng.choice(("d", "d", "e"))
    if rng.random() < 0.4:
        p["metadata"]["labels"]["tier"] = "front"
    p["spec"].pop("topologySpreadConstraints", None)
    affinity = p["spec"].setdefault("affinity", {})
    for kind in ("podAffinity", "podAntiAffinity"):
        rules: dict[str, Any] = {}
        if rng.random() < 0.25:
            rules["requiredDuringSchedulingIgnoredDuringExecution"] = [random_term(rng)
                                                                       for _ in range(rng.choice((1, 1, 2)))]
        if rng.random() < 0.3:
            rules["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": random_term(rng)} for _ in range(rng.randint(1, 2))]
        if rules:
            affinity[kind] = rules
    return p


@pytest.mark.parametrize("seed", range(12))
def test_batch_inter_pod_affinity_equals_per_node(seed: int) -> None:
    rng = random.Random(1000 + seed)
    nodes = rng.choice((5, 30, 120))
    cache = Cache()
    for i in range(nodes):
        cache.add_node(random_node(rng, i))
    for j in range(rng.randint(0, 80)):
        cache.add_pod(random_affinity_pod(rng, f"bound{j}", f"n{rng.randrange(nodes)}"))
    profile = Profile(filters=("NodeResourcesFit", "InterPodAffinity"),
                      scores=(("InterPodAffinity", 2), ("NodeResourcesFit", 1)), percentage_of_nodes_to_score=100)
    fast, slow = Runner(profile), Runner(profile)
    for i in range(20):
        if rng.random() < 0.15 and cache.table.n > 2:  # nodes leave, come back relabelled; pods go
            name = rng.choice(cache.table.names)
            cache.remove_node(name)
            if rng.random() < 0.5:
                cache.add_node(random_node(rng, int(name[1:])))
        if rng.random() < 0.2 and cache.pods:
            cache.forget_pod(rng.choice(sorted(cache.pods)))
        pod = random_affinity_pod(rng, f"new{i}")
        fast.next_start = slow.next_start = 0
        a = fast.find_node(pod, cache)
        b = slow.finish_reference(slow.find_node_reference(pod, cache), pod, cache)
        assert statuses(a) == statuses(b)
        assert a.message == b.message
        assert sorted(a.feasible.tolist()) == sorted(b.feasible.tolist())
        order, other = np.argsort(a.feasible), np.argsort(b.feasible)
        assert [(p, np.array(r)[order].tolist(), np.array(n)[order].tolist()) for p, _, r, n in scores(a)] == \
            [(p, np.array(r)[other].tolist(), np.array(n)[other].tolist()) for p, _, r, n in scores(b)]
        if a.node is not None:
            cache.assume_pod(pod, a.node)
