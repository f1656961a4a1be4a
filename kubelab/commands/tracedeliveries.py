"""The trace's times from the apiserver's record of deliveries (``GET /debug/watches/deliveries``,
apiserver/storage/deliveries.py): when etcd's transaction stored each version of the flow, when etcd's watch handed
it to the watch cache and when the cache wrote it down each component's watch stream, all to the µs.

A record is matched to a step by the object's name and the revision the step stored or acted on (never by time),
and a stream to a component by its user agent's product (``kube-scheduler/v1.32.0 ...``) or its kubeadm user.
``time_deliveries`` runs before the audit log is read (the kubelet's acceptance, step 11, is its delivery rather
than its first status write), ``time_stored`` after it (etcd's transaction returns before the response the audit
log's ResponseComplete times).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from apimachinery.meta import parse_time
from kubelab.commands.tracesteps import Evidence, Object, Stamp, Step

__all__ = ["WATCHERS", "time_deliveries", "time_stored"]


def _meta(obj: Object) -> Object:
    return obj.get("metadata") or {}


# Who a delivery step's watcher is: its user agent's product (kube's "kube-scheduler/v1.32.0 (linux/amd64) ..."),
# or its user (kubeadm's identities).
WATCHERS = {"controller-manager": ("kube-controller-manager", "system:kube-controller-manager"),
            "scheduler": ("kube-scheduler", "system:kube-scheduler"), "kubelet": ("kubelet", "system:node:")}


def _is(watcher: Object, component: str, node: str | None = None) -> bool:
    agent, user = WATCHERS[component]
    if component == "kubelet" and node:
        user = f"system:node:{node}"
    return str(watcher.get("userAgent", "")).split("/", 1)[0] == agent or str(watcher.get("user", "")).startswith(user)


def _streamed_to(watcher: Object, *, component: str, node: str | None) -> bool:
    return not watcher.get("watchCache") and _is(watcher, component, node)


def time_deliveries(ev: Evidence, steps: list[Step]) -> None:
    """Time the watch deliveries — 4 (etcd to the watch cache), 5, 8, 11 (the cache to the controller-manager,
    the scheduler, the kubelet) — by the apiserver's record of them, matched by name and revision; and step 1 by
    the opening of the streams that delivered 5, 8 and 11."""
    by = {s.number: s for s in steps}
    root = ev.controllers[-1] if ev.controllers else ev.pod
    pod_name, root_name = _meta(ev.pod).get("name"), _meta(root).get("name")
    node = (ev.pod.get("spec") or {}).get("nodeName")
    items = ev.deliveries or []

    def first(name: str | None, rv: int | None, test: Callable[[Object], bool]) -> Object | None:
        found = [d for d in items if d.get("name") == name and rv is not None and d.get("resourceVersion") == str(rv)
                 and test(d.get("watcher") or {})]
        return min(found, key=lambda d: str(d.get("time")), default=None)

    def time(number: str, delivery: Object | None) -> None:
        step = by.get(number)
        if step is None or delivery is None or not step.applicable:
            return
        watcher = delivery.get("watcher") or {}
        at = parse_time(delivery["time"])
        who = "the watch cache (etcd's watch)" if watcher.get("watchCache") else \
            f"{watcher.get('user')} ({str(watcher.get('userAgent', '')).split(' ', 1)[0]})"
        step.stamp = Stamp(at, True, "watch delivery")
        step.observed, step.included_in = True, None
        step.evidence = step.evidence.replace("status.startTime; ", "")  # (11: the delivery times it, not that)
        if step.revision is None:
            step.revision = int(delivery["resourceVersion"])
        note = (f"delivered: {delivery.get('type')} {delivery.get('resource')} rev {delivery['resourceVersion']} "
                f"to {who} at {at.strftime('%H:%M:%S.%f')}")
        step.evidence = f"{step.evidence}; {note}" if step.evidence else note

    root_rv = by["3"].revision
    pod_rv = by["7"].revision if ev.controllers else root_rv
    time("4", first(root_name, root_rv, lambda w: bool(w.get("watchCache"))))
    seen: list[Object] = []
    for number, name, rv, component in (("5", root_name, root_rv, "controller-manager"),
                                        ("8", pod_name, pod_rv, "scheduler"),
                                        ("11", pod_name, by["10"].revision, "kubelet")):
        delivery = first(name, rv, partial(_streamed_to, component=component, node=node))
        if delivery is not None and by[number].applicable:
            time(number, delivery)
            seen.append(delivery)
    if seen:
        _watches_opened(by["1"], seen)


def _watches_opened(step: Step, deliveries: list[Object]) -> None:
    """1: the watch streams that delivered this pod's flow, when each opened; the last one times the step, its
    latency is how long the apiserver took from the request to the open stream."""
    last = max((d["watcher"] for d in deliveries), key=lambda w: str(w.get("started")))
    started, requested = parse_time(last["started"]), parse_time(last["requestReceived"])
    step.stamp = Stamp(started, True, "watch stream started")
    step.latency, step.latency_precise = (started - requested).total_seconds(), True
    opened = "; ".join(f"{str(d['watcher'].get('userAgent', '')).split(' ', 1)[0] or d['watcher'].get('user')} "
                       f"watching {d.get('resource')} since "
                       f"{parse_time(d['watcher']['started']).strftime('%H:%M:%S.%f')}" for d in deliveries)
    step.evidence = f"{step.evidence}; streams: {opened}"


def time_stored(ev: Evidence, steps: list[Step]) -> None:
    """3, 7, 10, 13: "stored in etcd" is the moment etcd's transaction returned the step's revision to the
    apiserver (its ``STORED`` record), earlier than the response the audit log's ResponseComplete times.

    Either time is taken when the writer's coroutine resumes, which the event loop may schedule after etcd's watch
    has already delivered the revision: the store happened no later than the revision's first delivery, so that
    bounds the step (``_bound_by_first_delivery``) and no later step shows a negative latency."""
    root = ev.controllers[-1] if ev.controllers else ev.pod
    names = {"3": _meta(root).get("name"), "7": _meta(ev.pod).get("name"), "10": _meta(ev.pod).get("name"),
             "13": _meta(ev.pod).get("name")}
    for step in steps:
        if step.number not in names or step.revision is None or not step.applicable:
            continue
        of_it = [d for d in ev.deliveries or [] if d.get("name") == names[step.number]
                 and d.get("resourceVersion") == str(step.revision)]
        stored = [d for d in of_it if d.get("type") == "STORED"]
        if stored:
            at = parse_time(stored[0]["time"])
            step.stamp, step.observed, step.included_in = Stamp(at, True, "etcd txn"), True, None
            note = f"stored: etcd's transaction returned rev {step.revision} at {at.strftime('%H:%M:%S.%f')}"
            step.evidence = f"{step.evidence}; {note}" if step.evidence else note
        _bound_by_first_delivery(step, [d for d in of_it if d.get("type") != "STORED"])


def _bound_by_first_delivery(step: Step, deliveries: list[Object]) -> None:
    """A revision is delivered only once stored: a store timed after the revision's first delivery (its writer
    resumed late) is bounded by that delivery, and the step says so."""
    if step.stamp is None or not deliveries:
        return
    first = min(deliveries, key=lambda d: parse_time(d["time"]))
    at = parse_time(first["time"])
    if at >= step.stamp.at:
        return
    late = (step.stamp.at - at).total_seconds() * 1000
    note = (f"store time bounded by the first delivery: rev {step.revision} was delivered at "
            f"{at.strftime('%H:%M:%S.%f')}, {late:.1f}ms before the writer resumed ({step.stamp.source})")
    step.stamp = Stamp(at, True, "first delivery (bound)")
    step.evidence = f"{step.evidence}; {note}" if step.evidence else note
