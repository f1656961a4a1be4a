"""Events (core/v1): the legacy validation core/v1 clients get, field selectors, and ``kubectl get events``.

core/v1 events come in two shapes: old ones (``firstTimestamp``/``lastTimestamp``/``count``, written by
``EventRecorder``) and new ones (``eventTime`` + ``reportingComponent``/``reportingInstance``/``action``). An
old event must live in its involved object's namespace; a new one must name its reporter and action.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    invalid,
    is_dns1123_subdomain,
    required,
    validate_qualified_name,
)
from apiserver.registry.strategy import NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

REPORTING_INSTANCE_LENGTH_LIMIT = 128
ACTION_LENGTH_LIMIT = 128
REASON_LENGTH_LIMIT = 128
NOTE_LENGTH_LIMIT = 1024


class EventStrategy(Strategy):
    kind = "Event"
    resource = "events"
    singular = "event"
    short_names = ("ev",)
    bumps_generation = False

    def validate(self, obj: Object) -> list[Cause]:
        return validate_event(obj)

    def selectable_fields(self, obj: Object) -> dict[str, str]:
        fields = super().selectable_fields(obj)
        involved = obj.get("involvedObject") or {}
        for key in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
            fields[f"involvedObject.{key}"] = str(involved.get(key) or "")
        fields["reason"] = obj.get("reason") or ""
        fields["reportingComponent"] = obj.get("reportingComponent") or ""
        fields["source"] = (obj.get("source") or {}).get("component") or obj.get("reportingComponent") or ""
        fields["type"] = obj.get("type") or ""
        return fields

    def columns(self) -> list[TableColumn]:
        return [
            TableColumn("Last Seen", description="The time at which the most recent occurrence of this event was "
                                                 "recorded."),
            TableColumn("Type", description="Type of this event (Normal, Warning), new types could be added in "
                                            "the future"),
            TableColumn("Reason", description="This should be a short, machine understandable string that gives "
                                              "the reason for the transition into the object's current status."),
            TableColumn("Object", description="The object that this event is about."),
            TableColumn("Subobject", priority=1, description="If referring to a piece of an object instead of an "
                                                             "entire object, this string should contain a valid "
                                                             "JSON/Go field access statement."),
            TableColumn("Source", priority=1, description="The component reporting this event. Should be a short "
                                                          "machine understandable string."),
            TableColumn("Message", description="A human-readable description of the status of this operation."),
            TableColumn("First Seen", priority=1, description="The time at which the event was first recorded."),
            TableColumn("Count", priority=1, description="The number of times this event has occurred."),
            TableColumn("Name", priority=1, format="name", description=NAME_COLUMN.description),
        ]

    def row(self, obj: Object) -> list[Any]:
        return event_row(obj)


def event_row(event: Mapping[str, Any]) -> list[Any]:
    """``printEvent`` with ``Wide``: times fall back from lastTimestamp to firstTimestamp to eventTime."""
    first_seen = since(event.get("firstTimestamp")) if event.get("firstTimestamp") else since(event.get("eventTime"))
    last_seen = since(event.get("lastTimestamp")) if event.get("lastTimestamp") else first_seen
    count = event.get("count") or 0
    series = event.get("series")
    if series is not None:
        last_seen = since(series.get("lastObservedTime"))
        count = series.get("count") or 0
    elif count == 0:
        count = 1  # singleton events of the new API carry no count
    involved = event.get("involvedObject") or {}
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    host = source.get("host") or event.get("reportingInstance") or ""
    return [last_seen, event.get("type") or "", event.get("reason") or "", target, involved.get("fieldPath") or "",
            f"{component}, {host}" if host else component, (event.get("message") or "").strip(), first_seen,
            int(count), (event.get("metadata") or {}).get("name", "")]


def validate_event(event: Mapping[str, Any]) -> list[Cause]:
    """``legacyValidateEvent`` as applied to core/v1 requests."""
    causes: list[Cause] = []
    namespace = (event.get("metadata") or {}).get("namespace") or ""
    involved_namespace = (event.get("involvedObject") or {}).get("namespace") or ""
    mismatch = invalid("involvedObject.namespace", involved_namespace, "does not match event.namespace")
    if not event.get("eventTime"):
        if not involved_namespace:
            if namespace not in ("", "default"):
                causes.append(mismatch)
        elif namespace != involved_namespace:
            causes.append(mismatch)
    else:
        if not involved_namespace and namespace not in ("default", "kube-system"):
            causes.append(mismatch)
        controller = event.get("reportingComponent") or ""
        if not controller:
            causes.append(required("reportingComponent"))
        causes.extend(validate_qualified_name(controller, "reportingComponent"))
        for key, limit in (("reportingInstance", REPORTING_INSTANCE_LENGTH_LIMIT), ("action", ACTION_LENGTH_LIMIT),
                           ("reason", REASON_LENGTH_LIMIT)):
            value = event.get(key) or ""
            if not value:
                causes.append(required(key))
            if len(value) > limit:
                causes.append(invalid(key, "", f"can have at most {limit} characters"))
        if len(event.get("message") or "") > NOTE_LENGTH_LIMIT:
            causes.append(invalid("message", "", f"can have at most {NOTE_LENGTH_LIMIT} characters"))
    causes.extend(invalid("namespace", namespace, msg) for msg in is_dns1123_subdomain(namespace))
    return causes
