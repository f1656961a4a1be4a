"""Jobs: SetDefaults_Job, the generated selector and labels, ValidateJob's causes, the immutable template, the
NAME STATUS COMPLETIONS DURATION AGE table, and the protobuf body kubectl sends; CronJobs' defaults, ValidateCronJob
and table."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from apiserver.protobuf.kinds import message_type
from apiserver.registry.cronjobs import CronJobStrategy
from apiserver.registry.jobs import JobStrategy, completions_cell, duration_cell, job_status

JOB = JobStrategy()
UID = "0b5c0f7e-1111-2222-3333-444455556666"


def job(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "pi", "namespace": "default", "uid": UID,
                         "creationTimestamp": "2024-05-01T00:00:00Z"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox"}]}}, **spec}}


def created(**spec: Any) -> dict[str, Any]:
    obj = job(**spec)
    JOB.prepare_for_create(obj)
    return obj


def messages(obj: dict[str, Any]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in JOB.validate(obj)]


def test_defaults_and_generated_selector() -> None:
    obj = created()
    spec = obj["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"], spec["completionMode"],
            spec["suspend"], spec["manualSelector"], spec["podReplacementPolicy"]) == \
        (1, 1, 6, "NonIndexed", False, False, "TerminatingOrFailed")
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}
    labels = {"batch.kubernetes.io/controller-uid": UID, "batch.kubernetes.io/job-name": "pi",
              "controller-uid": UID, "job-name": "pi"}
    assert spec["template"]["metadata"]["labels"] == labels
    assert obj["metadata"]["labels"] == labels  # a Job without labels takes its template's
    assert obj["status"] == {} and JOB.validate(obj) == []


def test_work_queue_job_keeps_completions_unset() -> None:
    spec = created(parallelism=3)["spec"]
    assert "completions" not in spec and spec["parallelism"] == 3


def test_manual_selector_is_left_alone_and_must_match() -> None:
    obj = created(manualSelector=True, selector={"matchLabels": {"app": "x"}})
    assert obj["spec"]["selector"] == {"matchLabels": {"app": "x"}}
    assert messages(obj) == ["spec.template.metadata.labels: Invalid value: map[string]string(nil): "
                             "`selector` does not match template `labels`"]


def test_validation_causes() -> None:
    obj = created(backoffLimit=-1, completionMode="Sometimes", activeDeadlineSeconds=0)
    obj["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert messages(obj) == [
        "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
        "spec.activeDeadlineSeconds: Invalid value: 0: must be greater than 0",
        'spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"',
        'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"',
    ]
    indexed = created(completionMode="Indexed", parallelism=2)  # completions stays unset with parallelism
    assert messages(indexed) == ["spec.completions: Required value: when completion mode is Indexed"]
    stolen = created()
    stolen["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] = "other"
    assert "spec.selector" in [c.field for c in JOB.validate(stolen)]


def test_template_and_selector_are_immutable() -> None:
    old = created()
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "alpine"
    new["spec"]["parallelism"] = 4
    JOB.prepare_for_update(new, old)
    assert [c.field for c in JOB.validate_update(new, old)] == ["spec.template"]
    scaled = copy.deepcopy(old)
    scaled["spec"]["parallelism"] = 4  # parallelism may change
    JOB.prepare_for_update(scaled, old)
    assert JOB.validate_update(scaled, old) == []


def test_table_cells() -> None:
    now = datetime(2024, 5, 1, 0, 10, tzinfo=UTC)
    status = {"startTime": "2024-05-01T00:00:00Z", "succeeded": 1}
    assert completions_cell({"completions": 4}, status) == "1/4"
    assert completions_cell({"parallelism": 3}, status) == "1/1 of 3"
    assert completions_cell({"parallelism": 1}, {}) == "0/1"
    assert duration_cell({}) == ""
    assert duration_cell(status, now) == "10m"
    assert duration_cell({**status, "completionTime": "2024-05-01T00:00:42Z"}) == "42s"
    assert job_status({"status": {"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}]}}) == \
        "SuccessCriteriaMet"
    assert job_status({"status": {"conditions": [{"type": "FailureTarget", "status": "True"},
                                                 {"type": "Failed", "status": "True"}]}}) == "Failed"
    assert job_status({"metadata": {"deletionTimestamp": "x"}}) == "Terminating"
    assert job_status({}) == "Running"
    obj = created(parallelism=2, completions=4)
    obj["metadata"]["creationTimestamp"] = (datetime.now(UTC) - timedelta(days=2)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    assert [c.name for c in JOB.columns()] == ["Name", "Status", "Completions", "Duration", "Age", "Containers",
                                               "Images", "Selector"]
    assert JOB.row(obj) == ["pi", "Running", "0/4", "", "2d", "c", "busybox",
                            f"batch.kubernetes.io/controller-uid={UID}"]


def test_protobuf_kind_and_field_selector() -> None:
    assert message_type("batch/v1", "Job").DESCRIPTOR.full_name == "k8s.io.api.batch.v1.Job"
    assert JOB.selectable_fields(created())["status.successful"] == "0"


def test_cronjob_defaults_validation_and_table() -> None:
    cj = CronJobStrategy()
    obj: dict[str, Any] = {"metadata": {"name": "hello", "namespace": "default", "creationTimestamp": None},
                           "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": job()["spec"]}}}
    cj.prepare_for_create(obj)
    spec = obj["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
    assert "backoffLimit" not in spec["jobTemplate"]["spec"]  # each Job is defaulted when it is created
    assert cj.validate(obj) == []
    assert cj.row(obj)[:6] == ["hello", "*/5 * * * *", "<none>", "False", 0, "<none>"]
    bad = copy.deepcopy(obj)
    bad["metadata"]["name"] = "x" * 53
    bad["spec"].update(schedule="TZ=UTC 61 * * * *", timeZone="Mars/Olympus", concurrencyPolicy="Sometimes")
    bad["spec"]["jobTemplate"]["spec"]["manualSelector"] = True
    assert [f"{c.field}: {c.message}" for c in cj.validate(bad)] == [
        f'metadata.name: Invalid value: "{"x" * 53}": must be no more than 52 characters',
        'spec.schedule: Invalid value: "TZ=UTC 61 * * * *": expected exactly 5 fields, found 6: '
        '[TZ=UTC 61 * * * *]',
        'spec.schedule: Invalid value: "TZ=UTC 61 * * * *": cannot use both timeZone field and TZ or CRON_TZ in '
        'schedule',
        'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus',
        'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"',
        'spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: "nil", "false"',
    ]
    assert message_type("batch/v1", "CronJob").DESCRIPTOR.full_name == "k8s.io.api.batch.v1.CronJob"
