"""The horizontal-pod-autoscaler controller (``pkg/controller/podautoscaler/horizontal.go``).

Every ``--horizontal-pod-autoscaler-sync-period`` (15 s) each HorizontalPodAutoscaler is reconciled; as in kube
every enqueue waits one period (a new HPA is first looked at a period after it appears) and a key already
waiting is not queued twice. ``sync(key)`` is one ``reconcileAutoscaler``:

1. read the target's ``/scale`` (kind → resource: Deployment, ReplicaSet, ReplicationController, else any kind
   discovery lists with a ``/scale`` subresource, custom resources included); failing that,
   AbleToScale False ``FailedGetScale`` and a FailedGetScale event;
2. a target at 0 replicas is left alone (ScalingActive False ``ScalingDisabled``); one outside min/max is
   brought inside; otherwise each metric proposes a count — Resource and ContainerResource metrics from
   metrics.k8s.io through the apiserver and the pods the scale's selector picks (``replicacalculator``), the
   custom and external metrics APIs are not served so those metrics fail — and the highest proposal wins
   (ScalingActive True ``ValidMetricFound``); when every metric failed (or some did and the rest would scale
   down) nothing is scaled: ScalingActive False with the first failure's reason, a FailedComputeMetricsReplicas
   event, and the current metrics written;
3. the proposal is stabilized and limited (``hpanormalize``), the scale is updated when the count changes
   (SuccessfulRescale "New size: N; reason: …", AbleToScale ``SucceededRescale``; on error FailedRescale and
   ``FailedUpdateScale``), and the status — currentReplicas, desiredReplicas, currentMetrics, lastScaleTime,
   conditions — is written only when it changed.

The recommendations and scale events each HPA's stabilization needs are kept in memory, as kube keeps them;
they start again (from the current count) when the controller restarts. The clock is injectable.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from apimachinery.errors import Conflict, StatusError
from apimachinery.labels import parse_selector
from apimachinery.meta import Object
from apimachinery.quantity import format_cpu_milli, parse_quantity
from controllers.support.base import Controller, key_of, unwrap
from controllers.support.discovery import scalable_resource
from controllers.support.hpanormalize import Condition, Recommendations, normalize, normalize_with_behavior
from controllers.support.podutil import fmt_time, now_utc
from controllers.support.replicacalculator import (
    DEFAULT_CPU_INITIALIZATION_PERIOD,
    DEFAULT_INITIAL_READINESS_DELAY,
    DEFAULT_TOLERANCE,
    MetricsError,
    Proposal,
    pod_metrics,
    raw_resource_replicas,
    resource_replicas,
)
from kubeclient import (
    DEPLOYMENTS,
    HORIZONTAL_POD_AUTOSCALERS,
    NAMESPACE_INDEX,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    Clientset,
    DeletedFinalStateUnknown,
    EventRecorder,
    InformerFactory,
    Resource,
)

log = logging.getLogger(__name__)

COMPONENT = "horizontal-pod-autoscaler"
DEFAULT_SYNC_PERIOD = 15.0
DEFAULT_DOWNSCALE_STABILIZATION = timedelta(minutes=5)
METRICS_PATH = "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods"
# Scale targets by (group, kind), as the RESTMapper would resolve them for the kinds this apiserver serves.
SCALE_TARGETS: dict[tuple[str, str], Resource] = {
    ("apps", "Deployment"): DEPLOYMENTS,
    ("apps", "ReplicaSet"): REPLICA_SETS,
    ("", "ReplicationController"): REPLICATION_CONTROLLERS,
}


class MetricFailure(Exception):
    """One metric gave no proposal: the ScalingActive condition's reason, the error (the event's and the
    condition's message) and the error as ``computeReplicasForMetric`` wraps it."""

    def __init__(self, reason: str, message: str, wrapped: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.wrapped = wrapped or message


def set_condition(hpa: Object, condition: Condition, now: datetime) -> None:
    """``setCondition``: update or append; lastTransitionTime moves only when the status does."""
    kind, status, reason, message = condition
    conditions = hpa.setdefault("status", {}).setdefault("conditions", [])
    existing = next((c for c in conditions if c.get("type") == kind), None)
    if existing is None:
        existing = {"type": kind}
        conditions.append(existing)
    if existing.get("status") != status:
        existing["lastTransitionTime"] = fmt_time(now)
    existing.update(status=status, reason=reason, message=message)


def scale_target(ref: dict[str, Any]) -> Resource:
    api_version = ref.get("apiVersion") or ""
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    resource = SCALE_TARGETS.get((group, ref.get("kind") or ""))
    if resource is None:
        raise LookupError(f"unable to determine resource for scale target reference: no matches for kind "
                          f"\"{ref.get('kind', '')}\" in group \"{group}\"")
    return resource


class HorizontalController(Controller):
    name = "horizontal-pod-autoscaler"
    queue_name = "horizontalpodautoscaler"

    async def _scale_target(self, ref: dict[str, Any]) -> Resource:
        """The built-in targets from the table, any other kind (a custom resource with ``/scale``) from
        discovery."""
        try:
            return scale_target(ref)
        except LookupError:
            found = await scalable_resource(self.clientset, ref.get("apiVersion") or "", ref.get("kind") or "")
            if found is None:
                raise
            return found

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5,
                 sync_period: float = DEFAULT_SYNC_PERIOD,
                 downscale_stabilization: timedelta = DEFAULT_DOWNSCALE_STABILIZATION,
                 tolerance: float = DEFAULT_TOLERANCE,
                 cpu_initialization_period: timedelta = DEFAULT_CPU_INITIALIZATION_PERIOD,
                 initial_readiness_delay: timedelta = DEFAULT_INITIAL_READINESS_DELAY,
                 clock: Callable[[], datetime] = now_utc) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.sync_period = sync_period
        self.downscale_stabilization = downscale_stabilization
        self.tolerance = tolerance
        self.periods = {"cpu_initialization_period": cpu_initialization_period,
                        "initial_readiness_delay": initial_readiness_delay}
        self.clock = clock
        self.recorder = EventRecorder(clientset.events, COMPONENT)
        self.recommendations: dict[str, Recommendations] = {}
        self.hpa_informer = factory.informer(HORIZONTAL_POD_AUTOSCALERS)
        self.pod_informer = factory.informer(PODS)
        self.informers = [self.hpa_informer, self.pod_informer]
        self.hpa_informer.add_event_handler(self._enqueue, lambda old, new: self._enqueue(new), self._deleted)

    def _enqueue(self, obj: Object | DeletedFinalStateUnknown) -> None:
        """``enqueueHPA``: every request waits one sync period; a waiting key is not queued twice."""
        self.queue.add_after(key_of(obj), self.sync_period)

    def _deleted(self, obj: Object | DeletedFinalStateUnknown) -> None:
        self.recommendations.pop(key_of(unwrap(obj)), None)
        self._enqueue(obj)

    async def sync(self, key: str) -> None:
        hpa = self.hpa_informer.indexer.get_by_key(key)
        if hpa is None:
            self.recommendations.pop(key, None)
            return
        try:
            await self.reconcile(key, copy.deepcopy(hpa))
        except Conflict:
            log.debug("%s: %s changed meanwhile; next period", self.name, key)
        except (StatusError, OSError, LookupError) as err:
            log.info("%s: %s: %s", self.name, key, err)
        finally:
            self.queue.add_after(key, self.sync_period)

    # --- reconcileAutoscaler ----------------------------------------------------------------------------------
    async def reconcile(self, key: str, hpa: Object) -> None:
        original = copy.deepcopy(hpa.get("status") or {})
        spec, namespace = hpa.get("spec") or {}, hpa["metadata"]["namespace"]
        ref = spec.get("scaleTargetRef") or {}
        reference = f"{ref.get('kind', '')}/{namespace}/{ref.get('name', '')}"
        now = self.clock()
        try:
            target = await self._scale_target(ref)
            scale_path = target.path(namespace, ref.get("name") or "", "scale")
            scale = await self.clientset.rest.request("GET", scale_path)
        except (StatusError, LookupError) as err:
            self.recorder.event(hpa, "Warning", "FailedGetScale", str(err))
            set_condition(hpa, ("AbleToScale", "False", "FailedGetScale",
                                f"the HPA controller was unable to get the target's current scale: {err}"), now)
            await self._write_status(hpa, original)
            raise
        set_condition(hpa, ("AbleToScale", "True", "SucceededGetScale",
                            "the HPA controller was able to get the target's current scale"), now)
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        recs = self.recommendations.setdefault(key, Recommendations())
        recs.record_initial(current, now)
        min_replicas = spec.get("minReplicas", 1)
        max_replicas = int(spec.get("maxReplicas") or 0)
        statuses: list[dict[str, Any]] = (hpa.get("status") or {}).get("currentMetrics") or []
        reason, desired = "", 0
        if current == 0 and min_replicas != 0:
            set_condition(hpa, ("ScalingActive", "False", "ScalingDisabled",
                                "scaling is disabled since the replica count of the target is zero"), now)
        elif current > max_replicas:
            reason, desired = "Current number of replicas above Spec.MaxReplicas", max_replicas
        elif current < min_replicas:
            reason, desired = "Current number of replicas below Spec.MinReplicas", min_replicas
        else:
            proposed, metric_name, statuses, failure = await self.replicas_for_metrics(hpa, scale, current, now)
            if proposed < 0:
                message = f"failed to compute desired number of replicas based on listed metrics for {reference}: " \
                          f"{failure}"
                self.recorder.event(hpa, "Warning", "FailedComputeMetricsReplicas", str(failure))
                self._set_status(hpa, current, None, statuses, rescale=False, now=now)
                await self._write_status(hpa, original)
                log.info("%s: %s", self.name, message)
                return
            desired = proposed
            if desired > current:
                reason = f"{metric_name} above target"
            elif desired < current:
                reason = "All metrics below target"
            behavior = spec.get("behavior")
            if behavior is None:
                desired, conditions = normalize(recs, current, desired, min_replicas, max_replicas, now,
                                                self.downscale_stabilization)
            else:
                desired, conditions = normalize_with_behavior(recs, behavior, current, desired, min_replicas,
                                                              max_replicas, now, self.downscale_stabilization)
            for condition in conditions:
                set_condition(hpa, condition, now)
        rescale = desired != current
        if rescale:
            try:
                await self.clientset.rest.request("PUT", scale_path, body={**scale, "spec": {"replicas": desired}})
            except StatusError as err:
                self.recorder.event(hpa, "Warning", "FailedRescale",
                                    f"New size: {desired}; reason: {reason}; error: {err}")
                set_condition(hpa, ("AbleToScale", "False", "FailedUpdateScale",
                                    f"the HPA controller was unable to update the target scale: {err}"), now)
                self._set_status(hpa, current, None, statuses, rescale=False, now=now)
                await self._write_status(hpa, original)
                raise
            set_condition(hpa, ("AbleToScale", "True", "SucceededRescale",
                                f"the HPA controller was able to update the target scale to {desired}"), now)
            self.recorder.event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
            recs.store_scale_event(spec.get("behavior"), current, desired, now)
            log.info("%s: %s scaled %s from %d to %d: %s", self.name, key, reference, current, desired, reason)
        else:
            desired = current
        self._set_status(hpa, current, desired, statuses, rescale=rescale, now=now)
        await self._write_status(hpa, original)

    async def replicas_for_metrics(self, hpa: Object, scale: Object, current: int, now: datetime
                                   ) -> tuple[int, str, list[dict[str, Any]], str]:
        """``computeReplicasForMetrics``: (the highest proposal or -1, its metric's name, the metric statuses,
        the first failure as kube words it)."""
        selector_text = (scale.get("status") or {}).get("selector") or ""
        if not selector_text:
            self.recorder.event(hpa, "Warning", "SelectorRequired", "selector is required")
            set_condition(hpa, ("ScalingActive", "False", "InvalidSelector",
                                "the HPA target's scale is missing a selector"), now)
            return -1, "", [], "selector is required"
        selector = parse_selector(selector_text)
        namespace = hpa["metadata"]["namespace"]
        pods = [p for p in self.pod_informer.indexer.by_index(NAMESPACE_INDEX, namespace)
                if selector.matches(p["metadata"].get("labels") or {})]
        specs = (hpa.get("spec") or {}).get("metrics") or []
        statuses: list[dict[str, Any]] = [{"type": ""} for _ in specs]
        replicas, metric, failures = 0, "", []
        for i, spec in enumerate(specs):
            try:
                proposal, name, statuses[i] = await self.replicas_for_metric(spec, namespace, selector_text, pods,
                                                                             current, now)
            except MetricFailure as failure:
                failures.append(failure)
                continue
            if replicas == 0 or proposal.replicas > replicas:
                replicas, metric = proposal.replicas, name
        if failures:
            first = failures[0]
            self.recorder.event(hpa, "Warning", first.reason, str(first))
            error = f"invalid metrics ({len(failures)} invalid out of {len(specs)}), first error is: {first.wrapped}"
            if len(failures) >= len(specs) or replicas < current:
                set_condition(hpa, ("ScalingActive", "False", first.reason,
                                    f"the HPA was unable to compute the replica count: {first}"), now)
                return -1, "", statuses, error
        set_condition(hpa, ("ScalingActive", "True", "ValidMetricFound",
                            f"the HPA was able to successfully calculate a replica count from {metric}"), now)
        return replicas, metric, statuses, ""

    async def replicas_for_metric(self, spec: dict[str, Any], namespace: str, selector: str, pods: list[Object],
                                  current: int, now: datetime) -> tuple[Proposal, str, dict[str, Any]]:
        """One metric's proposal, its name in events ("cpu resource utilization (percentage of request)") and its
        MetricStatus; ``MetricFailure`` when it has none."""
        kind = spec.get("type")
        if kind not in ("Resource", "ContainerResource"):
            field = {"Pods": "pods", "Object": "object", "External": "external"}.get(kind or "", "")
            name = ((spec.get(field) or {}).get("metric") or {}).get("name", "")
            api = "external metrics API" if kind == "External" else "custom metrics API"
            raise MetricFailure(f"FailedGet{kind}Metric", f"unable to get metric {name}: unable to fetch metrics from "
                                                          f"{api}: the server could not find the requested resource")
        field = "resource" if kind == "Resource" else "containerResource"
        source = spec.get(field) or {}
        resource, container = source.get("name") or "", source.get("container") or ""
        target = source.get("target") or {}
        reason = f"FailedGet{kind}Metric"
        try:
            metrics = pod_metrics(await self._pod_metrics(namespace, selector, resource), resource, container)
            if target.get("averageValue") is not None:
                milli = parse_quantity(target["averageValue"]).milli_value()
                proposal = raw_resource_replicas(current, milli, resource, pods, metrics, now,
                                                 tolerance=self.tolerance, **self.periods)
                name = f"{resource} {'container ' if container else ''}resource"
            else:
                proposal = resource_replicas(current, int(target.get("averageUtilization") or 0), resource, pods,
                                             metrics, now, tolerance=self.tolerance, container=container,
                                             **self.periods)
                name = f"{resource} {'container ' if container else ''}resource utilization (percentage of request)"
        except MetricsError as err:
            what = "utilization" if target.get("averageValue") is None else "usage"
            message = f"failed to get {resource} {what}: {err}"
            kind_words = "container resource" if container else "resource"
            raise MetricFailure(reason, message, f"failed to get {resource} {kind_words} metric value: {message}") \
                from None
        current_value: dict[str, Any] = {"averageValue": format_cpu_milli(proposal.raw)}
        if proposal.utilization is not None:
            current_value = {"averageUtilization": proposal.utilization, **current_value}
        status = {"name": resource, "current": current_value}
        if container:
            status = {"container": container, **status}
        return proposal, name, {"type": kind, field: status}

    async def _pod_metrics(self, namespace: str, selector: str, resource: str) -> list[Object]:
        """``GetResourceMetric``'s list call to metrics.k8s.io (through the apiserver, as kube's REST client)."""
        try:
            listed = await self.clientset.rest.request("GET", METRICS_PATH.format(namespace=namespace),
                                                       params={"labelSelector": selector})
        except (StatusError, OSError) as err:
            raise MetricsError(f"unable to get metrics for resource {resource}: unable to fetch metrics from resource "
                               f"metrics API: {err}") from None
        items = listed.get("items") or []
        if not items:
            raise MetricsError(f"unable to get metrics for resource {resource}: no metrics returned from resource "
                               f"metrics API")
        return items

    # --- status ---------------------------------------------------------------------------------------------
    @staticmethod
    def _set_status(hpa: Object, current: int, desired: int | None, metrics: list[dict[str, Any]], *,
                    rescale: bool, now: datetime) -> None:
        """``setStatus`` (``desired`` None: ``setCurrentReplicasAndMetricsInStatus``, desiredReplicas kept)."""
        status = hpa.setdefault("status", {})
        status["currentReplicas"] = current
        if desired is not None:
            status["desiredReplicas"] = desired
        status.setdefault("desiredReplicas", 0)
        if metrics:
            status["currentMetrics"] = metrics
        else:
            status.pop("currentMetrics", None)
        if rescale:
            status["lastScaleTime"] = fmt_time(now)

    async def _write_status(self, hpa: Object, original: dict[str, Any]) -> None:
        """``updateStatusIfNeeded``."""
        if hpa.get("status") == original:
            return
        await self.clientset.horizontal_pod_autoscalers.update_status(hpa)
