"""events.k8s.io/v1 Events: the same stored objects as core/v1 Events, converted both ways as kube does.

Stored as core/v1 (the core strategy is listed first, so its version is the storage one); this strategy serves the
events.k8s.io shape (``pkg/apis/events/v1`` conversion): ``note`` ↔ ``message``, ``regarding`` ↔
``involvedObject``, ``reportingController`` ↔ ``reportingComponent``, ``deprecatedSource`` ↔ ``source``,
``deprecatedFirstTimestamp`` / ``deprecatedLastTimestamp`` / ``deprecatedCount`` ↔ ``firstTimestamp`` /
``lastTimestamp`` / ``count``; ``eventTime``, ``series``, ``action``, ``reason``, ``related``, ``type`` and
``reportingInstance`` keep their names.

Validation is kube's ``ValidateEventCreate``/``ValidateEventUpdate`` for events.k8s.io/v1: the legacy core rules
plus the strict ones (an ``eventTime``, type Normal or Warning, none of the deprecated fields set, a series of at
least 2), and on update the event's identity fields stay as they are. Field paths are the core names, as kube's
internal type gives them.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import FIELD_IMMUTABLE_ERROR_MSG, invalid, required
from apiserver.registry.events import EventStrategy, event_row, validate_event
from apiserver.registry.strategy import Object

# events.k8s.io/v1 name → core/v1 name, for the fields that are renamed.
RENAMED = {
    "note": "message",
    "regarding": "involvedObject",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
TO_EVENTS = {core: events for events, core in RENAMED.items()}
IMMUTABLE = ("involvedObject", "reason", "type", "eventTime", "action", "related", "reportingComponent",
             "reportingInstance", "source", "firstTimestamp", "lastTimestamp", "count")
EVENT_TYPES = ("Normal", "Warning")


def to_core(obj: Object) -> Object:
    out = {RENAMED.get(key, key): value for key, value in obj.items()}
    out["apiVersion"], out["kind"] = "v1", "Event"
    return out


def to_events(obj: Object) -> Object:
    out = {TO_EVENTS.get(key, key): value for key, value in obj.items()}
    out["apiVersion"], out["kind"] = "events.k8s.io/v1", "Event"
    if not (out.get("deprecatedSource") or {}):  # an empty EventSource is left out (omitempty)
        out.pop("deprecatedSource", None)
    if not out.get("deprecatedCount"):
        out.pop("deprecatedCount", None)
    return out


def validate_strict(event: Object) -> list[Cause]:
    """The events.k8s.io/v1 rules on top of the legacy ones (``event`` in core/v1 form)."""
    causes: list[Cause] = []
    series = event.get("series")
    if series is not None:
        if (series.get("count") or 0) < 2:
            causes.append(invalid("series.count", "", "should be at least 2"))
        if not series.get("lastObservedTime"):
            causes.append(required("series.lastObservedTime"))
    if not event.get("eventTime"):
        causes.append(required("eventTime"))
    if event.get("type") not in EVENT_TYPES:
        causes.append(invalid("type", "", f"has invalid value: {event.get('type') or ''}"))
    for field in ("firstTimestamp", "lastTimestamp", "count"):
        if event.get(field):
            causes.append(invalid(field, "", "needs to be unset"))
    source = event.get("source") or {}
    if source.get("component") or source.get("host"):
        causes.append(invalid("source", "", "needs to be unset"))
    return causes


class EventV1Strategy(EventStrategy):
    """Served as events.k8s.io/v1, stored (and watched by core clients) as core/v1."""

    group = "events.k8s.io"

    def validate(self, obj: Object) -> list[Cause]:
        core = to_core(obj)
        return validate_event(core) + validate_strict(core)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        core_new, core_old = to_core(new), to_core(old)
        causes = validate_event(core_new)
        for field in IMMUTABLE:
            if core_new.get(field) != core_old.get(field):
                causes.append(invalid(field, core_new.get(field), FIELD_IMMUTABLE_ERROR_MSG))
        return causes

    def to_storage(self, obj: Object) -> Object:
        return to_core(obj)

    def from_storage(self, obj: Object) -> Object:
        return to_events(obj)

    def selectable_fields(self, obj: Object) -> dict[str, str]:
        return super().selectable_fields(to_core(obj))

    def row(self, obj: Object) -> list[Any]:
        return event_row(to_core(obj))
