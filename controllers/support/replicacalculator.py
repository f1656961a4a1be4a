"""The HPA's replica calculation for resource metrics (``pkg/controller/podautoscaler/replica_calculator.go``): pure.

Given the pods the target's selector picks and the pods' usage from metrics.k8s.io (in milli-units: millicores,
milli-bytes), ``resource_replicas`` proposes a replica count as kube's ``GetResourceReplicas`` does:

1. pods being deleted or Failed are ignored; Pending pods count as unready; pods without a metric are missing;
   for cpu, a pod is unready while it has no Ready condition or start time, or — within the cpu initialization
   period after its start — while it is not Ready or its sample started before it turned Ready; after that
   period, only a pod that never became Ready (not Ready within the initial readiness delay of its start);
2. the usage ratio is the ready pods' usage summed over their requests summed, as whole percents, divided by the
   target utilization; a ratio within the tolerance (0.1) of 1 keeps the current count;
3. with no unready or missing pods the proposal is ``ceil(ratio × ready pods)``; otherwise missing pods count as
   using their whole request (``max(100 %, target)``) on a scale-down and nothing on a scale-up, unready pods as
   using nothing on a scale-up, and the ratio is taken again: a change of direction or a change within the
   tolerance keeps the current count.

``raw_resource_replicas`` is the same for an AverageValue target (usage per pod against a per-pod value).
Errors are ``MetricsError`` with kube's messages; the caller turns them into the FailedGetResourceMetric event
and condition.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from apimachinery.meta import Object, parse_duration, parse_time
from apimachinery.quantity import parse_quantity
from controllers.support.podutil import get_condition

DEFAULT_TOLERANCE = 0.1
DEFAULT_CPU_INITIALIZATION_PERIOD = timedelta(minutes=5)
DEFAULT_INITIAL_READINESS_DELAY = timedelta(seconds=30)


class MetricsError(Exception):
    """The metrics (or requests) do not allow a proposal; the message is kube's."""


@dataclass(frozen=True, slots=True)
class PodMetric:
    """A pod's usage summed over its containers, in milli-units, and the sample's end and length."""

    value: int
    timestamp: datetime
    window: timedelta


@dataclass(frozen=True, slots=True)
class Proposal:
    """What one metric proposes: the replica count, and the utilization (percent; None for raw values) and
    average usage per pod (milli-units) it saw."""

    replicas: int
    utilization: int | None
    raw: int
    timestamp: datetime | None = None


@dataclass(slots=True)
class PodGroups:
    ready: int = 0
    unready: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)
    ignored: set[str] = field(default_factory=set)


def group_pods(pods: Sequence[Object], metrics: Mapping[str, PodMetric], resource: str, now: datetime, *,
               cpu_initialization_period: timedelta = DEFAULT_CPU_INITIALIZATION_PERIOD,
               initial_readiness_delay: timedelta = DEFAULT_INITIAL_READINESS_DELAY) -> PodGroups:
    """``groupPods``: which pods count, which are unready, missing a metric, or ignored."""
    groups = PodGroups()
    for pod in pods:
        name = pod["metadata"]["name"]
        status = pod.get("status") or {}
        if pod["metadata"].get("deletionTimestamp") or status.get("phase") == "Failed":
            groups.ignored.add(name)
            continue
        if status.get("phase") == "Pending":
            groups.unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            groups.missing.add(name)
            continue
        if resource == "cpu":
            ready = get_condition(status, "Ready")
            start = status.get("startTime")
            if ready is None or not start:
                unready = True
            else:
                started = parse_time(start)
                transition = parse_time(ready["lastTransitionTime"]) if ready.get("lastTransitionTime") else started
                if started + cpu_initialization_period > now:
                    unready = ready.get("status") == "False" or metric.timestamp < transition + metric.window
                else:
                    unready = ready.get("status") == "False" and started + initial_readiness_delay > transition
            if unready:
                groups.unready.add(name)
                continue
        groups.ready += 1
    return groups


