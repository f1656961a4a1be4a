"""`kubelab trace pod NAME`: the seed's 13 steps of the pod creation flow, as they happened for one pod.

Every row comes from something a component wrote down; nothing is inferred from timing:

- object metadata: ``creationTimestamp``, the controller ``ownerReferences`` (followed up to the object a
  client created) and kubectl's ``last-applied-configuration`` annotation;
- the objects' history, replayed from etcd through a watch from an old ``resourceVersion`` (the apiserver
  serves changes older than its watch cache from etcd's own history): the exact revision at which the
  object was stored, the pod bound and its status first reported ``Running``;
- Events: the owner's ``SuccessfulCreate`` (controller-manager), the pod's ``Scheduled`` and
  ``FailedScheduling`` (scheduler) and ``Pulling``/``Pulled``/``Created``/``Started`` (kubelet). An event's
  ``involvedObject.resourceVersion`` is the version of the object the component acted on: the revision at
  which the watch delivered it to that component;
- pod status: ``PodScheduled``/``Initialized``/``ContainersReady``/``Ready`` ``lastTransitionTime``,
  ``startTime`` (when the kubelet accepted the pod), ``containerStatuses[].state.running.startedAt``, ``phase``;
- for step 1, the leader-election leases of the controller-manager and scheduler and the node's ``Ready``.

- the apiserver's audit log (``--audit-log``, default ``.kubelab/logs/audit.log`` of ``kubelab up``; read by
  ``traceaudit``): each write of the flow by its ``RequestReceived`` (the component acting) and
  ``ResponseComplete`` (stored in etcd), matched by ``objectRef`` uid and revision, never by time (``_exact``);
- the apiserver's record of watch deliveries (``GET /debug/watches/deliveries``, apiserver/storage/deliveries.py):
  when etcd's transaction stored each version of the flow (steps 3, 7, 10, 13; the audit log's
  ResponseComplete comes later, once the response is written), when etcd's watch handed it to the watch cache
  (step 4) and when the cache wrote it down the controller-manager's, the scheduler's and the kubelet's watch
  streams (steps 5, 8, 11), matched by the object's name and revision and the watcher's user agent or user
  (``tracedeliveries``); the streams' opening times time step 1.

A step without such a record is printed "not observed"; one that does not apply to this pod (no controller,
``spec.nodeName`` set by the client) says so. ``metav1.Time`` has whole seconds, so a latency next to one is
only good to ±1 s and is marked ``~``; an event's ``eventTime`` (MicroTime), the audit log's stages and the
deliveries (µs) are used whenever they exist. A delivery the apiserver no longer holds (its ring keeps the last
20,000) leaves its step to name the later step whose latency includes it (``included_in``). Latencies run from one
timed step to the next, so they add up to the critical path (the first timed step of the flow to the last); step
2, where the flow starts, has latency 0. A stored step's time is taken when the writer resumes, which can be after
etcd's watch delivered the revision; the store happened no later than that first delivery, which then bounds the
step (time_source "first delivery (bound)", and its evidence says so), so no latency is negative. Step 1 stands
apart: its time is when the last of the three watch streams opened and its latency how long the apiserver took to
open it (the request's arrival to the stream's start).

``-o json`` (stable: ``kubelab ui`` and scripts read it)::

    {"pod": {"namespace", "name", "uid"},
     "controllers": ["ReplicationController/web", ...],        # the pod's controller first
     "audit_log": "/path/audit.log" | null,                    # null: none read, times are the objects' own
     "deliveries": true | false,                               # the apiserver's record of watch deliveries read
     "critical_path": {"from": "2", "to": "13", "total_ms": 207.7, "exact": true, "hops": ["3", "6", ...]} | null,
     "steps": [{"number": "1".."13" | "12a"..,  "actor", "what", "evidence",
                "time": "2026-12-06T03:04:05.123456Z" | null, "precision": "us" | "s" | null,
                "time_source": "audit RequestReceived" | "etcd txn" | "first delivery (bound)"
                               | "watch delivery" | "event Scheduled eventTime" | ... | null,
                "revision": int | null,                        # the etcd revision stored or acted on
                "latency": float | null,                       # seconds since the previous timed step
                "latency_precise": bool,                       # both ends exact (µs)
                "included_in": "6" | null,                     # no record of its own: within that step's latency
                "audit_id": str | null,                        # the audited request that times it
                "observed": bool, "applicable": bool}, ...]}
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from apimachinery.meta import parse_time
from kubeclient.eventcorrelator import is_combined
from kubelab.commands.podtarget import add_pod_arguments, apiserver_client, unreachable
from kubelab.commands.traceaudit import Write, find_writes
from kubelab.commands.tracedeliveries import time_deliveries, time_stored
from kubelab.commands.tracesteps import Evidence, Object, Stamp, Step, Version, critical_path, latency_text
from kubelab.commands.up import DEFAULT_DATA_DIR
from kubelab.table import render_table

__all__ = ["Evidence", "Stamp", "Step", "Version", "add_arguments", "build_steps", "critical_path", "gather",
           "latency_text", "render", "run"]

LEADER_LEASES = (("controller-manager", "kube-controller-manager"), ("scheduler", "kube-scheduler"))
KUBELET_REASONS = ("Pulling", "Pulled", "Created", "Started")
APPLY_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
DEFAULT_AUDIT_LOG = f"{DEFAULT_DATA_DIR}/logs/audit.log"  # where `kubelab up` has the apiserver write it


# ---- reading the records -------------------------------------------------------------------------------


def _meta(obj: Object) -> Object:
    return obj.get("metadata") or {}


def _ref(obj: Object) -> str:
    return f"{obj.get('kind', '?')}/{_meta(obj).get('name', '?')}"


def _stamp(value: str | None, source: str, precise: bool = False) -> Stamp | None:
    return Stamp(parse_time(value), precise, source) if value else None


def event_stamp(event: Object) -> Stamp | None:
    """The most precise time an Event carries: ``eventTime`` (µs), else ``firstTimestamp`` (s)."""
    reason = f"event {event.get('reason')}"
    return (
        _stamp(event.get("eventTime"), f"{reason} eventTime", precise=True)
        or _stamp(event.get("firstTimestamp"), f"{reason} firstTimestamp")
        or _stamp(_meta(event).get("creationTimestamp"), f"{reason} creationTimestamp")
    )


def _first_event(events: Iterable[Object], reason: str, field_path: str | None = None) -> Object | None:
    """The earliest event with this reason (and ``involvedObject.fieldPath``): the creation flow's."""
    found = [
        e for e in events
        if e.get("reason") == reason
        and (field_path is None or (e.get("involvedObject") or {}).get("fieldPath") == field_path)
    ]  # fmt: skip
    return min(found, key=_event_order, default=None)


