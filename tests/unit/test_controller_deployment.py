"""controllers.deployment.util: surge maths, hashes, revisions, status and conditions (pure functions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers.deployment import rollout, util
from controllers.support.podutil import compute_hash, fmt_time

NOW = datetime(2024, 5, 1, tzinfo=UTC)


def deployment(replicas: int = 10, surge: Any = "25%", unavailable: Any = "25%", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web", "generation": 2, "annotations": {"team": "a"}},
            "spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate", "rollingUpdate": {
                "maxSurge": surge, "maxUnavailable": unavailable}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"image": "i"}]}},
                **spec}}


def rs(name: str, replicas: int, available: int = 0, revision: int | None = None, created: str = "2024-01-01T00:00:00Z",
       **status: int) -> dict[str, Any]:
    annotations = {util.REVISION: str(revision)} if revision is not None else {}
    return {"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations},
            "spec": {"replicas": replicas}, "status": {"replicas": replicas, "availableReplicas": available, **status}}


@pytest.mark.parametrize("replicas,surge,unavailable,expected", [
    (10, "25%", "25%", (3, 2)),  # surge rounds up, unavailable down
    (4, 1, 1, (1, 1)),
    (1, "25%", "25%", (1, 0)),
    (3, 0, 0, (0, 1)),  # never both zero
])
def test_fenceposts(replicas: int, surge: Any, unavailable: Any, expected: tuple[int, int]) -> None:
    assert util.resolve_fenceposts(deployment(replicas, surge, unavailable)) == expected


def test_max_unavailable_for_recreate_is_zero() -> None:
    d = deployment()
    d["spec"]["strategy"] = {"type": "Recreate"}
    assert util.max_unavailable(d) == 0 and util.max_surge(d) == 0
    assert util.new_rs_new_replicas(d, [], rs("n", 0)) == 10


def test_new_rs_growth_is_bounded_by_surge() -> None:
    d = deployment(4, 1, 1)
    old, new = rs("old", 4), rs("new", 0)
    assert util.new_rs_new_replicas(d, [old, new], new) == 1  # 4 + 1 surge = 5 pods at most
    old["spec"]["replicas"] = 2
    new["spec"]["replicas"] = 2
    assert util.new_rs_new_replicas(d, [old, new], new) == 3


class Scaler:
    """The controller as the rollout functions use it: records each scale instead of writing it."""

    def __init__(self) -> None:
        self.scaled: list[tuple[str, int]] = []

    async def scale_replica_set(self, rs: dict[str, Any], replicas: int, d: dict[str, Any]) -> bool:
        self.scaled.append((rs["metadata"]["name"], replicas))
        rs["spec"]["replicas"] = replicas
        return True


async def test_old_replica_sets_are_not_scaled_down_twice_on_a_stale_status() -> None:
    """4 replicas, maxUnavailable 1: 3 must stay available. The old ReplicaSet was just scaled 4 → 3 and still
    reports 4 available; with one new pod available, only 3 + 1 - 3 = 1 more may go, not 4 + 1 - 3 = 2."""
    d = deployment(4, 1, 1)
    old, new = rs("old", 3, available=4, created="2024-01-01T00:00:00Z"), rs("new", 2, available=1)
    c = Scaler()
    await rollout.reconcile_old_replica_sets(c, [old, new], [old], new, d)  # type: ignore[arg-type]
    assert c.scaled == [("old", 2)]


def test_hash_is_stable_and_collision_count_changes_it() -> None:
    template = deployment()["spec"]["template"]
    first = compute_hash(template, None)
    assert first == compute_hash(dict(template), None)
    assert first != compute_hash(template, 1)
    assert set(first) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_find_new_ignores_the_hash_label() -> None:
    d = deployment()
    same = rs("web-abc", 1)
    same["spec"]["template"] = {"metadata": {"labels": {"app": "web", util.POD_TEMPLATE_HASH: "abc"}},
                                "spec": {"containers": [{"image": "i"}]}}
    other = rs("web-def", 1)
    other["spec"]["template"] = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"image": "j"}]}}
    assert util.find_new_replica_set(d, [other, same]) is same


def test_revision_annotations_keep_history_on_rollback() -> None:
    d = deployment()
    new = rs("web-1", 0)
    assert util.set_new_rs_annotations(d, new, 1, exists=False)
    a = new["metadata"]["annotations"]
    assert (a[util.REVISION], a["team"], a[util.DESIRED_REPLICAS], a[util.MAX_REPLICAS]) == ("1", "a", "10", "13")
    assert util.set_new_rs_annotations(d, new, 3, exists=True)  # rolled back to: revision 3, history "1"
    assert (a[util.REVISION], a[util.REVISION_HISTORY]) == ("3", "1")
    assert not util.set_new_rs_annotations(d, new, 3, exists=True)


def test_status_and_available_condition() -> None:
    d = deployment(4, 1, 1)
    new, old = rs("new", 2, available=1, readyReplicas=1), rs("old", 2, available=2, readyReplicas=2)
    status = util.calculate_status([old, new], new, d, NOW)
    assert {k: status[k] for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                                   "unavailableReplicas", "observedGeneration")} == {
        "replicas": 4, "updatedReplicas": 2, "readyReplicas": 3, "availableReplicas": 3, "unavailableReplicas": 1,
        "observedGeneration": 2}
    assert status["conditions"][0]["type"] == "Available" and status["conditions"][0]["status"] == "True"
    assert not util.deployment_complete(d, status)
    old["status"]["availableReplicas"] = 0
    assert util.calculate_status([old, new], new, d, NOW)["conditions"][0]["reason"] == util.MIN_UNAVAILABLE


def test_condition_keeps_transition_time_and_timeout() -> None:
    status: dict[str, Any] = {}
    earlier = NOW - timedelta(seconds=700)
    util.set_condition(status, util.new_condition(util.PROGRESSING, "True", util.RS_UPDATED, "m", earlier))
    util.set_condition(status, util.new_condition(util.PROGRESSING, "True", util.NEW_RS_CREATED, "m2", NOW))
    condition = status["conditions"][0]
    assert condition["reason"] == util.NEW_RS_CREATED and condition["lastTransitionTime"] == fmt_time(earlier)
    d = deployment(progressDeadlineSeconds=600)
    stuck = {"conditions": [util.new_condition(util.PROGRESSING, "True", util.RS_UPDATED, "m", earlier)]}
    assert util.deployment_timed_out(d, stuck, NOW)
    assert not util.deployment_timed_out(d, stuck, earlier + timedelta(seconds=10))


def test_proportional_share() -> None:
    d = deployment(20, 3, 0)  # scaled from 10 (max 13) to 20 (max 23)
    a, b = rs("a", 6), rs("b", 4)
    for r in (a, b):
        r["metadata"]["annotations"][util.MAX_REPLICAS] = "13"
    to_add = 23 - 10
    share_a = util.proportion(a, d, to_add, 0)
    share_b = util.proportion(b, d, to_add, share_a)
    assert (share_a, share_b) == (5, 3)  # 6·23/13 ≈ 10.6 → 11, 4·23/13 ≈ 7.1 → 7
