"""controllers.statefulset over the FakeAPIServer, and the pure rules of controllers.support.statefulutil: identities,
claims and their owners, versioned pods below the partition, and the status."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from controllers.manager import enabled_controllers
from controllers.statefulset import StatefulSetController
from controllers.support import statefulutil as su
from controllers.support.podutil import fmt_time, now_utc
from kubeclient import (
    CONTROLLER_REVISIONS,
    EVENTS,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    STATEFUL_SETS,
    Clientset,
    FakeAPIServer,
    InformerFactory,
)
from support.fakecontrollers import running, until

NS = "default"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
READY = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                                             "lastTransitionTime": "2025-12-31T00:00:00Z"}]}
REF = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "uid-web", "controller": True}


def statefulset(name: str = "web", image: str = "nginx", replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "generation": 1},
            "spec": {"replicas": replicas, "serviceName": "nginx", "selector": {"matchLabels": {"app": name}},
                     "podManagementPolicy": "OrderedReady",
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "www"},
                                               "spec": {"accessModes": ["ReadWriteOnce"],
                                                        "resources": {"requests": {"storage": "1Gi"}}}}],
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                     "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                     **spec}}


def controller(cs: Clientset, factory: InformerFactory) -> StatefulSetController:
    return StatefulSetController(cs, factory)


def names(fake: FakeAPIServer, resource: Any = PODS) -> list[str]:
    return sorted(o["metadata"]["name"] for o in fake.objects(resource, NS)
                  if not o["metadata"].get("deletionTimestamp"))


async def make_ready(cs: Clientset, fake: FakeAPIServer) -> None:
    for pod in fake.objects(PODS, NS):
        if pod.get("status", {}).get("phase") == "Pending":
            await cs.pods.update_status({**pod, "status": READY})


# --- pure rules -----------------------------------------------------------------------------------------------


async def converge(cs: Clientset, fake: FakeAPIServer, predicate: Any, timeout: float = 3.0) -> None:
    """Play the kubelet (every pending pod becomes Running and Ready) until ``predicate`` holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await make_ready(cs, fake)
        await asyncio.sleep(0.01)


def test_new_pod_has_its_identity_and_storage() -> None:
    sts = statefulset(ordinals={"start": 5})
    pod = su.new_pod(sts, 5, "web-abc", REF)
    assert pod["metadata"]["name"] == "web-5" and "generateName" not in pod["metadata"]
    assert pod["metadata"]["labels"] == {"app": "web", "statefulset.kubernetes.io/pod-name": "web-5",
                                         "apps.kubernetes.io/pod-index": "5", "controller-revision-hash": "web-abc"}
    assert pod["spec"]["hostname"] == "web-5" and pod["spec"]["subdomain"] == "nginx"
    assert pod["spec"]["volumes"] == [{"name": "www", "persistentVolumeClaim": {"claimName": "www-web-5"}}]
    assert su.identity_matches(sts, pod) and su.storage_matches(sts, pod)
    claim = su.claims_for(sts, 5)["www"]
    assert claim["metadata"] == {"name": "www-web-5", "namespace": NS, "labels": {"app": "web"}}
    assert su.in_ordinal_range(pod, sts) and not su.in_ordinal_range(su.new_pod(sts, 8, "r", REF), sts)


