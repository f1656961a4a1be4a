"""Jobs (batch/v1): run pods to completion; the apiserver generates the selector that ties a Job to its pods.

Unless ``spec.manualSelector`` is true, ``prepare_for_create`` does what kube's ``generateSelector`` does: the
template gets ``batch.kubernetes.io/controller-uid`` / ``batch.kubernetes.io/job-name`` and the legacy
``controller-uid`` / ``job-name`` labels (values the user already set are kept, and validation then says
whether they fit), and the selector matches ``batch.kubernetes.io/controller-uid=<uid>``, so a Job only ever
selects its own pods; a Job without labels takes its template's. Validation is ``ValidateJob`` /
``ValidateJobSpecUpdate`` for the fields the job controller reads; the template is immutable, as are the selector,
completionMode and completions.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from apimachinery.errors import Cause
from apimachinery.meta import parse_time
from apimachinery.validation import (
    Raw,
    go_string_map,
    invalid,
    not_supported,
    required,
    validate_immutable,
    validate_label_selector,
    validate_nonnegative,
)
from apiserver.registry import selectors
from apiserver.registry.podspec import default_pod_template, validate_pod_template
from apiserver.registry.qos import reject_unparsable, resource_lists
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn, human_duration
from apiserver.registry.tables import container_cells, since, template_columns

CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
COMPLETION_MODES = ("NonIndexed", "Indexed")
JOB_RESTART_POLICIES = ("OnFailure", "Never")
POD_REPLACEMENT_POLICIES = ("TerminatingOrFailed", "Failed")
DEFAULT_BACKOFF_LIMIT = 6
SELECTOR_DESCRIPTION = ("A label query over pods that should match the pod count. Normally, the system sets this "
                        "field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/"
                        "labels/#label-selectors")


class JobStrategy(Strategy):
    group = "batch"
    kind = "Job"
    resource = "jobs"
    singular = "job"
    categories = ("all",)
    subresources = ("status",)
    status_resets = ("labels",)

    def prepare_for_create(self, obj: Object) -> None:
        self.default(obj)
        spec = obj["spec"]
        if not spec.get("manualSelector"):
            generate_selector(obj)
        default_labels(obj)
        obj["status"] = {}

    def default(self, obj: Object) -> None:
        """``SetDefaults_Job``: completions and parallelism 1 when neither is set, backoffLimit 6 …"""
        spec = obj.setdefault("spec", {})
        template = spec.setdefault("template", {})
        reject_unparsable(resource_lists(template.get("spec") or {}), self.kind, self.version)
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1
        if spec.get("parallelism") is None:
            spec["parallelism"] = 1
        if spec.get("backoffLimit") is None:
            spec["backoffLimit"] = 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None \
                else DEFAULT_BACKOFF_LIMIT
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        spec.setdefault("manualSelector", False)
        if spec.get("podReplacementPolicy") is None:
            spec["podReplacementPolicy"] = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
        default_pod_template(template)
        default_labels(obj)

    def validate(self, obj: Object) -> list[Cause]:
        return validate_job_spec(obj.get("spec") or {}) + validate_generated_selector(obj)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        causes = self.validate(new)
        causes.extend(validate_immutable(new_spec.get("selector"), old_spec.get("selector"), "spec.selector",
                                         selectors.go_label_selector(new_spec.get("selector"))))
        for field in ("completions", "completionMode", "backoffLimitPerIndex", "podFailurePolicy"):
            causes.extend(validate_immutable(new_spec.get(field), old_spec.get(field), f"spec.{field}"))
        if new_spec.get("template") != old_spec.get("template"):
            causes.append(invalid("spec.template", Raw("core.PodTemplateSpec{...}"), "field is immutable"))
        return causes

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        status = new.get("status") or {}
        causes: list[Cause] = []
        for key in ("active", "ready", "succeeded", "failed", "terminating"):
            causes.extend(validate_nonnegative(status.get(key), f"status.{key}"))
        return causes

    def selectable_fields(self, obj: Object) -> dict[str, str]:
        fields = super().selectable_fields(obj)
        fields["status.successful"] = str((obj.get("status") or {}).get("succeeded") or 0)
        return fields

    def columns(self) -> list[TableColumn]:
        return [
            NAME_COLUMN,
            TableColumn("Status", description="Status of the job."),
            TableColumn("Completions", description="The number of pods which reached phase Succeeded. The value "
                                                   "increases monotonically for a given spec. However, it may "
                                                   "decrease in reaction to scale down of elastic indexed jobs."),
            TableColumn("Duration", description="Time required to complete the job."),
            AGE_COLUMN,
            *template_columns(SELECTOR_DESCRIPTION),
        ]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        names, images = container_cells(((spec.get("template") or {}).get("spec") or {}).get("containers"))
        return [metadata.get("name", ""), job_status(obj), completions_cell(spec, status),
                duration_cell(status), since(metadata.get("creationTimestamp")), names, images,
                selectors.format_label_selector(spec.get("selector"))]


def generate_selector(job: Object) -> None:
    """``generateSelector``: the Job's uid and name as template labels, the uid label as its selector."""
    metadata, spec = job["metadata"], job["spec"]
    labels = spec["template"]["metadata"].get("labels") or {}
    for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(key, metadata.get("name", ""))
    for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(key, metadata.get("uid", ""))
    spec["template"]["metadata"]["labels"] = labels
    selector = spec.get("selector") or {}
    match_labels = selector.get("matchLabels") or {}
    match_labels.setdefault(CONTROLLER_UID_LABEL, metadata.get("uid", ""))
    spec["selector"] = {**selector, "matchLabels": match_labels}


