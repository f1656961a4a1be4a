"""The runner asks plugins for their batch forms and falls back to per-node calls: node-static plugins' cached
batch forms get the attempt's CycleState (with every node in its snapshot) and their own ``normalize``, and a
plugin without a batch form gives the same answers through the per-node path."""

from __future__ import annotations

import numpy as np

from scheduler.cache import Cache
from scheduler.config import Profile
from scheduler.framework import (
    SUCCESS,
    BatchFilterPlugin,
    BatchScorePlugin,
    BatchVerdicts,
    CycleState,
    NodeInfo,
    Pod,
    Status,
    unschedulable,
)
from scheduler.nodetable import NodeTable
from scheduler.scheduler import Runner
from scheduler.shapecache import normalize_through, static_filter, static_scores


class PerNode:
    """A plugin with only the per-node methods: it checks it sees the attempt's snapshot, with a normalize of
    its own."""

    name = "SnapshotAware"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        if len(state.all_nodes([node_info])) < 2:
            return unschedulable("called without the snapshot")
        return SUCCESS if node_info.name != "n0" else unschedulable("not n0")

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return int(node_info.name[1:]) * len(state.all_nodes([node_info]))

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> dict[str, int]:
        return {n: 100 - s % 50 for n, s in scores.items()}  # nothing default_normalize_score could give


class SnapshotAware(PerNode):
    """The same plugin with cached batch forms (node-static: its view of the pod is its labels)."""

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts:
        return static_filter(self, pod["metadata"]["labels"], state, pod, table)

    def batch_score(self, state: CycleState, pod: Pod, table: NodeTable, rows: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        raw = static_scores(self, pod["metadata"]["labels"], state, pod, table, rows)
        return raw, normalize_through(self, state, pod, table, rows, raw)


def cluster(nodes: int) -> Cache:
    cache = Cache()
    for i in range(nodes):
        cache.add_node({"metadata": {"name": f"n{i}", "labels": {}},
                        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    return cache


def runner(plugin: PerNode | None = None) -> Runner:
    r = Runner(Profile(filters=("NodeResourcesFit",), scores=()))
    plugin = plugin or SnapshotAware()
    r.filters.append(plugin)
    r.scores.append((plugin, 1))
    return r


def test_cached_filter_and_score_see_the_snapshot_and_use_the_plugins_normalize() -> None:
    cache = cluster(6)
    pod = {"metadata": {"name": "p", "namespace": "d", "labels": {"app": "x"}}, "spec": {"containers": [{}]}}
    fast, slow = runner(), runner()
    a = fast.find_node(pod, cache)
    b = slow.finish_reference(slow.find_node_reference(pod, cache), pod, cache)
    assert sorted(cache.table.names[r] for r in a.feasible.tolist()) == ["n1", "n2", "n3", "n4", "n5"]
    assert a.status_of(cache.table.index["n0"])[1].reasons == ("not n0",)  # type: ignore[index]
    column = a.scores[0]
    assert column.raw.tolist() == [int(cache.table.names[r][1:]) * 6 for r in a.feasible.tolist()]
    assert column.normalized.tolist() == [100 - s % 50 for s in column.raw.tolist()]
    assert column.normalized.tolist() == b.scores[0].normalized.tolist()
    assert a.totals.tolist() == b.totals.tolist()


def test_a_plugin_without_a_batch_form_goes_per_node_with_the_same_answers() -> None:
    cache = cluster(6)
    pod = {"metadata": {"name": "p", "namespace": "d", "labels": {"app": "x"}}, "spec": {"containers": [{}]}}
    assert not isinstance(PerNode(), BatchFilterPlugin) and not isinstance(PerNode(), BatchScorePlugin)
    assert isinstance(SnapshotAware(), BatchFilterPlugin) and isinstance(SnapshotAware(), BatchScorePlugin)
    calls: list[str] = []

    class Counting(PerNode):
        def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
            calls.append(node_info.name)
            return super().filter(state, pod, node_info)

    per_node, batch = runner(Counting()), runner()
    per_node.next_start = batch.next_start = 0
    a, b = per_node.find_node(pod, cache), batch.find_node(pod, cache)
    assert sorted(calls) == sorted(cache.table.names)  # every node went through the per-node filter
    assert a.feasible.tolist() == b.feasible.tolist()
    assert a.status_of(cache.table.index["n0"]) == b.status_of(cache.table.index["n0"])
    assert a.status_of(cache.table.index["n0"])[1].reasons == ("not n0",)  # type: ignore[index]
    assert [(c.plugin, c.raw.tolist(), c.normalized.tolist()) for c in a.scores] == \
        [(c.plugin, c.raw.tolist(), c.normalized.tolist()) for c in b.scores]
    assert a.totals.tolist() == b.totals.tolist()
    assert a.to_dict()["nodes"] == b.to_dict()["nodes"]  # what `kubelab explain` shows per node


def test_queueing_hints_come_from_the_profiles_plugins() -> None:
    spread = {"metadata": {"name": "w", "namespace": "d", "labels": {"app": "web"}},
              "spec": {"containers": [{}], "topologySpreadConstraints": [
                  {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                   "labelSelector": {"matchLabels": {"app": "web"}}}]}}
    web = {"metadata": {"name": "x", "namespace": "d", "labels": {"app": "web"}}, "spec": {}}
    db = {"metadata": {"name": "y", "namespace": "d", "labels": {"app": "db"}}, "spec": {}}
    default = Runner(Profile())
    assert default.assigned_pod_add_may_help(spread, web)  # PodTopologySpread counts it
    assert not default.assigned_pod_add_may_help(spread, db)
    assert default.namespace_aware() == {"InterPodAffinity"}
    without = Runner(Profile(filters=("NodeResourcesFit",), scores=()))
    assert not without.assigned_pod_add_may_help(spread, web)  # no plugin of this profile counts pods
    assert without.namespace_aware() == set()