def _event_order(event: Object) -> tuple[bool, datetime | None]:
    stamp = event_stamp(event)
    return (stamp is None, stamp.at if stamp else None)


def _seen_rv(event: Object | None) -> int | None:
    """The object version a component acted on when it recorded ``event``."""
    rv = ((event or {}).get("involvedObject") or {}).get("resourceVersion")
    return int(rv) if rv and str(rv).isdigit() else None


def _source(event: Object, default: str) -> str:
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or default
    return f"{component} ({source['host']})" if source.get("host") else component


def _condition(pod: Object, kind: str) -> Object | None:
    conditions: list[Object] = (pod.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def _first_version(history: list[Version] | None, test: Callable[[Object], Any]) -> Version | None:
    return next((v for v in history or [] if v.type != "DELETED" and test(v.obj)), None)


def _created(history: list[Version] | None) -> Version | None:
    return next((v for v in history or [] if v.type == "ADDED"), None)


# ---- the 13 steps --------------------------------------------------------------------------------------


def build_steps(ev: Evidence) -> list[Step]:
    """The seed's 13 steps for ``ev.pod``, in the seed's order, with latencies filled in."""
    steps = [_watching(ev), *_submitted(ev), *_controller(ev), *_scheduler(ev), *_kubelet(ev), _running(ev)]
    if ev.deliveries:
        time_deliveries(ev, steps)
    if ev.writes:
        _exact(ev, steps)
    if ev.deliveries:
        time_stored(ev, steps)
    _bound_requests_by_their_store(steps)
    previous: Stamp | None = None
    for step in steps:
        if step.stamp is None or step.number == "1":  # step 1 is the watches' opening, not a hop of the flow
            continue
        if previous is not None:
            step.latency_precise = step.stamp.precise and previous.precise
            if step.latency_precise:
                step.latency = (step.stamp.at - previous.at).total_seconds()
            else:  # a whole-second time T means [T, T+1): compare whole seconds, exact to ±1s
                step.latency = float(int(step.stamp.at.timestamp()) - int(previous.at.timestamp()))
        elif step.number == "2" and step.stamp.precise:
            step.latency, step.latency_precise = 0.0, True  # where the flow starts
        previous = step.stamp
    return steps


REQUEST_AND_STORE = (("6", "7"), ("9", "10"))  # the controller's pod create, the scheduler's binding


def _bound_requests_by_their_store(steps: list[Step]) -> None:
    """6 and 9 timed by the actor's event (``SuccessfulCreate``, ``Scheduled``) where no audit log times the
    request: the actor records the event once its write has returned, so the event can be later than the write's
    store (7, 10). The request was made no later than its store, which then bounds the step, as the first delivery
    bounds a store (``tracedeliveries``): no latency is negative, and the step says so."""
    by = {s.number: s for s in steps}
    for request, store in REQUEST_AND_STORE:
        acted, stored = by.get(request), by.get(store)
        if (acted is None or stored is None or acted.stamp is None or stored.stamp is None or acted.audit_id
                or not (acted.stamp.precise and stored.stamp.precise) or acted.stamp.at <= stored.stamp.at):
            continue
        late = (acted.stamp.at - stored.stamp.at).total_seconds() * 1000
        acted.evidence += (f"; request time bounded by its store (step {store}): the event was recorded "
                           f"{late:.1f}ms after it, once the write had returned")
        acted.stamp = Stamp(stored.stamp.at, True, f"{acted.stamp.source} (bound by the store)")


def _not(number: str, actor: str, what: str, why: str, applicable: bool = True) -> Step:
    return Step(number, actor, what, evidence=why, observed=False, applicable=applicable)


def _watching(ev: Evidence) -> Step:
    """1: the controller-manager, the scheduler and the kubelet watch the apiserver."""
    parts: list[str] = []
    for component, name in LEADER_LEASES:
        lease = ev.leases.get(name)
        spec = (lease or {}).get("spec") or {}
        if spec.get("holderIdentity"):
            parts.append(f"{component}: leader {spec['holderIdentity']} (lease kube-system/{name}, "
                         f"renewed {spec.get('renewTime') or '?'})")
        else:
            parts.append(f"{component}: not observed (no lease kube-system/{name})")
    node_name = (ev.pod.get("spec") or {}).get("nodeName")
    ready = _condition(ev.node, "Ready") if ev.node else None
    if ready is not None:
        parts.append(f"kubelet: node {node_name} Ready={ready.get('status')} since {ready.get('lastTransitionTime')}")
    else:
        parts.append(f"kubelet: not observed ({'no node yet' if not node_name else f'node {node_name} not found'})")
    observed = any("not observed" not in p for p in parts)
    return Step("1", "controller-manager, scheduler, kubelet", "watch the apiserver (list + watch)",
                evidence="; ".join(parts), observed=observed)


def _submitted(ev: Evidence) -> list[Step]:
    """2-4: a client creates the top object; the apiserver stores it; etcd's watch reports it."""
    root = ev.controllers[-1] if ev.controllers else ev.pod
    history = ev.root_history if ev.controllers else ev.pod_history
    applied = APPLY_ANNOTATION in (_meta(root).get("annotations") or {})
    how = "kubectl apply" if applied else "kubectl create or an API call"
    created = _created(history)
    no_history = "revision not observed: etcd's history was not available"
    return [
        Step("2", "client", f"create {_ref(root)}", evidence=f"{how} (the object exists; its request time is "
             "not recorded)"),
        Step("3", "apiserver", f"store {_ref(root)} in etcd", stamp=_stamp(_meta(root).get("creationTimestamp"),
             "metadata.creationTimestamp"), revision=created.rv if created else None,
             evidence="creation revision from etcd's history" if created else no_history),
        Step("4", "etcd", "notify the apiserver's watch (ADDED)", revision=created.rv if created else None,
             evidence="ADDED event replayed from etcd's history" if created else no_history,
             observed=created is not None),
    ]


def _pod_created_events(owner_events: Iterable[Object], name: object) -> list[Object]:
    """The owner's own ``SuccessfulCreate`` events for pod ``name``. Not an aggregate event ("(combined from
    similar events): Created pod: <name>"): it names only the latest pod it stands for, and its times are the
    first and last of all of them, so it times no one pod's create."""
    return [e for e in owner_events if e.get("reason") == "SuccessfulCreate"
            and str(e.get("message", "")).endswith(f": {name}") and not is_combined(str(e.get("message", "")))]


def _no_created_event(owner_events: Iterable[Object]) -> str:
    """Why step 6 has no event: none at all, or (with others there) client-go's event correlation left it out."""
    created = [e for e in owner_events if e.get("reason") == "SuccessfulCreate"]
    if not created:
        return "no SuccessfulCreate event for this pod"
    combined = sum(int(e.get("count") or 1) for e in created if is_combined(str(e.get("message", ""))))
    return ("event not recorded: the controller's event recorder combined or dropped this pod's "
            "SuccessfulCreate, as client-go's EventCorrelator does past 10 similar events (one \"(combined from "
            "similar events)\" event) or 25 writes (then 1 per 5 min) about one object"
            + (f"; {combined} create(s) counted in the combined event" if combined else ""))


def _controller(ev: Evidence) -> list[Step]:
    """5-7: the controller sees its object, creates the pod; the apiserver stores the pod."""
    name = _meta(ev.pod).get("name")
    if not ev.controllers:
        why = "the pod has no controller: the client created it directly (steps 2-4)"
        return [_not(n, actor, w, why, applicable=False)
                for n, actor, w in (("5", "controller-manager", "see the owner"),
                                    ("6", "controller-manager", "create the pod"),
                                    ("7", "apiserver", "store the pod in etcd"))]
    owner = ev.controllers[0]
    made = next(iter(_pod_created_events(ev.owner_events, name)), None)
    created = _created(ev.pod_history)
    steps = []
    if made is None:
        why = _no_created_event(ev.owner_events)
        steps += [_not("5", "controller-manager", f"see {_ref(owner)}", why),
                  _not("6", "controller-manager", f"create pod {name}", why)]
    else:
        actor = _source(made, "controller-manager")
        steps += [
            Step("5", actor, f"see {_ref(owner)} (too few replicas)", revision=_seen_rv(made),
                 evidence="the owner's version in the event's involvedObject.resourceVersion"),
            Step("6", actor, f"create pod {name}", stamp=event_stamp(made),
                 evidence=f"event SuccessfulCreate: {made.get('message')}"),
        ]
    steps.append(Step("7", "apiserver", f"store pod {name} in etcd",
                      stamp=_stamp(_meta(ev.pod).get("creationTimestamp"), "metadata.creationTimestamp"),
                      revision=created.rv if created else None,
                      evidence="creation revision from etcd's history" if created else
                      "revision not observed: etcd's history was not available"))
    return steps


def _scheduler(ev: Evidence) -> list[Step]:
    """8-10: the scheduler sees the unscheduled pod, binds it; the apiserver stores the binding."""
    node = (ev.pod.get("spec") or {}).get("nodeName")
    created = _created(ev.pod_history)
    if created is not None and (created.obj.get("spec") or {}).get("nodeName"):
        why = f"spec.nodeName={node} was set by the client: the scheduler is bypassed"
        return [_not("8", "scheduler", "see the unscheduled pod", why, applicable=False),
                _not("9", "scheduler", "bind the pod", why, applicable=False),
                Step("10", "apiserver", f"spec.nodeName={node} stored with the pod", revision=created.rv,
                     evidence="set in the pod's creation revision")]
    scheduled = _first_event(ev.pod_events, "Scheduled")
    failed = sorted((e for e in ev.pod_events if e.get("reason") == "FailedScheduling"), key=_event_order)
    attempts = sum(int(e.get("count") or 1) for e in failed)
    note = f"; {attempts} FailedScheduling attempt(s), last: {failed[-1].get('message')}" if failed else ""
    seen = scheduled or (failed[0] if failed else None)
    steps = [
        Step("8", _source(seen, "scheduler"), "see the unscheduled pod (spec.nodeName empty)", revision=_seen_rv(seen),
             evidence="the pod's version in the event's involvedObject.resourceVersion" + note)
        if seen else _not("8", "scheduler", "see the unscheduled pod", "no Scheduled or FailedScheduling event"),
        Step("9", _source(scheduled, "scheduler"), f"bind the pod to {node}", stamp=event_stamp(scheduled),
             evidence=f"event Scheduled: {scheduled.get('message')}")
        if scheduled else _not("9", "scheduler", "bind the pod to a node", "no Scheduled event" + note),
    ]
    cond = _condition(ev.pod, "PodScheduled")
    bound = _first_version(ev.pod_history, lambda o: (o.get("spec") or {}).get("nodeName"))
    if node and cond is not None and cond.get("status") == "True":
        steps.append(Step("10", "apiserver", f"store the binding: spec.nodeName={node}, PodScheduled=True",
                          stamp=_stamp(cond.get("lastTransitionTime"), "PodScheduled lastTransitionTime"),
                          revision=bound.rv if bound else None,
                          evidence="first version with spec.nodeName, from etcd's history" if bound else
                          "revision not observed: etcd's history was not available"))
    else:
        why = f"PodScheduled={cond.get('status')} ({cond.get('reason')})" if cond else "the pod is not bound"
        steps.append(_not("10", "apiserver", "store the binding", why))
    return steps


def _containers(pod: Object) -> list[tuple[str, Object]]:
    spec = pod.get("spec") or {}
    return [("initContainers", c) for c in spec.get("initContainers") or []] + [
        ("containers", c) for c in spec.get("containers") or []
    ]


def _kubelet(ev: Evidence) -> list[Step]:
    """11-12: the kubelet sees the bound pod, pulls the images and starts the containers."""
    node = (ev.pod.get("spec") or {}).get("nodeName") or "?"
    kubelet = f"kubelet ({node})"
    status = ev.pod.get("status") or {}
    from_kubelet = [e for e in ev.pod_events if e.get("reason") in KUBELET_REASONS]
    first = min(from_kubelet, key=lambda e: _seen_rv(e) or 0, default=None)
    start = _stamp(status.get("startTime"), "status.startTime")
    steps = [
        Step("11", kubelet, "see the bound pod and accept it", stamp=start, revision=_seen_rv(first),
             evidence="status.startTime; revision: the pod's version in the kubelet's first event")
        if start or first else _not("11", kubelet, "see the bound pod", "no status.startTime and no kubelet event"),
        Step("12", kubelet, "pull the images and start the containers", stamp=None,
             evidence="sub-steps below", observed=bool(from_kubelet)),
    ]
    statuses = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    running = {s.get("name"): s for s in statuses}
    sub = 0
    for group, container in _containers(ev.pod):
        cname = container.get("name")
        path = f"spec.{group}{{{cname}}}"
        for reason, what in (("Pulling", f"pull image {container.get('image')}"), ("Pulled", "image pulled"),
                             ("Created", f"create container {cname}"), ("Started", f"start container {cname}")):
            number = f"12{chr(ord('a') + sub)}" if sub < 26 else f"12.{sub + 1}"
            sub += 1
            event = _first_event(from_kubelet, reason, path)
            stamp = event_stamp(event) if event else None
            evidence = f"event {reason}: {event.get('message')}" if event else ""
            if reason == "Started":
                state = (running.get(cname) or {}).get("state") or {}
                started = (state.get("running") or state.get("terminated") or {}).get("startedAt")
                if started and not (stamp and stamp.precise):  # startedAt has whole seconds, eventTime µs
                    stamp = _stamp(started, f"{path} state.startedAt")
                    evidence = (evidence + "; " if evidence else "") + f"containerStatuses startedAt {started}"
            if stamp is None:
                pulled = _first_event(from_kubelet, "Pulled", path)
                skipped = reason == "Pulling" and pulled and "already present" in str(pulled.get("message"))
                why = "image already present on the node: no pull" if skipped else f"no {reason} event"
                steps.append(_not(number, kubelet, what, why, applicable=not skipped))
            else:
                steps.append(Step(number, kubelet, what, stamp=stamp, evidence=evidence))
    return steps


def _running(ev: Evidence) -> Step:
    """13: the kubelet reports phase Running; the apiserver stores it and tells every watcher."""
    node = (ev.pod.get("spec") or {}).get("nodeName") or "?"
    actor = f"kubelet ({node}) + apiserver"
    first = _first_version(ev.pod_history, lambda o: (o.get("status") or {}).get("phase") == "Running")
    pod = first.obj if first else ev.pod
    phase = (pod.get("status") or {}).get("phase")
    if phase != "Running":
        return _not("13", actor, "store status phase=Running", f"phase {phase or 'unset'}"
                    + ("" if ev.pod_history is not None else "; etcd's history was not available"))
    ready = [c for c in (_condition(pod, t) for t in ("ContainersReady", "Ready")) if c]
    stamp = None
    for cond in reversed(ready):
        if cond.get("status") == "True":
            stamp = _stamp(cond.get("lastTransitionTime"), f"{cond['type']} lastTransitionTime")
            break
    conditions = ", ".join(f"{c['type']}={c.get('status')} at {c.get('lastTransitionTime')}" for c in ready)
    where = f"first version with phase Running, rev {first.rv}" if first else "current status (no history)"
    return Step("13", actor, "report status Running; the apiserver stores it", stamp=stamp,
                revision=first.rv if first else None, evidence=f"{where}; {conditions or 'no readiness conditions'}")


# ---- exact times from the audit log -------------------------------------------------------------------


def _exact(ev: Evidence, steps: list[Step]) -> None:
    """Time the writes of the flow by the apiserver's audit log (``traceaudit``), to the µs.

    A write's step takes its ``RequestReceived`` (the client, controller, scheduler or kubelet acting) or its
    ``ResponseComplete`` (stored in etcd: the response is sent after the etcd transaction); the revision it
    stored comes from its ``objectRef``. A step that is the *delivery* of a change to a watcher (4, 5, 8) has no
    record of its own — the apiserver does not log what it sends down a watch — so it says which later step's
    latency includes it: the component's next request is the exact record of it having seen the change.
    """
    writes = ev.writes or []
    by = {s.number: s for s in steps}
    pod, name = _meta(ev.pod), _meta(ev.pod).get("name")
    root = ev.controllers[-1] if ev.controllers else ev.pod

    def created(uid: str | None) -> Write | None:
        return next((w for w in writes if w.verb == "create" and not w.subresource and uid and w.uid == uid
                     and (w.code or 0) < 300), None)

    def time(step: Step, write: Write | None, stage: str, what: str) -> None:
        if write is None:
            return
        at = write.received if stage == "RequestReceived" else write.completed
        if at is None:
            return
        step.stamp = Stamp(at, True, f"audit {stage}")
        step.audit_id = write.audit_id
        if write.revision is not None and stage == "ResponseComplete" and step.revision is None:
            step.revision = write.revision
        step.observed = True
        note = f"audit: {write.verb} {write.resource}{'/' + write.subresource if write.subresource else ''} " \
               f"by {write.who}, {stage} {at.strftime('%H:%M:%S.%f')}{what}"
        step.evidence = f"{step.evidence}; {note}" if step.evidence else note

    def within(number: str, later: str, why: str) -> None:
        step = by.get(number)
        if step is not None and step.applicable and step.stamp is None and by.get(later) and by[later].audit_id:
            step.included_in = later
            step.evidence += f"; {why}: within step {later}'s latency"

    root_write = created(_meta(root).get("uid"))
    if root_write is not None:
        by["2"].evidence = by["2"].evidence.replace(" (the object exists; its request time is not recorded)", "")
    time(by["2"], root_write, "RequestReceived", "")
    time(by["3"], root_write, "ResponseComplete", "")
    if ev.controllers:
        pod_write = created(pod.get("uid"))
        time(by["6"], pod_write, "RequestReceived", " (the controller acting on what its watch delivered)")
        time(by["7"], pod_write, "ResponseComplete", "")
    binding = next((w for w in writes if w.verb == "create" and w.name == name and (w.code or 0) < 300 and (
        (w.resource == "pods" and w.subresource == "binding") or w.resource == "bindings")), None)
    time(by["9"], binding, "RequestReceived", " (the scheduler acting on what its watch delivered)")
    time(by["10"], binding, "ResponseComplete", "")
    statuses = [w for w in writes if w.resource == "pods" and w.subresource == "status" and w.uid == pod.get("uid")
                and (w.code or 0) < 300]
    _kubelet_first_act(by["11"], statuses[0] if statuses else None, [s for s in steps if s.number.startswith("12")
                                                                    and s.stamp is not None and s.stamp.precise], time)
    running = next((w for w in statuses if by["13"].revision is not None and w.revision == by["13"].revision), None)
    if running is not None:
        by["13"].stamp = None
        time(by["13"], running, "ResponseComplete", f" (received {running.received.strftime('%H:%M:%S.%f')})")
    first_seen = "6" if ev.controllers else "9"
    within("4", first_seen if by[first_seen].stamp else "9", "etcd's notification and the watch-cache fan-out "
           "are not recorded")
    within("5", "6", "the delivery to the replication controller is not recorded")
    within("8", "9", "the delivery to the scheduler is not recorded")


def _kubelet_first_act(step: Step, status: Write | None, events: list[Step],
                       time: Callable[[Step, Write | None, str, str], None]) -> None:
    """11: the kubelet seeing the bound pod is recorded by its first act — its first status write, or its first
    event (``Pulling``…) when that came first; ``status.startTime`` has whole seconds and gives way to either."""
    if not step.applicable or (status is None and not events) or (step.stamp is not None and step.stamp.precise):
        return  # (a precise time already: the delivery itself, ``_delivered``)
    first_event = min(events, key=lambda s: s.stamp.at if s.stamp else datetime.max.replace(tzinfo=UTC),
                      default=None)
    step.stamp = None
    step.evidence = step.evidence.replace("status.startTime; ", "")
    if status is not None and (first_event is None or first_event.stamp is None
                               or status.received <= first_event.stamp.at):
        time(step, status, "RequestReceived", " (the kubelet's first status write for the pod)")
    elif first_event is not None:
        step.included_in = first_event.number
        step.evidence += (f"; the kubelet's first act was event {first_event.evidence.split(':')[0].split()[-1]}: "
                          f"seeing the pod is within step {first_event.number}'s latency")


# ---- output --------------------------------------------------------------------------------------------


def _time(step: Step) -> str:
    if not step.applicable:
        return "n/a"
    if not step.observed:
        return "not observed"
    if step.stamp is None:
        return "-"
    return step.stamp.at.strftime("%H:%M:%S.%f" if step.stamp.precise else "%H:%M:%S")


def render(ev: Evidence, steps: list[Step]) -> str:
    """The table a user reads: one row per step, its evidence on the line below."""
    meta, status = _meta(ev.pod), ev.pod.get("status") or {}
    chain = " <- ".join(_ref(c) for c in ev.controllers) or "none (created directly)"
    stamps = [s.stamp.at for s in steps if s.stamp]
    day = min(stamps).strftime("%Y-%m-%d") if stamps else "-"
    head = [
        f"pod {meta.get('namespace')}/{meta.get('name')}  uid {meta.get('uid')}  "
        f"node {(ev.pod.get('spec') or {}).get('nodeName') or '<none>'}  phase {status.get('phase') or '<none>'}",
        f"controlled by: {chain}",
        f"times: UTC on {day}; HH:MM:SS is metav1.Time (whole seconds), HH:MM:SS.ffffff is exact (the audit log's "
        "request stages, an event's eventTime)",
        f"audit log: {ev.audit_log}" if ev.writes else "audit log: none (times of writes are the objects' own, "
        "to the second; `kubelab up` writes one to <data-dir>/logs/audit.log, or give --audit-log)",
        "watch deliveries: the apiserver's record (/debug/watches/deliveries)" if ev.deliveries else
        "watch deliveries: none recorded (the apiserver's ring no longer holds them, or it refused)",
        "",
    ]
    rows = [(s.number, s.actor, s.what, _time(s), str(s.revision) if s.revision is not None else "-", latency_text(s))
            for s in steps]
    table = render_table(("STEP", "WHO", "WHAT", "TIME", "REV", "LATENCY"), rows).split("\n")
    out, indent = [table[0]], " " * table[0].index("WHO")
    for line, step in zip(table[1:], steps, strict=True):
        out.append(line)
        if step.evidence:
            out.append(f"{indent}{step.evidence}")
    foot = ["", "REV: the etcd revision (resourceVersion) of the version a step stored or acted on.",
            "LATENCY: from the previous step with a time (step 2 starts the flow; step 1: how long opening the "
            "watch took); ~ means a whole-second timestamp is involved (±1s); (in N): no record of its own, its "
            "time is within step N's latency."]
    path = critical_path(steps)
    if path is not None:
        total = f"{path['total_ms']:.1f}ms" if path["exact"] else f"~{path['total_ms'] / 1000:.0f}s"
        foot.append(f"critical path: step {path['from']} -> step {path['to']}: {total} "
                    f"({'exact' if path['exact'] else 'whole seconds involved'}; the sum of the latencies above)")
    return "\n".join(head + out + foot)


def to_json(ev: Evidence, steps: list[Step]) -> str:
    def encode(step: Step) -> Object:
        out = asdict(step)
        del out["stamp"]
        out["time"] = step.stamp.at.isoformat().replace("+00:00", "Z") if step.stamp else None
        out["precision"] = ("us" if step.stamp.precise else "s") if step.stamp else None
        out["time_source"] = step.stamp.source if step.stamp else None
        return out

    meta = _meta(ev.pod)
    doc = {"pod": {"namespace": meta.get("namespace"), "name": meta.get("name"), "uid": meta.get("uid")},
           "controllers": [_ref(c) for c in ev.controllers], "audit_log": ev.audit_log if ev.writes else None,
           "deliveries": bool(ev.deliveries),
           "critical_path": critical_path(steps), "steps": [encode(s) for s in steps]}
    return json.dumps(doc, indent=2)


# ---- gathering the evidence over HTTP ------------------------------------------------------------------


class TraceError(Exception):
    """Something a user must fix (pod not found, apiserver unreachable): printed without a traceback."""


class _Api:
    """The few reads a trace needs, over httpx (a CLI makes a handful of calls)."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self._discovery: dict[str, list[Object]] = {}

    def get(self, path: str, params: dict[str, str] | None = None) -> Object | None:
        resp = self.client.get(path, params=params)
        if resp.status_code == 404:
            return None
        if resp.status_code != 200:
            raise TraceError(f"GET {path}: {resp.status_code} {_message(resp)}")
        result: Object = resp.json()
        return result

    def collection(self, api_version: str, kind: str, namespace: str | None) -> str | None:
        """The collection path of ``kind`` from discovery (``/api/v1/namespaces/ns/replicationcontrollers``)."""
        prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        if prefix not in self._discovery:
            self._discovery[prefix] = (self.get(prefix) or {}).get("resources") or []
        for resource in self._discovery[prefix]:
            if resource.get("kind") == kind and "/" not in resource.get("name", ""):
                ns = f"/namespaces/{namespace}" if resource.get("namespaced") and namespace else ""
                return f"{prefix}{ns}/{resource['name']}"
        return None

    def deliveries(self, namespace: str, names: Iterable[str]) -> list[Object] | None:
        """The apiserver's record of watch deliveries of these objects; None where it has none or refuses."""
        items: list[Object] = []
        for name in dict.fromkeys(names):
            resp = self.client.get("/debug/watches/deliveries", params={"namespace": namespace, "name": name})
            if resp.status_code != 200:
                return None  # an apiserver without the record (404) or a user not allowed to read it (403)
            items += resp.json().get("items") or []
        return items

    def events(self, namespace: str, uid: str) -> list[Object]:
        found = self.get(f"/api/v1/namespaces/{namespace}/events", {"fieldSelector": f"involvedObject.uid={uid}"})
        return list((found or {}).get("items") or [])

    def history(self, collection: str, obj: Object, since: int = 1) -> list[Version] | None:
        """Every stored version of ``obj`` after revision ``since``, up to its current one; None if compacted."""
        meta = _meta(obj)
        until = int(meta["resourceVersion"])
        params = {"watch": "true", "resourceVersion": str(since), "fieldSelector": f"metadata.name={meta['name']}",
                  "timeoutSeconds": "10"}
        versions: list[Version] = []
        with self.client.stream("GET", collection, params=params) as resp:
            if resp.status_code == 410:
                return None
            if resp.status_code != 200:
                resp.read()
                raise TraceError(f"watch {collection}: {resp.status_code} {_message(resp)}")
            for line in resp.iter_lines():
                if not line.strip():
                    continue
                event = json.loads(line)
                item = event.get("object") or {}
                if event.get("type") == "ERROR":
                    if item.get("code") == 410:
                        return None
                    raise TraceError(f"watch {collection}: {item.get('message')}")
                if event.get("type") == "BOOKMARK":
                    continue
                rv = int(_meta(item).get("resourceVersion") or 0)
                if _meta(item).get("uid") == meta.get("uid"):
                    versions.append(Version(event["type"], rv, item))
                if rv >= until:
                    break
        return versions


def _message(resp: httpx.Response) -> str:
    try:
        return str(resp.json().get("message") or resp.text)
    except ValueError:
        return resp.text


def _controller_ref(obj: Object) -> Object | None:
    return next((r for r in _meta(obj).get("ownerReferences") or [] if r.get("controller")), None)


def _history_from(api: _Api, collection: str | None, obj: Object, hints: Iterable[int] = ()) -> list[Version] | None:
    """The object's history, from the lowest revision known to precede it, else from the beginning."""
    if collection is None:
        return None
    for since in (*hints, 1):
        versions = api.history(collection, obj, since)
        if versions is None or _created(versions) is not None or since == 1:
            return versions
    return None


def gather(client: httpx.Client, namespace: str, name: str, audit_log: Path | None = None) -> Evidence:
    """Read everything the components recorded about pod ``namespace/name`` (and the audit log, if given)."""
    api = _Api(client)
    pods = f"/api/v1/namespaces/{namespace}/pods"
    pod = api.get(f"{pods}/{name}")
    if pod is None:
        raise TraceError(f'pods "{name}" not found in namespace {namespace}')
    ev = Evidence(pod=pod, pod_events=api.events(namespace, _meta(pod)["uid"]))
    obj: Object = pod
    collections: list[str | None] = []
    while (ref := _controller_ref(obj)) is not None and len(ev.controllers) < 5:
        path = api.collection(ref.get("apiVersion", ""), ref.get("kind", ""), namespace)
        owner = api.get(f"{path}/{ref.get('name')}") if path else None
        if owner is None or _meta(owner).get("uid") != ref.get("uid"):
            break
        ev.controllers.append(owner)
        collections.append(path)
        obj = owner
    hints: list[int] = []
    if ev.controllers:
        ev.owner_events = api.events(namespace, _meta(ev.controllers[0])["uid"])
        made = _pod_created_events(ev.owner_events, name)
        hints = [rv for rv in (_seen_rv(e) for e in made) if rv]
        ev.root_history = _history_from(api, collections[-1], ev.controllers[-1])
    ev.pod_history = _history_from(api, pods, pod, sorted(hints)[:1])
    ev.deliveries = api.deliveries(namespace, [name, *(_meta(c).get("name") or "" for c in ev.controllers[-1:])])
    node = (pod.get("spec") or {}).get("nodeName")
    ev.node = api.get(f"/api/v1/nodes/{node}") if node else None
    for _, lease in LEADER_LEASES:
        ev.leases[lease] = api.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease}")
    if audit_log is not None:
        ev.writes = find_writes(audit_log, namespace)
        ev.audit_log = str(audit_log) if ev.writes is not None else None
    return ev


