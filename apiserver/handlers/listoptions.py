"""List and watch query parameters, read and checked as kube-apiserver reads ``metav1.ListOptions``.

Two steps, two kinds of answer, as in kube's ``ListResource``:

* conversion (``ParameterCodec.DecodeParameters``): a number that does not parse is 400 with Go's ``strconv``
  text (``strconv.ParseInt: parsing "abc": invalid syntax``); booleans are false only for ``0``/``false``, any
  other value (even an empty one) is true;
* validation (``ValidateListOptions``): combinations of ``resourceVersionMatch``, ``resourceVersion``,
  ``continue`` and ``sendInitialEvents`` that make no sense are 422 ``ListOptions.meta.k8s.io "" is invalid``
  with one cause each. The WatchList feature (``sendInitialEvents`` on a watch) is served.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apimachinery import errors
from apimachinery.errors import Cause
from apimachinery.validation import forbidden, not_supported

from .request import bool_param, int_param


def optional_bool_param(params: Any, name: str) -> bool | None:
    """A Go ``*bool`` query parameter: None when absent."""
    return bool_param(params, name) if params.get(name) is not None else None


@dataclass(frozen=True, slots=True)
class ListOptions:
    watch: bool
    allow_watch_bookmarks: bool
    resource_version: str
    resource_version_match: str
    timeout_seconds: int | None
    limit: int
    continue_token: str
    send_initial_events: bool | None


def list_options(params: Any, watch_path: bool = False) -> ListOptions:
    """The request's ListOptions, converted and validated (400 / 422 as described above)."""
    options = ListOptions(
        watch=watch_path or bool_param(params, "watch"),
        allow_watch_bookmarks=bool_param(params, "allowWatchBookmarks"),
        resource_version=params.get("resourceVersion") or "",
        resource_version_match=params.get("resourceVersionMatch") or "",
        timeout_seconds=int_param(params, "timeoutSeconds"),
        limit=int_param(params, "limit") or 0,
        continue_token=params.get("continue") or "",
        send_initial_events=optional_bool_param(params, "sendInitialEvents"),
    )
    causes = validate_watch_options(options) if options.watch else validate_list_options(options)
    if causes:
        raise errors.invalid("ListOptions", "", causes, "meta.k8s.io")
    return options


def validate_list_options(options: ListOptions) -> list[Cause]:
    """``ValidateListOptions`` for a list."""
    causes: list[Cause] = []
    match = options.resource_version_match
    if match:
        if not options.resource_version:
            causes.append(forbidden("resourceVersionMatch",
                                    "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if options.continue_token:
            causes.append(forbidden("resourceVersionMatch",
                                    "resourceVersionMatch is forbidden when continue is provided"))
        if match not in ("Exact", "NotOlderThan"):
            causes.append(not_supported("resourceVersionMatch", match, ("Exact", "NotOlderThan", "")))
        if match == "Exact" and options.resource_version == "0":
            causes.append(forbidden("resourceVersionMatch",
                                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if options.send_initial_events is not None:
        causes.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return causes


def validate_watch_options(options: ListOptions) -> list[Cause]:
    """``validateWatchOptions`` (with the WatchList feature enabled)."""
    causes: list[Cause] = []
    match = options.resource_version_match
    if options.send_initial_events is not None and match != "NotOlderThan":
        causes.append(forbidden("resourceVersionMatch",
                                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
    if match:
        if options.send_initial_events is None:
            causes.append(forbidden("resourceVersionMatch",
                                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                                    "provided"))
        if match != "NotOlderThan":
            causes.append(not_supported("resourceVersionMatch", match, ("NotOlderThan",)))
        if options.continue_token:
            causes.append(forbidden("resourceVersionMatch",
                                    "resourceVersionMatch is forbidden when continue is provided"))
    return causes