def pod_requests(pods: Sequence[Object], resource: str, container: str = "") -> dict[str, int]:
    """``calculatePodRequests``: each pod's request in milli-units over its containers (and restartable init
    containers); a container without one makes the whole calculation fail."""
    requests: dict[str, int] = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        containers = list(spec.get("containers") or []) + [
            c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
        total = 0
        for c in containers:
            if container and c.get("name") != container:
                continue
            request = ((c.get("resources") or {}).get("requests") or {}).get(resource)
            if request is None:
                raise MetricsError(f"missing request for {resource} in container {c.get('name', '')} of Pod "
                                   f"{pod['metadata']['name']}")
            total += parse_quantity(request).milli_value()
        requests[pod["metadata"]["name"]] = total
    return requests


def utilization_ratio(metrics: Mapping[str, PodMetric], requests: Mapping[str, int],
                      target: int) -> tuple[float, int, int]:
    """``GetResourceUtilizationRatio``: (usage ratio, utilization in whole percents, average usage per pod)."""
    used = requested = entries = 0
    for name, metric in metrics.items():
        if name not in requests:  # metrics of pods we do not know are extraneous
            continue
        used += metric.value
        requested += requests[name]
        entries += 1
    if requested == 0:
        raise MetricsError("no metrics returned matched known pods")
    utilization = used * 100 // requested
    return utilization / target, utilization, used // entries


def _counted_metrics(pods: Sequence[Object], metrics: Mapping[str, PodMetric], resource: str, now: datetime,
                     **periods: timedelta) -> tuple[PodGroups, dict[str, PodMetric]]:
    """The pods grouped, and the metrics of those that count (neither ignored nor unready)."""
    if not pods:
        raise MetricsError("no pods returned by selector while calculating replica count")
    groups = group_pods(pods, metrics, resource, now, **periods)
    counted = {name: m for name, m in metrics.items() if name not in groups.ignored and name not in groups.unready}
    if not counted:
        raise MetricsError("did not receive metrics for targeted pods (pods might be unready)")
    return groups, counted


def _stays(ratio: float, tolerance: float) -> bool:
    return abs(1.0 - ratio) <= tolerance


def resource_replicas(current: int, target_utilization: int, resource: str, pods: Sequence[Object],
                      metrics: Mapping[str, PodMetric], now: datetime, *, tolerance: float = DEFAULT_TOLERANCE,
                      container: str = "", **periods: timedelta) -> Proposal:
    """``GetResourceReplicas``: the replica count that brings average utilization to ``target_utilization``."""
    groups, counted = _counted_metrics(pods, metrics, resource, now, **periods)
    requests = pod_requests(pods, resource, container)
    ratio, utilization, raw = utilization_ratio(counted, requests, target_utilization)
    timestamp = max((m.timestamp for m in counted.values()), default=None)
    scale_up_with_unready = bool(groups.unready) and ratio > 1.0
    if not scale_up_with_unready and not groups.missing:
        if _stays(ratio, tolerance):
            return Proposal(current, utilization, raw, timestamp)
        return Proposal(math.ceil(ratio * groups.ready), utilization, raw, timestamp)
    adjusted = dict(counted)
    if groups.missing:
        fallback = max(100, target_utilization)
        for name in groups.missing:
            if ratio < 1.0:
                adjusted[name] = PodMetric(requests.get(name, 0) * fallback // 100, now, timedelta())
            elif ratio > 1.0:
                adjusted[name] = PodMetric(0, now, timedelta())
    if scale_up_with_unready:
        for name in groups.unready:
            adjusted[name] = PodMetric(0, now, timedelta())
    new_ratio, _, _ = utilization_ratio(adjusted, requests, target_utilization)
    return Proposal(_settled(current, ratio, new_ratio, len(adjusted), tolerance), utilization, raw, timestamp)


def _settled(current: int, ratio: float, new_ratio: float, count: int, tolerance: float) -> int:
    """The last step of both calculations: no change within the tolerance or against the first direction."""
    if _stays(new_ratio, tolerance) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current
    replicas = math.ceil(new_ratio * count)
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current
    return replicas


def raw_resource_replicas(current: int, target_milli: int, resource: str, pods: Sequence[Object],
                          metrics: Mapping[str, PodMetric], now: datetime, *, tolerance: float = DEFAULT_TOLERANCE,
                          **periods: timedelta) -> Proposal:
    """``GetRawResourceReplicas`` / ``calcPlainMetricReplicas``: the count that brings the average usage per
    pod to ``target_milli``."""
    groups, counted = _counted_metrics(pods, metrics, resource, now, **periods)
    usage = sum(m.value for m in counted.values())
    ratio = usage / (target_milli * len(counted))
    raw = usage // len(counted)
    timestamp = max(m.timestamp for m in counted.values())
    scale_up_with_unready = bool(groups.unready) and ratio > 1.0
    if not scale_up_with_unready and not groups.missing:
        if _stays(ratio, tolerance):
            return Proposal(current, None, raw, timestamp)
        return Proposal(math.ceil(ratio * len(counted)), None, raw, timestamp)
    adjusted = {name: m.value for name, m in counted.items()}
    for name in groups.missing:
        adjusted[name] = target_milli if ratio < 1.0 else 0
    if scale_up_with_unready:
        adjusted.update({name: 0 for name in groups.unready})
    new_ratio = sum(adjusted.values()) / (target_milli * len(adjusted))
    return Proposal(_settled(current, ratio, new_ratio, len(adjusted), tolerance), None, raw, timestamp)


def pod_metrics(items: Sequence[Object], resource: str, container: str = "") -> dict[str, PodMetric]:
    """The metrics API's PodMetrics as ``GetResourceMetric`` keeps them: usage summed over the containers (or
    the one named), in milli-units; a pod with a container that lacks the resource is left out."""
    out: dict[str, PodMetric] = {}
    for item in items:
        containers = [c for c in item.get("containers") or [] if not container or c.get("name") == container]
        usages = [(c.get("usage") or {}).get(resource) for c in containers]
        if not containers or any(u is None for u in usages):
            continue
        total: int = sum(parse_quantity(u).milli_value() for u in usages if u is not None)
        window = timedelta(seconds=parse_duration(item.get("window") or "0s"))
        out[item["metadata"]["name"]] = PodMetric(total, parse_time(item["timestamp"]), window)
    return out

