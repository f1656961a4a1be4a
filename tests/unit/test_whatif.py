"""scheduler/whatif.py on a hand-built cache: who a drain evicts or leaves (DaemonSet and mirror pods, budgets spent
in order, pods without a controller), NoExecute tolerationSeconds, node deletion, and placements that leave the
live cache untouched."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.cache import Cache
from scheduler.config import Profile
from scheduler.runner import Runner
from scheduler.whatif import Change, ChangeError, parse_change, simulate


def node(name: str, cpu: str = "4", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}, "spec": {},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, node_name: str, owner: str | None = "ReplicaSet", created: str = "2026-01-01T00:00:00Z",
        **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"app": name.split("-")[0]},
                            "creationTimestamp": created, "uid": name}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": "x", "controller": True, "uid": "o"}]
    return {"metadata": meta, "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "i"}], **spec},
            "status": {"phase": "Running"}}


def pdb(app: str, allowed: int) -> dict[str, Any]:
    return {"metadata": {"name": app, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}}, "status": {"disruptionsAllowed": allowed}}


def cluster(*pods: dict[str, Any]) -> Cache:
    cache = Cache()
    for n in (node("n1"), node("n2"), node("n3")):
        cache.add_node(n)
    for p in pods:
        cache.add_pod(p)
    return cache


def runner_for(_: dict[str, Any]) -> Runner:
    return Runner(Profile())


def by_pod(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["pod"]: p for p in result["pods"]}


def test_drain_spends_budgets_in_order_and_skips_daemonset_and_mirror_pods() -> None:
    mirror = pod("static-n1", "n1", owner="Node")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    cache = cluster(pod("db-1", "n1", created="2026-01-01T00:00:01Z"),
                    pod("db-2", "n1", created="2026-01-01T00:00:02Z"), pod("ds-1", "n1", owner="DaemonSet"), mirror,
                    pod("bare", "n1", owner=None), pod("web-1", "n2"))
    result = by_pod(simulate(Change("drain", "n1"), cache, [pdb("db", 1)], runner_for))
    assert set(result) == {"default/db-1", "default/db-2", "default/bare"}
    assert result["default/db-1"]["eviction"] == "evicted" and result["default/db-1"]["node"] in ("n2", "n3")
    assert result["default/db-2"]["eviction"] == "blocked"
    assert "disruption budget (db)" in result["default/db-2"]["reason"]
    assert result["default/bare"]["eviction"] == "blocked" and "--force" in result["default/bare"]["reason"]
    assert not cache.nodes["n1"].node["spec"].get("unschedulable")  # the live cache is untouched
    assert cache.pod_nodes["default/db-1"] == "n1"


def test_noexecute_taint_honours_toleration_seconds() -> None:
    tolerate = [{"key": "k", "operator": "Exists", "effect": "NoExecute"}]
    bounded = [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}]
    cache = cluster(pod("a-1", "n1"), pod("b-1", "n1", tolerations=tolerate), pod("c-1", "n1", tolerations=bounded))
    change = parse_change({"action": "taint", "node": "n1", "taint": {"key": "k", "value": "v", "effect": "NoExecute"}})
    result = by_pod(simulate(change, cache, [], runner_for))
    assert set(result) == {"default/a-1", "default/c-1"}  # b tolerates it forever
    bounded_pod = result["default/c-1"]
    assert (bounded_pod["eviction"], bounded_pod["reason"]) == ("evicted-after", "evicted after 30 s")
    assert result["default/a-1"]["node"] in ("n2", "n3")  # the tainted node does not take it back


def test_delete_node_and_apply_report_pending_with_failedscheduling_words() -> None:
    cache = cluster(pod("a-1", "n1"))
    answer = simulate(Change("delete-node", "n1"), cache, [], runner_for)
    result = by_pod(answer)
    assert result["default/a-1"]["eviction"] == "deleted" and result["default/a-1"]["node"] in ("n2", "n3")
    assert (answer["nodes"], answer["schedulableNodes"]) == (2, 2)  # the node is gone, not cordoned
    cordoned = simulate(Change("cordon", "n1"), cache, [], runner_for)
    assert (cordoned["nodes"], cordoned["schedulableNodes"]) == (3, 2)
    big = {"metadata": {"name": "big"}, "spec": {"containers": [{"name": "c", "image": "i",
                                                                 "resources": {"requests": {"cpu": "64"}}}]}}
    result = by_pod(simulate(parse_change({"action": "apply", "pods": [big]}), cache, [], runner_for))
    assert result["default/big"]["result"] == "Pending"
    assert result["default/big"]["message"].startswith("0/3 nodes are available: 3 Insufficient cpu.")


def test_equally_scored_nodes_are_reported() -> None:
    result = by_pod(simulate(parse_change({"action": "apply", "pods": [pod("new", "")]}), cluster(), [], runner_for))
    entry = result["default/new"]
    assert sorted([entry["node"], *entry["equalNodes"]]) == ["n1", "n2", "n3"]


@pytest.mark.parametrize("body", [{}, {"action": "drain"}, {"action": "taint", "node": "n1", "taint": {"key": "k"}},
                                  {"action": "apply", "pods": []}, {"action": "apply", "pods": [{"kind": "Service"}]}])
def test_bad_changes_are_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ChangeError):
        parse_change(body)


def test_cli_renders_blocked_equal_and_pending_pods() -> None:
    import argparse

    from kubelab.commands.whatif import parse_taint, render

    assert parse_taint("dedicated=gpu:NoExecute") == {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}
    assert parse_taint("k:NoSchedule") == {"key": "k", "effect": "NoSchedule"}
    with pytest.raises(argparse.ArgumentTypeError):
        parse_taint("k=v:Sometimes")
    pinned = pod("solo-1", "n1", nodeSelector={"kubernetes.io/hostname": "n1"})
    cache = cluster(pod("db-1", "n1"), pod("web-1", "n1"), pinned)
    text = render(simulate(Change("drain", "n1"), cache, [pdb("db", 0)], runner_for))
    lines = text.splitlines()
    assert lines[0] == "What if: drain n1 (2 of 3 node(s) schedulable after the change)"  # n1 is cordoned
    assert any(line.split()[:4] == ["default/db-1", "n1", "blocked", "stays"] for line in lines)
    web = next(line for line in lines if line.startswith("default/web-1"))
    assert "same score)" in web and ("n2 (or n3" in web or "n3 (or n2" in web)
    assert "default/solo-1: Pending: 0/3 nodes are available:" in text