def default_labels(job: Object) -> None:
    """A Job without labels of its own takes its template's (``SetDefaults_Job``, applied to every read in kube, so
    the generated labels show on the Job too)."""
    labels = ((job["spec"].get("template") or {}).get("metadata") or {}).get("labels")
    metadata = job.setdefault("metadata", {})
    if labels and not metadata.get("labels"):
        metadata["labels"] = dict(labels)


def validate_generated_selector(job: Object) -> list[Cause]:
    """``ValidateGeneratedSelector``: without manualSelector, the selector and labels must be the generated ones."""
    spec = job.get("spec") or {}
    if spec.get("manualSelector"):
        return []
    uid = (job.get("metadata") or {}).get("uid", "")
    selector = spec.get("selector") or {}
    causes: list[Cause] = []
    if (selector.get("matchLabels") or {}).get(CONTROLLER_UID_LABEL) != uid:
        causes.append(invalid("spec.selector", Raw(selectors.go_label_selector(selector)),
                              "`selector` not auto-generated"))
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if labels.get(CONTROLLER_UID_LABEL) != uid:
        causes.append(invalid(f"spec.template.metadata.labels[{CONTROLLER_UID_LABEL}]",
                              labels.get(CONTROLLER_UID_LABEL, ""), f"must be '{uid}'"))
    return causes


def validate_job_spec(spec: Mapping[str, Any], path: str = "spec", *, in_template: bool = False) -> list[Cause]:
    """``ValidateJobSpec``: counts, completion mode, selector, and a template whose pods end; a CronJob's
    ``jobTemplate`` (``in_template``) needs no selector, since each Job gets its own generated one."""
    causes: list[Cause] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
                "backoffLimitPerIndex", "maxFailedIndexes"):
        causes.extend(validate_nonnegative(spec.get(key), f"{path}.{key}"))
    if spec.get("activeDeadlineSeconds") == 0:
        causes.append(invalid(f"{path}.activeDeadlineSeconds", 0, "must be greater than 0"))
    mode = spec.get("completionMode")
    if mode is not None and mode not in COMPLETION_MODES:
        causes.append(not_supported(f"{path}.completionMode", mode, COMPLETION_MODES))
    if mode == "Indexed" and spec.get("completions") is None:
        causes.append(required(f"{path}.completions", "when completion mode is Indexed"))
    policy = spec.get("podReplacementPolicy")
    if policy is not None and policy not in POD_REPLACEMENT_POLICIES:
        causes.append(not_supported(f"{path}.podReplacementPolicy", policy, POD_REPLACEMENT_POLICIES))
    selector = spec.get("selector")
    if selector is None and not in_template:
        causes.append(required(f"{path}.selector"))
    elif selector is not None:
        causes.extend(validate_label_selector(selector, f"{path}.selector"))
    if in_template and spec.get("manualSelector"):
        causes.append(not_supported(f"{path}.manualSelector", True, ("nil", "false")))
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels")
    if selector is not None and selectors.is_valid(selector) and not selectors.is_empty(selector) and \
            not selectors.matches(selector, labels):
        causes.append(invalid(f"{path}.template.metadata.labels", Raw(go_string_map(labels)),
                              "`selector` does not match template `labels`"))
    causes.extend(validate_pod_template(template, f"{path}.template"))
    restart = (template.get("spec") or {}).get("restartPolicy") or ""
    if restart not in JOB_RESTART_POLICIES:
        causes.append(not_supported(f"{path}.template.spec.restartPolicy", restart, JOB_RESTART_POLICIES))
    return causes


def has_condition(status: Mapping[str, Any], condition_type: str) -> bool:
    return any(c.get("type") == condition_type and c.get("status") == "True" for c in status.get("conditions") or [])


def job_status(job: Mapping[str, Any]) -> str:
    """The STATUS cell (``printJob``): the first of these conditions that holds, else Running."""
    status = job.get("status") or {}
    if has_condition(status, "Complete"):
        return "Complete"
    if has_condition(status, "Failed"):
        return "Failed"
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    for condition in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if has_condition(status, condition):
            return condition
    return "Running"


def completions_cell(spec: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    """``1/3``, or ``0/1 of 4`` for a work-queue Job (completions unset, parallelism > 1)."""
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = int(spec.get("parallelism") or 0)
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def duration_cell(status: Mapping[str, Any], now: datetime | None = None) -> str:
    """Start to completion, or start to now while running; empty before the Job started."""
    start = status.get("startTime")
    if not start:
        return ""
    end = status.get("completionTime")
    started = parse_time(start).astimezone(UTC)
    until = parse_time(end).astimezone(UTC) if end else (now or datetime.now(UTC))
    return human_duration(started.strftime("%Y-%m-%dT%H:%M:%SZ"), until)
