"""controllers.support.expectations, podutil, taints and the manager's flag handling: the pure rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers.cli import duration, parse_args
from controllers.manager import enabled_controllers
from controllers.support.expectations import Expectations
from controllers.support.podutil import deletion_order, is_pod_active, is_pod_available, pod_from_template
from controllers.support.taints import matching_tolerations, min_toleration_seconds

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def ts(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, *, node: str = "", phase: str = "Pending", ready_for: float | None = None, restarts: int = 0,
        age: float = 100) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "containerStatuses": [{"name": "c", "restartCount": restarts}]}
    if ready_for is not None:
        status["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": ts(ready_for)}]
    return {"metadata": {"name": name, "creationTimestamp": ts(age)}, "spec": {"nodeName": node}, "status": status}


def test_expectations_gate_until_observed() -> None:
    clock = [0.0]
    e = Expectations(ttl=10, now=lambda: clock[0])
    assert e.satisfied("ns/rs")
    e.expect_creations("ns/rs", 2)
    assert not e.satisfied("ns/rs")
    e.creation_observed("ns/rs")
    assert not e.satisfied("ns/rs")
    e.creation_observed("ns/rs")
    assert e.satisfied("ns/rs")
    e.expect_deletions("ns/rs", ["ns/a", "ns/b"])
    e.deletion_observed("ns/rs", "ns/a")
    e.deletion_observed("ns/rs", "ns/a")  # the same pod seen twice counts once
    e.deletion_observed("ns/rs", "ns/zzz")  # not expected: ignored
    assert e.pending("ns/rs") == (0, 1) and not e.satisfied("ns/rs")
    clock[0] = 11  # an expectation never observed expires
    assert e.satisfied("ns/rs")


def test_deletion_order_follows_kubernetes_ranking() -> None:
    pods = [
        pod("ready-old", node="n", phase="Running", ready_for=5000, age=6000),
        pod("ready-new", node="n", phase="Running", ready_for=10, age=20),
        pod("running-not-ready", node="n", phase="Running"),
        pod("pending-bound", node="n"),
        pod("unscheduled"),
        pod("restarts", node="n", phase="Running", restarts=5),
    ]
    order = [p["metadata"]["name"] for p in deletion_order(pods, now=NOW)]
    assert order == ["unscheduled", "pending-bound", "restarts", "running-not-ready", "ready-new", "ready-old"]


def test_doubled_up_pods_go_before_others() -> None:
    a, b = pod("a", node="n1", phase="Running", ready_for=50), pod("b", node="n2", phase="Running", ready_for=50)
    order = deletion_order([a, b], ranks=[1, 2], now=NOW)
    assert order[0]["metadata"]["name"] == "b"


def test_active_and_available() -> None:
    assert is_pod_active(pod("p"))
    assert not is_pod_active(pod("p", phase="Failed"))
    terminating = pod("p")
    terminating["metadata"]["deletionTimestamp"] = ts(0)
    assert not is_pod_active(terminating)
    assert is_pod_available(pod("p", ready_for=10), 5, NOW)
    assert not is_pod_available(pod("p", ready_for=3), 5, NOW)
    assert not is_pod_available(pod("p"), 0, NOW)


def test_pod_from_template_sets_owner_and_generate_name() -> None:
    owner = {"metadata": {"name": "web", "namespace": "ns", "uid": "u1"}}
    ref = {"apiVersion": "v1", "kind": "ReplicationController", "name": "web", "uid": "u1", "controller": True}
    template: dict[str, Any] = {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}
    p = pod_from_template(template, owner, ref)
    assert p["metadata"]["generateName"] == "web-" and p["metadata"]["namespace"] == "ns"
    assert p["metadata"]["ownerReferences"] == [ref] and p["metadata"]["labels"] == {"app": "web"}
    p["spec"]["containers"][0]["image"] = "changed"
    assert template["spec"]["containers"][0]["image"] == "i"  # a copy, not the template itself


def test_toleration_matching_and_seconds() -> None:
    taints = [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}, {"key": "check", "value": "x",
                                                                                "effect": "NoExecute"}]
    default = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
               "tolerationSeconds": 300}
    ok, used = matching_tolerations(taints, [default])
    assert not ok and used == []
    ok, used = matching_tolerations(taints, [default, {"key": "check", "value": "x", "tolerationSeconds": -5}])
    assert ok and min_toleration_seconds(used) == 0
    ok, used = matching_tolerations(taints, [{"operator": "Exists"}])
    assert ok and min_toleration_seconds(used) is None  # forever


@pytest.mark.parametrize("text,seconds", [("50s", 50), ("1m30s", 90), ("500ms", 0.5), ("3", 3), ("1h", 3600)])
def test_durations(text: str, seconds: float) -> None:
    assert duration(text) == seconds


def test_controllers_flag() -> None:
    assert "replicaset-controller" in enabled_controllers(["*"])
    assert enabled_controllers(["replicaset", "podgc"]) == ["replicaset-controller", "pod-garbage-collector-controller"]
    assert "garbage-collector-controller" not in enabled_controllers(["*", "-garbagecollector"])
    with pytest.raises(SystemExit):
        parse_args(["--controllers=nonsense"])
    options = parse_args(["--master", "http://x", "--node-monitor-grace-period", "3s", "--leader-elect=false"])
    assert options.node_monitor_grace_period == 3 and options.leader_elect is False
