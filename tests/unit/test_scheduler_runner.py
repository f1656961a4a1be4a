"""The runner's cached paths honour the plugin contract: node-static plugins get the attempt's CycleState (with
every node in its snapshot) and their own ``normalize``, so the cached results equal per-node calls."""

from __future__ import annotations

from typing import Any

from scheduler.cache import Cache
from scheduler.config import Profile
from scheduler.framework import SUCCESS, CycleState, NodeInfo, Pod, Status, unschedulable
from scheduler.scheduler import Runner


class SnapshotAware:
    """A node-static plugin that also checks it sees the attempt's snapshot, with a normalize of its own."""

    name = "SnapshotAware"

    def filter_view(self, pod: Pod) -> Any:
        return pod["metadata"]["labels"]

    def score_view(self, pod: Pod) -> Any:
        return pod["metadata"]["labels"]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        if len(state.all_nodes([node_info])) < 2:
            return unschedulable("called without the snapshot")
        return SUCCESS if node_info.name != "n0" else unschedulable("not n0")

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return int(node_info.name[1:]) * len(state.all_nodes([node_info]))

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> dict[str, int]:
        return {n: 100 - s % 50 for n, s in scores.items()}  # nothing default_normalize_score could give


def cluster(nodes: int) -> Cache:
    cache = Cache()
    for i in range(nodes):
        cache.add_node({"metadata": {"name": f"n{i}", "labels": {}},
                        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    return cache


def runner() -> Runner:
    r = Runner(Profile(filters=("NodeResourcesFit",), scores=()))
    plugin = SnapshotAware()
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
