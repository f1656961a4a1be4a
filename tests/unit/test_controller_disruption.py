"""controllers.disruption over the FakeAPIServer: expected pods from the pods' controllers
(ReplicationController, ReplicaSet, Deployment through its ReplicaSet, StatefulSet), healthy and allowed counts,
the DisruptionAllowed condition, the shared disruptedPods map and its two-minute expiry, unmanaged pods and the
SyncFailed fail-safe."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from controllers.disruption import DisruptionController, build_disrupted_pods, count_healthy
from controllers.manager import enabled_controllers
from kubeclient import EVENTS, POD_DISRUPTION_BUDGETS, Clientset, FakeAPIServer, InformerFactory
from support.fakecontrollers import running, until

NOW = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def owner(kind: str, name: str, uid: str, api_version: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}


def pod(name: str, *, ready: bool = True, owned_by: dict[str, Any] | None = None, app: str = "web",
        **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"app": app}, **meta}
    if owned_by:
        metadata["ownerReferences"] = [owned_by]
    return {"metadata": metadata, "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            "status": {"phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def pdb(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


def status(fake: FakeAPIServer, name: str = "web") -> dict[str, Any]:
    found = [o for o in fake.objects(POD_DISRUPTION_BUDGETS, "default") if o["metadata"]["name"] == name]
    return found[0].get("status") or {} if found else {}


def counts(fake: FakeAPIServer) -> tuple[int, int, int, int]:
    s = status(fake)
    return (s.get("expectedPods", -1), s.get("desiredHealthy", -1), s.get("currentHealthy", -1),
            s.get("disruptionsAllowed", -1))


def condition(fake: FakeAPIServer) -> tuple[str, str, str]:
    c = next((c for c in status(fake).get("conditions") or [] if c["type"] == "DisruptionAllowed"), {})
    return c.get("status", ""), c.get("reason", ""), c.get("message", "")


def make(cs: Clientset, factory: InformerFactory) -> DisruptionController:
    return DisruptionController(cs, factory, clock=lambda: NOW)


def test_it_is_on_by_default_with_its_alias() -> None:
    assert "disruption-controller" in enabled_controllers(["*"])
    assert enabled_controllers(["disruption"]) == ["disruption-controller"]


async def test_min_available_int_counts_selected_pods_and_follows_readiness() -> None:
    async with running(make) as (fake, cs):
        rc = (await cs.replication_controllers.create(
            {"metadata": {"name": "web"}, "spec": {"replicas": 5, "selector": {"app": "web"}, "template": {
                "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "b"}]}}}},
            "default"))
        ref = owner("ReplicationController", "web", rc["metadata"]["uid"], "v1")
        for i in range(3):
            await cs.pods.create(pod(f"web-{i}", owned_by=ref), "default")
        await cs.pods.create(pod("other", app="db"), "default")
        await cs.pod_disruption_budgets.create(pdb(minAvailable=2), "default")
        await until(lambda: counts(fake) == (3, 2, 3, 1))  # an int: expected = the selected pods, not the scale
        assert condition(fake) == ("True", "SufficientPods", "")
        assert status(fake)["observedGeneration"] == 1
        current = next(p for p in fake.objects(cs.pods.resource, "default") if p["metadata"]["name"] == "web-0")
        current["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        await cs.pods.update_status(current)
        await until(lambda: counts(fake) == (3, 2, 2, 0))
        assert condition(fake) == ("False", "InsufficientPods", "")


async def test_percentages_use_the_scale_of_the_deployment_behind_the_replica_set() -> None:
    async with running(make) as (fake, cs):
        deployment = await cs.deployments.create({"metadata": {"name": "web"}, "spec": {
            "replicas": 4, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c",
                                                                                          "image": "b"}]}}}},
            "default")
        rs = await cs.replica_sets.create({"metadata": {"name": "web-1", "ownerReferences": [
            owner("Deployment", "web", deployment["metadata"]["uid"])]}, "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c",
                                                                                          "image": "b"}]}}}},
            "default")
        for i in range(3):
            await cs.pods.create(pod(f"web-{i}", owned_by=owner("ReplicaSet", "web-1", rs["metadata"]["uid"])),
                                 "default")
        await cs.pod_disruption_budgets.create(pdb(maxUnavailable="50%"), "default")
        # expected 4 (the Deployment's replicas, not the RS's 1), desired 4 - ceil(50% of 4) = 2, healthy 3
        await until(lambda: counts(fake) == (4, 2, 3, 1))
        await cs.pod_disruption_budgets.create(pdb("half", minAvailable="60%"), "default")
        await until(lambda: (status(fake, "half").get("expectedPods"), status(fake, "half").get("desiredHealthy"),
                             status(fake, "half").get("disruptionsAllowed")) == (4, 3, 0))  # ceil(2.4) = 3


async def test_percentages_use_the_scale_of_a_stateful_set() -> None:
    async with running(make) as (fake, cs):
        sts = await cs.stateful_sets.create({"metadata": {"name": "web"}, "spec": {
            "replicas": 4, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c",
                                                                                          "image": "b"}]}}}},
            "default")
        for i in range(3):
            await cs.pods.create(pod(f"web-{i}", owned_by=owner("StatefulSet", "web", sts["metadata"]["uid"])),
                                 "default")
        await cs.pod_disruption_budgets.create(pdb(maxUnavailable="25%"), "default")
        await until(lambda: counts(fake) == (4, 3, 3, 0))  # 4 - ceil(25% of 4) = 3 desired, 3 healthy


async def test_unmanaged_pods_are_reported_and_unknown_controllers_fail_safe() -> None:
    async with running(make) as (fake, cs):
        await cs.pods.create(pod("lonely"), "default")
        await cs.pod_disruption_budgets.create(pdb(maxUnavailable=1), "default")
        await until(lambda: counts(fake) == (0, 0, 1, 0))  # nothing expected: no disruption allowed
        await until(lambda: any(e["reason"] == "UnmanagedPods" for e in fake.objects(EVENTS, "default")))
        await cs.pods.create(pod("stateful-0", owned_by=owner("StatefulSet", "db", "uid-1")), "default")
        await until(lambda: condition(fake) == ("False", "SyncFailed", 'found no controllers for pod "stateful-0"'))
        assert status(fake)["disruptionsAllowed"] == 0


async def test_disrupted_pods_are_not_healthy_until_they_go_or_two_minutes_pass() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    for i in range(3):
        await cs.pods.create(pod(f"web-{i}"), "default")
    created = await cs.pod_disruption_budgets.create(pdb(minAvailable=1), "default")
    created["status"] = {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 1, "expectedPods": 3,
                         "disruptedPods": {"web-0": stamp(NOW - timedelta(seconds=30)),
                                           "web-1": stamp(NOW - timedelta(minutes=3)),
                                           "gone": stamp(NOW - timedelta(seconds=5))}}
    await cs.pod_disruption_budgets.update_status(created)
    async with running(make, fake):
        # web-0 was evicted 30 s ago and still shows: not healthy, kept; web-1's entry expired; "gone" is gone
        await until(lambda: counts(fake) == (3, 1, 2, 1))
        assert status(fake)["disruptedPods"] == {"web-0": stamp(NOW - timedelta(seconds=30))}
        await until(lambda: any(e["reason"] == "NotDeleted" and e["involvedObject"]["name"] == "web-1"
                                for e in fake.objects(EVENTS, "default")))


def test_disrupted_pod_map_and_healthy_count() -> None:
    pods = [pod("a"), pod("b"), pod("c", deletionTimestamp=stamp(NOW)), pod("d", ready=False)]
    disrupted = {"a": stamp(NOW - timedelta(seconds=90)), "b": stamp(NOW - timedelta(seconds=121)),
                 "c": stamp(NOW)}
    kept, recheck, expired = build_disrupted_pods(pods, disrupted, NOW)
    assert kept == {"a": disrupted["a"]}
    assert recheck == NOW + timedelta(seconds=30)
    assert [p["metadata"]["name"] for p in expired] == ["b"]
    assert count_healthy(pods, kept, NOW) == 1  # b only: a is about to go, c terminating, d not Ready
