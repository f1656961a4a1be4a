"""controllers.replicaset over the in-memory FakeAPIServer: creation, slow start on refusal, the ReplicaFailure
condition, pure status, and adoption."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from apimachinery.errors import Forbidden
from controllers.replicaset import ReplicaSetController, calculate_status
from controllers.replication import new_replication_controller
from controllers.support.podcontrol import slow_start_batch
from kubeclient import PODS, REPLICA_SETS, FakeAPIServer
from support.fakecontrollers import running, until

NOW = datetime(2024, 5, 1, tzinfo=UTC)


def rs(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def pods_of(fake: FakeAPIServer) -> list[dict[str, Any]]:
    return [p for p in fake.objects(PODS, "default") if not p["metadata"].get("deletionTimestamp")]


async def test_creates_replicas_once_with_owner_and_status() -> None:
    async with running(lambda cs, f: ReplicaSetController(cs, f)) as (fake, cs):
        created = await cs.replica_sets.create(rs("web", 5))
        await until(lambda: len(pods_of(fake)) == 5)
        for i in range(5):  # more events: no more pods
            await cs.replica_sets.patch("web", {"metadata": {"annotations": {"n": str(i)}}}, namespace="default")

        def status() -> dict[str, Any]:
            return dict(fake.objects(REPLICA_SETS, "default")[0].get("status", {}))

        await until(lambda: status().get("replicas") == 5 and status().get("observedGeneration") == 1)
        assert len(pods_of(fake)) == 5
        assert all(p["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"] for p in pods_of(fake))
        await cs.replica_sets.patch("web", {"spec": {"replicas": 2}}, namespace="default")
        await until(lambda: len(pods_of(fake)) == 2)


async def test_refused_creation_is_slow_started_and_reported() -> None:
    async with running(lambda cs, f: ReplicaSetController(cs, f)) as (fake, cs):
        fake.fail_next(Forbidden('pods "web-" is forbidden: exceeded quota'), verb="POST",
                       path="/api/v1/namespaces/default/pods", times=2)
        await cs.replica_sets.create(rs("web", 8))
        await until(lambda: len(pods_of(fake)) == 8)  # retried with backoff until the apiserver accepts
        actions = list(fake.actions)

        def failure(body: Any) -> dict[str, Any] | None:
            conditions = ((body or {}).get("status") or {}).get("conditions") or []
            return next((c for c in conditions if c["type"] == "ReplicaFailure"), None)

        reported = next(i for i, a in enumerate(actions) if a.path.endswith("/status") and failure(a.body))
        condition = failure(actions[reported].body)
        assert condition is not None and condition["reason"] == "FailedCreate"
        assert "exceeded quota" in condition["message"]
        # Slow start: the first batch (one pod) failed, so the other seven were not even tried.
        assert sum(a.verb == "POST" and a.path.endswith("/pods") for a in actions[:reported]) == 1
        await until(lambda: failure(fake.objects(REPLICA_SETS, "default")[0]) is None)


async def test_slow_start_batches() -> None:
    calls: list[int] = []

    async def ok() -> None:
        calls.append(1)

    assert await slow_start_batch(10, 1, ok) == (10, None)
    assert len(calls) == 10
    calls.clear()

    async def fail_third() -> None:
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("no")

    successes, error = await slow_start_batch(10, 1, fail_third)
    assert (successes, str(error), len(calls)) == (2, "no", 3)  # batches 1, 2: the error stops the rest


def test_calculate_status_counts() -> None:
    owner = rs("web", 3)
    owner["metadata"]["generation"] = 4
    owner["spec"]["minReadySeconds"] = 10
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": "2024-04-30T23:59:55Z"}
    ready_long = {**ready, "lastTransitionTime": "2024-04-30T23:00:00Z"}
    pods: list[dict[str, Any]] = [{"metadata": {"labels": {"app": "web"}}, "status": {"conditions": [ready]}},
            {"metadata": {"labels": {"app": "web"}}, "status": {"conditions": [ready_long]}},
            {"metadata": {"labels": {"app": "other"}}, "status": {}}]
    assert calculate_status(owner, pods, None, NOW) == {
        "replicas": 3, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 1, "observedGeneration": 4}
    failed = calculate_status(owner, pods[:1], Forbidden("quota"), NOW)
    assert failed["conditions"][0]["reason"] == "FailedCreate"


async def test_rc_adopts_matching_orphan() -> None:
    async with running(lambda cs, f: new_replication_controller(cs, f)) as (fake, cs):
        await cs.pods.create({"metadata": {"name": "stray", "namespace": "default", "labels": {"app": "db"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}})
        rc = await cs.replication_controllers.create({
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"app": "db"},
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
        await until(lambda: len(pods_of(fake)) == 2)
        stray = await cs.pods.get("stray", "default")
        assert stray["metadata"]["ownerReferences"][0]["uid"] == rc["metadata"]["uid"]
        assert stray["metadata"]["ownerReferences"][0]["kind"] == "ReplicationController"
