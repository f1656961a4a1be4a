"""CronJobs (batch/v1): a Job template and a cron schedule; the cronjob controller makes the Jobs.

Defaults are ``SetDefaults_CronJob`` (concurrencyPolicy Allow, suspend false, history limits 3 and 1) plus the pod
template's; the Job template gets no Job defaults, since each Job is defaulted when the controller creates it.
Validation is ``ValidateCronJob``: a parsable five-field schedule without ``TZ=``, a time zone the tz database
knows, names short enough (52) for the Jobs' ``<name>-<minutes>`` names, and ``ValidateJobTemplateSpec``.
"""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apimachinery import cron
from apimachinery.errors import Cause
from apimachinery.validation import invalid, not_supported, required, validate_nonnegative
from apiserver.registry import selectors
from apiserver.registry.jobs import SELECTOR_DESCRIPTION, validate_job_spec
from apiserver.registry.podspec import default_pod_template
from apiserver.registry.qos import reject_unparsable, resource_lists
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import container_cells, since, template_columns

CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
MAX_NAME_LENGTH = 52  # 63 minus the 11 characters of "-<minutes since the epoch>" the Jobs get


class CronJobStrategy(Strategy):
    group = "batch"
    kind = "CronJob"
    resource = "cronjobs"
    singular = "cronjob"
    short_names = ("cj",)
    categories = ("all",)
    subresources = ("status",)

    def prepare_for_create(self, obj: Object) -> None:
        self.default(obj)
        obj["status"] = {}

    def default(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        template = spec.setdefault("jobTemplate", {}).setdefault("spec", {}).setdefault("template", {})
        reject_unparsable(resource_lists(template.get("spec") or {}), self.kind, self.version)
        spec.setdefault("concurrencyPolicy", "Allow")
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)
        default_pod_template(template)

    def validate(self, obj: Object) -> list[Cause]:
        spec = obj.get("spec") or {}
        name = (obj.get("metadata") or {}).get("name") or ""
        causes: list[Cause] = []
        if len(name) > MAX_NAME_LENGTH:
            causes.append(invalid("metadata.name", name, f"must be no more than {MAX_NAME_LENGTH} characters"))
        causes.extend(validate_schedule(spec.get("schedule"), spec.get("timeZone")))
        policy = spec.get("concurrencyPolicy")
        if policy not in CONCURRENCY_POLICIES:
            causes.append(not_supported("spec.concurrencyPolicy", policy or "", CONCURRENCY_POLICIES))
        for key in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
            causes.extend(validate_nonnegative(spec.get(key), f"spec.{key}"))
        job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
        causes.extend(validate_job_spec(job_spec, "spec.jobTemplate.spec", in_template=True))
        return causes

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def columns(self) -> list[TableColumn]:
        return [
            NAME_COLUMN,
            TableColumn("Schedule", description="The schedule in Cron format, see "
                                                "https://en.wikipedia.org/wiki/Cron."),
            TableColumn("Timezone", description="The time zone name for the given schedule, see "
                                                "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones."),
            TableColumn("Suspend", type="boolean", description="This flag tells the controller to suspend "
                                                               "subsequent executions, it does not apply to "
                                                               "already started executions.  Defaults to false."),
            TableColumn("Active", type="integer", description="A list of pointers to currently running jobs."),
            TableColumn("Last Schedule", description="Information when was the last time the job was "
                                                     "successfully scheduled."),
            AGE_COLUMN,
            *template_columns(SELECTOR_DESCRIPTION),
        ]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
        names, images = container_cells(((job_spec.get("template") or {}).get("spec") or {}).get("containers"))
        last = status.get("lastScheduleTime")
        return [metadata.get("name", ""), spec.get("schedule", ""), spec.get("timeZone") or "<none>",
                print_bool(spec.get("suspend")), len(status.get("active") or []), since(last) if last else "<none>",
                since(metadata.get("creationTimestamp")), names, images,
                selectors.format_label_selector(job_spec.get("selector"))]


def print_bool(value: bool | None) -> str:
    """``printBoolPtr``: the SUSPEND cell is a word, though its column says boolean."""
    return "<unset>" if value is None else str(bool(value))


def validate_schedule(schedule: str | None, time_zone: str | None) -> list[Cause]:
    """``validateScheduleFormat`` and ``validateTimeZone``."""
    causes: list[Cause] = []
    if not schedule:
        causes.append(required("spec.schedule"))
    else:
        try:
            cron.parse(schedule)
        except cron.CronError as err:
            causes.append(invalid("spec.schedule", schedule, str(err)))
        if "TZ" in schedule:
            causes.append(invalid("spec.schedule", schedule, "cannot use both timeZone field and TZ or CRON_TZ in "
                                  "schedule" if time_zone is not None else
                                  "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    if time_zone is not None:
        if not time_zone:
            causes.append(invalid("spec.timeZone", time_zone, "timeZone must be nil or non-empty string"))
        elif time_zone.lower() == "local":
            causes.append(invalid("spec.timeZone", time_zone, "timeZone must be an explicit time zone as defined in "
                                                              "https://www.iana.org/time-zones"))
        elif load_zone(time_zone) is None:
            causes.append(invalid("spec.timeZone", time_zone, f"unknown time zone {time_zone}"))
    return causes


def load_zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None