def test_pods_below_the_partition_come_from_the_current_revision() -> None:
    current, update = statefulset(image="old"), statefulset(image="new")
    current["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = 2
    old = su.versioned_pod(current, update, "web-1", "web-2", 1, REF)
    new = su.versioned_pod(current, update, "web-1", "web-2", 2, REF)
    assert (old["spec"]["containers"][0]["image"], su.pod_revision(old)) == ("old", "web-1")
    assert (new["spec"]["containers"][0]["image"], su.pod_revision(new)) == ("new", "web-2")
    current["spec"]["updateStrategy"] = {"type": "RollingUpdate"}  # no rollingUpdate: the current pods stay so
    current["status"] = {"currentReplicas": 1}
    assert [su.pod_revision(su.versioned_pod(current, update, "web-1", "web-2", i, REF)) for i in (0, 1)] == [
        "web-1", "web-2"]


def test_claim_owners_follow_the_retention_policy() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "x"}
    claim = {"metadata": {"name": "www-web-3", "ownerReferences": [other]}}
    pod = {"metadata": {"name": "web-3", "uid": "pod-uid"}}
    sts = statefulset(persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete", "whenScaled": "Delete"})
    assert not su.claim_owners_up_to_date(claim, sts, pod)
    refs = su.claim_owner_refs(claim, sts, pod)  # web-3 is beyond 3 replicas: controlled by its pod, not the set
    assert refs == [other, {"apiVersion": "v1", "kind": "Pod", "name": "web-3", "uid": "pod-uid", "controller": True,
                            "blockOwnerDeletion": True}]
    owned = {"metadata": {"name": "www-web-3", "ownerReferences": refs}}
    assert su.claim_owners_up_to_date(owned, sts, pod)
    sts["spec"]["replicas"] = 4  # back in range: the set controls it again
    assert not su.claim_owners_up_to_date(owned, sts, pod)
    assert [(r["kind"], r["uid"]) for r in su.claim_owner_refs(owned, sts, pod)] == [
        ("ConfigMap", "x"), ("StatefulSet", "uid-web")]
    sts["spec"]["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert su.claim_owner_refs(owned, sts, pod) == [other]
    # a claim of an earlier web-3 (another uid) is stale for a new web-3 and left alone
    new_pod = {"metadata": {"name": "web-3"}}
    sts["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"] = "Delete"
    assert su.claim_is_stale(owned, sts, new_pod) and not su.claim_is_stale(owned, sts, pod)
    assert su.claim_owners_up_to_date(owned, sts, new_pod)
    # another controller: ours is scrubbed and nothing added
    foreign = {"metadata": {"ownerReferences": [{**other, "controller": True}, refs[1]]}}
    assert not su.claim_owners_up_to_date(foreign, sts, pod)
    assert su.claim_owner_refs(foreign, sts, pod) == [{**other, "controller": True}]


def test_status_completes_a_rolling_update() -> None:
    ready = {"metadata": {"name": "web-0", "labels": {"controller-revision-hash": "web-2"}}, "status": READY}
    counts = su.replica_status([ready, {**ready, "metadata": {"name": "web-1", "labels": {}}}], 0, "web-1",
                               "web-2", NOW)
    assert counts == {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "currentReplicas": 0,
                      "updatedReplicas": 1}
    sts = statefulset()
    assert su.wire_status(sts, counts, "web-1", "web-2", 0) == {
        "observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "updatedReplicas": 1, "currentRevision": "web-1",
        "updateRevision": "web-2", "collisionCount": 0, "availableReplicas": 2}
    done = {**counts, "updatedReplicas": 2}
    assert su.wire_status(sts, done, "web-1", "web-2", 0)["currentRevision"] == "web-2"


def test_statefulset_controller_is_on_by_default() -> None:
    assert "statefulset-controller" in enabled_controllers(["*"])
    assert enabled_controllers(["statefulset"]) == ["statefulset-controller"]


# --- the controller -------------------------------------------------------------------------------------------


async def test_ordered_ready_creates_one_pod_at_a_time_with_claims() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.stateful_sets.create(statefulset(), NS)
    async with running(controller, fake):
        await until(lambda: names(fake) == ["web-0"])
        assert names(fake, PERSISTENT_VOLUME_CLAIMS) == ["www-web-0"]
        await make_ready(cs, fake)
        await until(lambda: names(fake) == ["web-0", "web-1"])
        await make_ready(cs, fake)
        await until(lambda: names(fake) == ["web-0", "web-1", "web-2"])
        await make_ready(cs, fake)
        await until(lambda: (fake.objects(STATEFUL_SETS, NS)[0].get("status") or {}).get("readyReplicas") == 3)
        assert names(fake, PERSISTENT_VOLUME_CLAIMS) == ["www-web-0", "www-web-1", "www-web-2"]
        status = fake.objects(STATEFUL_SETS, NS)[0]["status"]
        revision = fake.objects(CONTROLLER_REVISIONS, NS)[0]["metadata"]["name"]
        assert status["currentRevision"] == status["updateRevision"] == revision
        assert status["currentReplicas"] == status["updatedReplicas"] == status["availableReplicas"] == 3
        # scale down: the highest ordinal goes first, the claims stay
        await cs.stateful_sets.patch("web", {"spec": {"replicas": 1}}, "merge", NS)
        await until(lambda: names(fake) == ["web-0"])
        assert names(fake, PERSISTENT_VOLUME_CLAIMS) == ["www-web-0", "www-web-1", "www-web-2"]
    messages = [e["message"] for e in fake.objects(EVENTS, NS)]
    assert "create Pod web-0 in StatefulSet web successful" in messages
    assert "create Claim www-web-0 Pod web-0 in StatefulSet web success" in messages
    assert "delete Pod web-2 in StatefulSet web successful" in messages


async def test_parallel_creates_all_and_rolling_update_stops_at_the_partition() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.stateful_sets.create(statefulset(podManagementPolicy="Parallel", volumeClaimTemplates=[]), NS)

    def images() -> dict[str, str]:
        return {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in fake.objects(PODS, NS)
                if not p["metadata"].get("deletionTimestamp")}

    async with running(controller, fake):
        await until(lambda: names(fake) == ["web-0", "web-1", "web-2"])
        await make_ready(cs, fake)
        patch = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 1}},
                          "template": {"spec": {"containers": [{"name": "c", "image": "redis"}]}}}}
        await cs.stateful_sets.patch("web", patch, "merge", NS)
        await converge(cs, fake, lambda: images() == {"web-0": "nginx", "web-1": "redis", "web-2": "redis"})
        await until(lambda: (fake.objects(STATEFUL_SETS, NS)[0].get("status") or {}).get("updatedReplicas") == 2)
        assert len(fake.objects(CONTROLLER_REVISIONS, NS)) == 2


