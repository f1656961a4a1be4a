"""controllers.job over the in-memory FakeAPIServer: pods up to parallelism, counting through the tracking
finalizer, Complete and Failed with their target conditions first, the pod failure backoff, Indexed Jobs,
the active deadline and orphaned pods; the pure helpers."""

from __future__ import annotations

from typing import Any

from controllers.job import (
    TRACKING_FINALIZER,
    JobController,
    backoff_delay,
    format_indexes,
    parse_indexes,
    wanted_active,
)
from kubeclient import EVENTS, JOBS, PODS, Clientset, FakeAPIServer
from kubeclient.informer import InformerFactory
from support.fakecontrollers import running, until

FAST = 0.01


def job(name: str, **spec: Any) -> dict[str, Any]:
    """A Job as the apiserver stores it after defaulting (selector and labels already generated)."""
    labels = {"batch.kubernetes.io/job-name": name}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
            "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
                     "selector": {"matchLabels": labels}, **spec,
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}},
            "status": {}}


def live_pods(fake: FakeAPIServer) -> list[dict[str, Any]]:
    return [p for p in fake.objects(PODS, "default") if not p["metadata"].get("deletionTimestamp")
            and p["status"].get("phase") == "Pending"]


def status(fake: FakeAPIServer, name: str = "pi") -> dict[str, Any]:
    return dict(next(j for j in fake.objects(JOBS, "default") if j["metadata"]["name"] == name).get("status") or {})


def conditions(fake: FakeAPIServer, name: str = "pi") -> list[tuple[str, str]]:
    return [(c["type"], c["reason"]) for c in status(fake, name).get("conditions") or []]


async def finish(cs: Clientset, pod: dict[str, Any], phase: str) -> None:
    await cs.pods.patch(pod["metadata"]["name"], {"status": {"phase": phase}}, "merge", "default",
                        subresource="status")


def controller(cs: Clientset, factory: Any) -> JobController:
    return JobController(cs, factory, backoff_base=FAST, backoff_cap=FAST)


async def test_runs_a_pod_to_completion_and_counts_it_through_the_finalizer() -> None:
    async with running(controller) as (fake, cs):
        created = await cs.resource(JOBS).create(job("pi"))
        await until(lambda: len(live_pods(fake)) == 1)
        pod = live_pods(fake)[0]
        assert pod["metadata"]["generateName"] == "pi-"
        assert pod["metadata"]["finalizers"] == [TRACKING_FINALIZER]
        assert pod["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        await until(lambda: status(fake).get("active") == 1 and "startTime" in status(fake))
        await finish(cs, pod, "Succeeded")
        await until(lambda: ("Complete", "CompletionsReached") in conditions(fake))
        assert conditions(fake) == [("SuccessCriteriaMet", "CompletionsReached"), ("Complete", "CompletionsReached")]
        final = status(fake)
        assert final["succeeded"] == 1 and final["active"] == 0 and final["uncountedTerminatedPods"] == {}
        assert final["completionTime"]
        assert fake.objects(PODS, "default")[0]["metadata"].get("finalizers") in (None, [])
        assert len(fake.objects(PODS, "default")) == 1
        await until(lambda: any(e.get("reason") == "Completed" for e in fake.objects(EVENTS, "default")))
        reasons = {e["reason"] for e in fake.objects(EVENTS, "default")}
        assert {"SuccessfulCreate", "Completed"} <= reasons


async def test_parallelism_two_completions_four() -> None:
    async with running(controller) as (fake, cs):
        await cs.resource(JOBS).create(job("pi", parallelism=2, completions=4))
        for done in range(4):
            await until(lambda done=done: len(live_pods(fake)) == min(2, 4 - done))
            assert len(live_pods(fake)) <= 2
            await finish(cs, live_pods(fake)[0], "Succeeded")
            await until(lambda done=done: status(fake).get("succeeded") == done + 1)
        await until(lambda: ("Complete", "CompletionsReached") in conditions(fake))
        assert len(fake.objects(PODS, "default")) == 4


async def test_failures_past_the_backoff_limit_fail_the_job() -> None:
    async with running(controller) as (fake, cs):
        await cs.resource(JOBS).create(job("pi", backoffLimit=1))
        for failed in range(2):
            await until(lambda: len(live_pods(fake)) == 1)
            await finish(cs, live_pods(fake)[0], "Failed")
            await until(lambda failed=failed: status(fake).get("failed") == failed + 1)
        await until(lambda: ("Failed", "BackoffLimitExceeded") in conditions(fake))
        assert conditions(fake) == [("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]
        assert "completionTime" not in status(fake)
        assert len(fake.objects(PODS, "default")) == 2
        await until(lambda: any(e.get("reason") == "BackoffLimitExceeded" for e in fake.objects(EVENTS, "default")))


async def test_indexed_job_gives_each_pod_its_index() -> None:
    async with running(controller) as (fake, cs):
        await cs.resource(JOBS).create(job("idx", parallelism=3, completions=3, completionMode="Indexed"))
        await until(lambda: len(live_pods(fake)) == 3)
        pods = sorted(live_pods(fake), key=lambda p: p["metadata"]["annotations"][
            "batch.kubernetes.io/job-completion-index"])
        for i, pod in enumerate(pods):
            assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == str(i)
            assert pod["metadata"]["generateName"] == f"idx-{i}-"
            assert pod["spec"]["hostname"] == f"idx-{i}"
            assert pod["spec"]["containers"][0]["env"] == [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}]
        await finish(cs, pods[0], "Succeeded")
        await finish(cs, pods[2], "Succeeded")
        await until(lambda: status(fake, "idx").get("completedIndexes") == "0,2")
        await finish(cs, pods[1], "Succeeded")
        await until(lambda: ("Complete", "CompletionsReached") in conditions(fake, "idx"))
        assert status(fake, "idx")["completedIndexes"] == "0-2"


async def test_active_deadline_fails_the_job_and_deletes_its_pods() -> None:
    async with running(controller) as (fake, cs):
        await cs.resource(JOBS).create(job("pi", activeDeadlineSeconds=1))
        await until(lambda: ("Failed", "DeadlineExceeded") in conditions(fake), timeout=5)
        assert sum(a.verb == "POST" and a.path.endswith("/pods") for a in fake.actions) == 1
        assert fake.objects(PODS, "default") == []  # deleted, counted as failed, finalizer removed
        assert status(fake)["failed"] == 1


async def test_orphaned_pod_loses_the_finalizer() -> None:
    async with running(controller) as (fake, cs):
        pod = {"metadata": {"name": "left", "namespace": "default", "finalizers": [TRACKING_FINALIZER],
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "gone",
                                                 "uid": "u-1", "controller": True}]},
               "spec": {"containers": [{"name": "c", "image": "i"}]}}
        await cs.pods.create(pod, "default")
        await until(lambda: not fake.objects(PODS, "default")[0]["metadata"].get("finalizers"))


