"""controllers.cronjob over the in-memory FakeAPIServer with a clock the test moves: a Job per scheduled minute,
named after it and owned by the CronJob, status.active and lastScheduleTime, Forbid and Replace, suspend, the
history limits; apimachinery.cron's parser and next times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from apimachinery import cron
from controllers.cronjob import SCHEDULED_TIMESTAMP, CronJobController
from kubeclient import CRON_JOBS, EVENTS, JOBS, Clientset, FakeAPIServer
from support.fakecontrollers import running, until


class Clock:
    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


def cronjob(name: str = "hello", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedule": "*/1 * * * *", "concurrencyPolicy": "Allow", "suspend": False,
                     "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1, **spec,
                     "jobTemplate": {"metadata": {"labels": {"team": "a"}}, "spec": {"template": {"spec": {
                         "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}


def jobs(fake: FakeAPIServer) -> list[dict[str, Any]]:
    return [j for j in fake.objects(JOBS, "default") if not j["metadata"].get("deletionTimestamp")]


def cj_status(fake: FakeAPIServer) -> dict[str, Any]:
    return dict(fake.objects(CRON_JOBS, "default")[0].get("status") or {})


async def finish(cs: Clientset, job: dict[str, Any], condition: str) -> None:
    stamp = "2024-05-01T00:00:00Z"
    status = {"conditions": [{"type": condition, "status": "True"}], "startTime": stamp}
    if condition == "Complete":
        status["completionTime"] = stamp
    await cs.resource(JOBS).patch(job["metadata"]["name"], {"status": status}, "merge", "default",
                                  subresource="status")


async def test_creates_one_job_per_scheduled_minute() -> None:
    clock = Clock()
    async with running(lambda cs, f: CronJobController(cs, f, now=clock)) as (fake, cs):
        created = await cs.resource(CRON_JOBS).create(cronjob())
        clock.offset = timedelta(minutes=2)
        await cs.resource(CRON_JOBS).patch("hello", {"metadata": {"annotations": {"tick": "1"}}}, namespace="default")
        await until(lambda: len(jobs(fake)) == 1)
        job = jobs(fake)[0]
        minute = int(parse_minute(job))
        assert job["metadata"]["name"] == f"hello-{minute}"
        assert job["metadata"]["labels"] == {"team": "a"}
        assert job["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
        await until(lambda: [r["name"] for r in cj_status(fake).get("active", [])] == [job["metadata"]["name"]])
        assert cj_status(fake)["lastScheduleTime"]
        await finish(cs, job, "Complete")
        await until(lambda: "active" not in cj_status(fake) and "lastSuccessfulTime" in cj_status(fake))
        await until(lambda: any(e.get("reason") == "SawCompletedJob" for e in fake.objects(EVENTS, "default")))
        assert len(jobs(fake)) == 1  # the same minute is never run twice


def parse_minute(job: dict[str, Any]) -> float:
    return datetime.fromisoformat(job["metadata"]["annotations"][SCHEDULED_TIMESTAMP]).timestamp() // 60


async def test_forbid_skips_while_a_job_runs_and_replace_replaces_it() -> None:
    clock = Clock()
    async with running(lambda cs, f: CronJobController(cs, f, now=clock)) as (fake, cs):
        await cs.resource(CRON_JOBS).create(cronjob(concurrencyPolicy="Forbid"))
        clock.offset = timedelta(minutes=2)
        await cs.resource(CRON_JOBS).patch("hello", {"metadata": {"annotations": {"t": "1"}}}, namespace="default")
        await until(lambda: len(jobs(fake)) == 1 and "active" in cj_status(fake))
        clock.offset = timedelta(minutes=4)
        await cs.resource(CRON_JOBS).patch("hello", {"metadata": {"annotations": {"t": "2"}}}, namespace="default")
        await until(lambda: fake.objects(CRON_JOBS, "default")[0]["metadata"]["annotations"]["t"] == "2")
        assert len(jobs(fake)) == 1
        first = jobs(fake)[0]["metadata"]["name"]
        await cs.resource(CRON_JOBS).patch("hello", {"spec": {"concurrencyPolicy": "Replace"}}, namespace="default")
        await until(lambda: [j["metadata"]["name"] for j in jobs(fake)] not in ([first], []))
        assert first not in [j["metadata"]["name"] for j in jobs(fake)]


async def test_suspended_cronjob_creates_nothing() -> None:
    clock = Clock()
    clock.offset = timedelta(minutes=3)
    async with running(lambda cs, f: CronJobController(cs, f, now=clock)) as (fake, cs):
        await cs.resource(CRON_JOBS).create(cronjob(suspend=True))
        await cs.resource(CRON_JOBS).patch("hello", {"metadata": {"annotations": {"t": "1"}}}, namespace="default")
        await until(lambda: fake.objects(CRON_JOBS, "default")[0]["metadata"].get("annotations"))
        assert jobs(fake) == []


async def test_history_limits_delete_the_oldest_finished_jobs() -> None:
    async with running(lambda cs, f: CronJobController(cs, f)) as (fake, cs):
        cj = await cs.resource(CRON_JOBS).create(cronjob(successfulJobsHistoryLimit=1, failedJobsHistoryLimit=0,
                                                         schedule="0 0 1 1 *"))
        owner = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "hello", "uid": cj["metadata"]["uid"],
                 "controller": True}
        for i, condition in enumerate(("Complete", "Complete", "Failed")):
            job = await cs.resource(JOBS).create({"metadata": {"name": f"old-{i}", "ownerReferences": [owner]},
                                                  "spec": {}}, "default")
            await finish(cs, job, condition)
        await until(lambda: sorted(j["metadata"]["name"] for j in jobs(fake)) == ["old-1"])


def test_cron_parser() -> None:
    utc = UTC
    start = datetime(2024, 5, 4, 0, 3, tzinfo=utc)  # a Saturday
    assert cron.parse("*/5 * * * *").next_after(start, utc) == datetime(2024, 5, 4, 0, 5, tzinfo=utc)
    assert cron.parse("0 9 * * mon-fri").next_after(start, utc) == datetime(2024, 5, 6, 9, 0, tzinfo=utc)
    assert cron.parse("@hourly").next_after(start, utc) == datetime(2024, 5, 4, 1, 0, tzinfo=utc)
    assert cron.parse("0 0 1,15 * 1").next_after(start, utc) == datetime(2024, 5, 6, 0, 0, tzinfo=utc)  # dom or dow
    shanghai = cron.parse("0 9 * * *").next_after(start, ZoneInfo("Asia/Shanghai"))
    assert shanghai is not None and shanghai.astimezone(utc) == datetime(2024, 5, 4, 1, 0, tzinfo=utc)
    assert cron.parse("0 0 30 2 *").next_after(start, utc) is None
    for bad, message in (("* * *", "expected exactly 5 fields, found 3: [* * *]"),
                         ("61 * * * *", "end of range (61) above maximum (59): 61"),
                         ("*/0 * * * *", "step of range should be a positive number: */0")):
        with pytest.raises(cron.CronError, match=message.replace("[", r"\[").replace("*", r"\*").replace(
                "(", r"\(").replace(")", r"\)")):
            cron.parse(bad)