async def test_failed_pod_is_recreated_and_claim_owners_follow_the_policy() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    policy = {"whenDeleted": "Delete", "whenScaled": "Retain"}
    await cs.stateful_sets.create(statefulset(replicas=1, persistentVolumeClaimRetentionPolicy=policy), NS)
    async with running(controller, fake):
        await until(lambda: names(fake) == ["web-0"])
        await until(lambda: bool(fake.objects(PERSISTENT_VOLUME_CLAIMS, NS)[0]["metadata"].get("ownerReferences")))
        refs = fake.objects(PERSISTENT_VOLUME_CLAIMS, NS)[0]["metadata"]["ownerReferences"]
        assert refs == [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": True,
                         "blockOwnerDeletion": True, "uid": fake.objects(STATEFUL_SETS, NS)[0]["metadata"]["uid"]}]
        first = fake.objects(PODS, NS)[0]
        await cs.pods.update_status({**first, "status": {"phase": "Failed"}})
        await until(lambda: [p["metadata"]["uid"] for p in fake.objects(PODS, NS)] not in ([], [first["metadata"]
                                                                                                 ["uid"]]))
    reasons = [e["reason"] for e in fake.objects(EVENTS, NS)]
    assert "RecreatingFailedPod" in reasons


async def test_min_ready_seconds_holds_the_next_pod_back() -> None:
    fake = FakeAPIServer()
    cs = Clientset(fake)
    await cs.stateful_sets.create(statefulset(replicas=2, minReadySeconds=3600, volumeClaimTemplates=[]), NS)

    def synced(**expected: int) -> bool:
        status = fake.objects(STATEFUL_SETS, NS)[0].get("status") or {}
        return all(status.get(k, 0) == v for k, v in expected.items())

    async with running(controller, fake):
        await until(lambda: names(fake) == ["web-0"])
        pod = fake.objects(PODS, NS)[0]
        just_ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                                                          "lastTransitionTime": fmt_time(now_utc())}]}
        await cs.pods.update_status({**pod, "status": just_ready})
        await until(lambda: synced(replicas=1, readyReplicas=1, availableReplicas=0))
        assert names(fake) == ["web-0"]  # ready, but not yet for minReadySeconds: web-1 waits
