"""The apiserver's request metrics (kube's ``endpoints/metrics``).

``RequestMetrics`` is an ASGI middleware of its own, outermost, so it sees every request as the client does (a
401 or 403 too). Per request it records, with kube 1.32's names, labels and buckets:

* ``apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,component,code}`` and
  ``apiserver_request_duration_seconds`` — verbs as kube reports them: ``GET`` vs ``LIST`` by scope, ``WATCH``,
  ``APPLY`` for a server-side apply PATCH, ``POST``/``PUT``/``PATCH``/``DELETE``; scope ``resource`` (a name, or
  a create), ``namespace``, ``cluster``, or empty for non-resource paths (whose path is the subresource, as
  ``/healthz`` in kube); ``CONNECT`` for exec, attach, port-forward and proxy (over SPDY or a websocket). A
  long-running request (a watch, a stream to a pod) is counted when it ends, as kube counts it.
* ``apiserver_request_sli_duration_seconds``: the same without long-running requests (watches), kube's SLI.
* ``apiserver_response_sizes``: the bytes of each GET and LIST response.
* ``apiserver_longrunning_requests{verb="WATCH",…}``: watches open now (kube 1.25 removed
  ``apiserver_registered_watchers`` in its favour).
* ``apiserver_current_inflight_requests{request_kind=readOnly|mutating}``: requests being served now, long-running
  ones excluded (kube reports the last second's high-water mark; this is the current count).
* ``apiserver_watch_events_total`` and ``apiserver_watch_events_sizes{group,version,kind}``: each event a watch
  sends (``watch_event_series``, used by the watch handler).

Cost: a dictionary look-up of the request's labels (a path parse, ``request_attributes`` as authorization makes
it, only for a request not seen lately: ``cached_labels``) and of their series, and the lock-free counter and
histogram updates of ``apimachinery.metrics``: about a microsecond or two in all.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from apimachinery.metrics import Counter, Gauge, Histogram, exponential_buckets

from .authz.filter import request_attributes

COMPONENT = "apiserver"
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
CONNECT_SUBRESOURCES = frozenset({"exec", "attach", "portforward", "proxy"})  # kube reports these as CONNECT
LONG_RUNNING_SUBRESOURCES = CONNECT_SUBRESOURCES | {"log"}
_LABELS = ["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"]
_LONG_RUNNING_LABELS = ["verb", "group", "version", "resource", "subresource", "scope", "component"]

REQUESTS = Counter(
    "apiserver_request_total", "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, "
    "group, version, resource, scope, component, and HTTP response code.", [*_LABELS, "code"])
DURATION = Histogram(
    "apiserver_request_duration_seconds", "[STABLE] Response latency distribution in seconds for each verb, dry run "
    "value, group, version, resource, subresource, scope and component.", _LABELS,
    buckets=[0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60])
SLI_DURATION = Histogram(
    "apiserver_request_sli_duration_seconds", "Response latency distribution (not counting webhook duration and "
    "priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope "
    "and component.", _LONG_RUNNING_LABELS,
    buckets=[0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60])
LONG_RUNNING = Gauge(
    "apiserver_longrunning_requests", "[STABLE] Gauge of all active long-running apiserver requests broken out by "
    "verb, group, version, resource, scope and component. Not all requests are tracked this way.",
    _LONG_RUNNING_LABELS)
RESPONSE_SIZES = Histogram(
    "apiserver_response_sizes", "[STABLE] Response size distribution in bytes for each group, version, verb, "
    "resource, subresource, scope and component.", _LONG_RUNNING_LABELS, buckets=exponential_buckets(1000, 10.0, 7))
INFLIGHT = Gauge("apiserver_current_inflight_requests", "[STABLE] Maximal number of currently used inflight "
                 "request limit of this apiserver per request kind in last second.", ["request_kind"])
_READ_ONLY, _MUTATING = INFLIGHT.labels("readOnly"), INFLIGHT.labels("mutating")
WATCH_EVENTS = Counter("apiserver_watch_events_total",
                       "Number of events sent in watch clients", ["group", "version", "kind"])
WATCH_EVENT_SIZES = Histogram("apiserver_watch_events_sizes", "Watch event size distribution in bytes",
                              ["group", "version", "kind"], buckets=exponential_buckets(1024, 2.0, 8))

Labels = tuple[str, str, str, str, str, str, str, str]
_series: dict[Labels, tuple[Any, Any | None]] = {}
_counters: dict[tuple[Labels, int], Any] = {}
_size_series: dict[Labels, Any] = {}
LABELS_SEEN_MAX = 4096
_labels_seen: dict[tuple[str, str, bytes, str], tuple[Labels, bool]] = {}


def watch_event_series(group: str, version: str, kind: str) -> tuple[Any, Any]:
    """The ``apiserver_watch_events_total`` and ``apiserver_watch_events_sizes`` series of one watched kind."""
    return WATCH_EVENTS.labels(group, version, kind), WATCH_EVENT_SIZES.labels(group, version, kind)


def _true(query: Mapping[str, list[str]], name: str) -> bool:
    return (query.get(name) or [""])[0].lower() not in ("", "0", "false")


def request_labels(scope: Scope) -> tuple[Labels, bool]:
    """kube's labels of one request, and whether it is long-running (a watch, a stream to a pod: kube's
    ``longRunningRequestCheck``)."""
    attrs = request_attributes(scope)
    method: str = scope.get("method", "GET")
    raw_query = scope.get("query_string", b"")
    query = parse_qs(raw_query.decode("latin-1")) if raw_query else {}
    dry_run = ",".join(sorted(set(query.get("dryRun", []))))
    if "path" in attrs:  # non-resource: the path stands in the subresource label, as kube's
        return (method, dry_run, "", "", "", attrs["path"], "", COMPONENT), False
    verb, subresource = attrs["verb"], attrs["subresource"]
    watch = verb == "watch" or (verb == "get" and _true(query, "watch"))
    where = "resource" if attrs["name"] or verb == "create" else "namespace" if attrs["namespace"] else "cluster"
    if subresource in CONNECT_SUBRESOURCES:
        reported = "CONNECT"
    elif watch:
        reported = "WATCH"
    elif method in ("GET", "HEAD"):
        reported = "GET" if where == "resource" else "LIST"
    elif method == "PATCH" and _content_type(scope) == APPLY_CONTENT_TYPE:
        reported = "APPLY"
    else:
        reported = method
    return (reported, dry_run, attrs["group"], attrs["version"], attrs["resource"], subresource, where,
            COMPONENT), watch or subresource in LONG_RUNNING_SUBRESOURCES


def cached_labels(scope: Scope) -> tuple[Labels, bool]:
    """``request_labels``, remembered for the same method, path, query and (for PATCH) content type: clients
    repeat requests (creates into one collection, an object's status writes, informers' lists), and parsing the
    path costs more than the metrics themselves. The memory is bounded: full, it starts again."""
    method = scope.get("method", "GET")
    key = (method, scope["path"], scope.get("query_string", b""), _content_type(scope) if method == "PATCH" else "")
    known = _labels_seen.get(key)
    if known is None:
        if len(_labels_seen) >= LABELS_SEEN_MAX:
            _labels_seen.clear()
        known = _labels_seen[key] = request_labels(scope)
    return known


def _content_type(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return str(value.decode("latin-1").split(";", 1)[0].strip())
    return ""


class RequestMetrics:
    """Pure ASGI: times each HTTP request and counts it by its labels and response code (module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        labels, long_running = cached_labels(scope)
        # The code (a handler that fails before it answers: what the client sees; a websocket refused before it
        # is accepted: 403) and the response's size.
        status = [500 if scope["type"] == "http" else 403, 0]
        sized = labels[0] in ("GET", "LIST")  # kube measures the response sizes of reads only

        async def send_recording(message: Message) -> None:
            kind = message["type"]
            if kind in ("http.response.start", "websocket.http.response.start"):
                status[0] = message["status"]
            elif kind == "websocket.accept":
                status[0] = 101
            elif sized:
                status[1] += len(message.get("body", b""))
            await send(message)

        if long_running:
            gauge = LONG_RUNNING.labels(labels[0], *labels[2:])
            gauge.inc()
        else:
            inflight = _READ_ONLY if scope.get("method") in ("GET", "HEAD") else _MUTATING
            inflight.inc()
        try:
            await self.app(scope, receive, send_recording)
        finally:
            if long_running:
                gauge.dec()
            else:
                inflight.dec()
            if status[0] != 404 or labels[6]:  # an unknown path is not a series (kube leaves 404s of paths out)
                _observe(labels, long_running, status[0], time.monotonic() - started)
                if sized:
                    _sizes(labels).observe(status[1])


def _observe(labels: Labels, long_running: bool, code: int, seconds: float) -> None:
    series = _series.get(labels)
    if series is None:
        sli = None if long_running else SLI_DURATION.labels(labels[0], *labels[2:])
        series = _series[labels] = (DURATION.labels(*labels), sli)
    series[0].observe(seconds)
    if series[1] is not None:
        series[1].observe(seconds)
    counter = _counters.get((labels, code))
    if counter is None:
        counter = _counters[(labels, code)] = REQUESTS.labels(*labels, str(code))
    counter.inc()


def _sizes(labels: Labels) -> Any:
    series = _size_series.get(labels)
    if series is None:
        series = _size_series[labels] = RESPONSE_SIZES.labels(labels[0], *labels[2:])
    return series
