"""``pods/{name}/log`` query parameters, read and checked as kube-apiserver reads ``PodLogOptions``.

Conversion first (a number or time that does not parse: 400 with Go's text; booleans as every query boolean),
then ``ValidatePodLogOptions``: 422 ``PodLogOptions "<pod>" is invalid`` with kube's causes — before the pod is
even looked up, as in kube's ``LogREST.Get``. What reaches the kubelet is the normalised query.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from apimachinery import errors
from apimachinery.errors import Cause
from apimachinery.validation import IS_NEGATIVE_ERROR_MSG, forbidden, invalid

from .request import bool_param, int_param

BOOLEANS = ("follow", "timestamps", "previous")
INTEGERS = ("tailLines", "sinceSeconds", "limitBytes")
RFC3339 = "2006-01-02T15:04:05Z07:00"


def parse_rfc3339(value: str) -> str:
    """``metav1.Time``'s query form (``time.Parse(time.RFC3339, …)``); 400 with Go's error when it does not parse."""
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        if "T" not in value or len(value) < 20:
            raise ValueError
    except ValueError:
        raise errors.BadRequest(f'parsing time "{value}" as "{RFC3339}": cannot parse "{value}" as "2006"') from None
    return value


def pod_log_options(params: Any, pod: str) -> dict[str, str]:
    """The kubelet query for a log request; raises 400 (conversion) or 422 (validation)."""
    query: dict[str, str] = {}
    numbers = {name: int_param(params, name) for name in INTEGERS}
    for name in BOOLEANS:
        if bool_param(params, name):
            query[name] = "true"
    since_time = params.get("sinceTime") or None
    if since_time is not None:
        query["sinceTime"] = parse_rfc3339(since_time)
    causes = validate_pod_log_options(numbers, since_time is not None)
    if causes:
        raise errors.invalid("PodLogOptions", pod, causes)
    query.update({name: str(value) for name, value in numbers.items() if value is not None})
    return query


def validate_pod_log_options(numbers: dict[str, int | None], since_time: bool) -> list[Cause]:
    """``ValidatePodLogOptions``."""
    causes: list[Cause] = []
    tail, limit, since = numbers["tailLines"], numbers["limitBytes"], numbers["sinceSeconds"]
    if tail is not None and tail < 0:
        causes.append(invalid("tailLines", tail, IS_NEGATIVE_ERROR_MSG))
    if limit is not None and limit < 1:
        causes.append(invalid("limitBytes", limit, "must be greater than 0"))
    if since is not None and since_time:
        causes.append(forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif since is not None and since < 1:
        causes.append(invalid("sinceSeconds", since, "must be greater than 0"))
    return causes