# ---- the command ---------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_pod_arguments(parser, "trace", "only pods have the flow")
    parser.add_argument("--svg", metavar="FILE", help="also draw the flow as a sequence diagram (SVG) into FILE")
    parser.add_argument("--png", metavar="FILE", help="also draw it as PNG (needs rsvg-convert or chromium)")
    parser.add_argument("--lang", choices=("en", "zh"), default="en", help="the diagram's labels (default: en)")
    parser.add_argument("--audit-log", metavar="PATH", default=None,
                        help="the apiserver's audit log, for exact (µs) times of every write (default: "
                             f"{DEFAULT_DATA_DIR}/logs/audit.log of `kubelab up`, when it exists)")


def run(args: argparse.Namespace) -> int:
    api = apiserver_client(args, "trace")
    if api is None:
        return 1
    try:
        with api:
            evidence = gather(api, args.namespace, args.name, Path(args.audit_log or DEFAULT_AUDIT_LOG))
    except TraceError as e:
        print(f"kubelab trace: {e}", file=sys.stderr)
        return 1
    except httpx.HTTPError as e:
        return unreachable("trace", api, e)
    steps = build_steps(evidence)
    print(to_json(evidence, steps) if args.output == "json" else render(evidence, steps))
    return draw(evidence, steps, args)


def draw(evidence: Evidence, steps: list[Step], args: argparse.Namespace) -> int:
    """``--svg`` / ``--png``: the sequence diagram of the same steps (``tracesvg``)."""
    if not (args.svg or args.png):
        return 0
    from kubelab.commands import tracesvg  # only when asked: the table needs none of it

    svg = tracesvg.render_svg(evidence, steps, args.lang)
    if args.svg:
        Path(args.svg).write_text(svg, encoding="utf-8")
        print(f"kubelab trace: wrote {args.svg}", file=sys.stderr)
    if args.png:
        try:
            tracesvg.to_png(svg, Path(args.png))
        except tracesvg.NoConverter as e:
            print(f"kubelab trace: {e}", file=sys.stderr)
            return 1
        print(f"kubelab trace: wrote {args.png}", file=sys.stderr)
    return 0