def test_indexes_round_trip() -> None:
    assert parse_indexes("1,3-5,7") == {1, 3, 4, 5, 7}
    assert format_indexes({1, 3, 4, 5, 7}) == "1,3-5,7"
    assert format_indexes({0, 1}) == "0,1"
    assert parse_indexes("") == set() and format_indexes(set()) == ""


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [backoff_delay(n, 10, 360) for n in range(7)] == [0, 10, 20, 40, 80, 160, 320]
    assert backoff_delay(8, 10, 360) == 360


def test_wanted_active() -> None:
    assert wanted_active({"parallelism": 2, "completions": 4}, 3, set()) == 1
    assert wanted_active({"parallelism": 3}, 0, set()) == 3  # work queue: until one succeeds
    assert wanted_active({"parallelism": 3}, 1, set()) == 0
    assert wanted_active({"parallelism": 2, "completions": 3, "completionMode": "Indexed"}, 0, {0, 1}) == 1


async def test_ttl_after_finished_deletes_the_finished_job() -> None:
    from controllers.ttlafterfinished import TTLAfterFinishedController

    async with running(lambda cs, f: TTLAfterFinishedController(cs, f)) as (fake, cs):
        done = {"type": "Complete", "status": "True", "lastTransitionTime": "2024-05-01T00:00:00Z"}
        kept = job("kept", ttlSecondsAfterFinished=0)
        await cs.resource(JOBS).create(kept)
        expired = job("old", ttlSecondsAfterFinished=5)
        expired["status"] = {"conditions": [done]}
        created = await cs.resource(JOBS).create(expired)
        await cs.resource(JOBS).update_status({**created, "status": {"conditions": [done]}})
        await until(lambda: [j["metadata"]["name"] for j in fake.objects(JOBS, "default")] == ["kept"])
        delete = next(a for a in fake.actions if a.verb == "DELETE")
        assert delete.body["propagationPolicy"] == "Foreground"


async def test_an_update_of_one_new_pod_does_not_stand_for_the_creation_of_another() -> None:
    """kube's ``addPod``/``updatePod``: only an added pod is an observed creation. With parallelism 2 the first
    pod can be bound (an update) before the second one's add arrives; counted as a creation, that update let the
    next sync see one pod of two and create a third, which it then deleted again and counted as failed."""
    cs = Clientset(FakeAPIServer())
    jobs = controller(cs, InformerFactory(cs))
    owner = job("pi", parallelism=2, completions=4)
    owner["metadata"]["uid"] = "job-uid"
    jobs.job_informer.indexer.add(owner)
    key = "default/pi"

    def pod(name: str, node: str = "") -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid",
                             "ownerReferences": [{"kind": "Job", "name": "pi", "uid": "job-uid", "controller": True}]},
                "spec": {"nodeName": node} if node else {}, "status": {"phase": "Pending"}}

    jobs.expectations.expect_creations(key, 2)
    jobs._add_pod(pod("pi-a"))
    jobs._update_pod(pod("pi-a"), pod("pi-a", node="node01"))
    assert not jobs.expectations.satisfied(key)
    jobs._add_pod(pod("pi-b"))
    assert jobs.expectations.satisfied(key)
