"""The pure rules of the daemonset controller (``pkg/controller/daemon/util`` and the decisions of
``daemon_controller.go`` / ``update.go``), kept apart so they can be read and tested without a cluster.

* ``daemon_pod_spec``: the template's spec with the tolerations every DaemonSet pod gets
  (``AddOrUpdateDaemonPodTolerations``): not-ready and unreachable (NoExecute), disk-, memory- and
  pid-pressure and unschedulable (NoSchedule), network-unavailable too with ``hostNetwork`` — so cordoned and
  unhealthy nodes keep their daemons.
* ``node_should_run``: (should run, should continue running) for one node (``NodeShouldRunDaemonPod``):
  ``nodeName``, nodeSelector and required node affinity must admit the node; an untolerated NoSchedule or
  NoExecute taint stops new pods, and only an untolerated NoExecute one removes running pods.
* ``new_pod``: the pod for one node, bound to it through required node affinity ``matchFields metadata.name In
  [node]`` (``ReplaceDaemonSetPodNodeNameNodeAffinity``) so the scheduler places it, labelled with
  ``controller-revision-hash`` and ``pod-template-generation``.
* ``pods_to_replace``: which old pods a RollingUpdate deletes (maxSurge 0) or which nodes get a surge pod.
* ``calculate_status``: the DaemonSet status from the node → pods map.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from apimachinery import nodeaffinity
from apimachinery.meta import Object
from apimachinery.taints import untolerated
from controllers.support.history import REVISION_HASH_LABEL
from controllers.support.podutil import POD_FAILED, is_pod_available, is_pod_ready, meta, pod_from_template
from controllers.support.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    TAINT_DISK_PRESSURE,
    TAINT_MEMORY_PRESSURE,
    TAINT_NETWORK_UNAVAILABLE,
    TAINT_NOT_READY,
    TAINT_PID_PRESSURE,
    TAINT_UNREACHABLE,
    TAINT_UNSCHEDULABLE,
)

TEMPLATE_GENERATION_LABEL = "pod-template-generation"
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"

_AUTOMATIC_TOLERATIONS = ((TAINT_NOT_READY, NO_EXECUTE), (TAINT_UNREACHABLE, NO_EXECUTE),
                          (TAINT_DISK_PRESSURE, NO_SCHEDULE), (TAINT_MEMORY_PRESSURE, NO_SCHEDULE),
                          (TAINT_PID_PRESSURE, NO_SCHEDULE), (TAINT_UNSCHEDULABLE, NO_SCHEDULE))


def template_generation(ds: Object) -> str | None:
    return (meta(ds).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)


def daemon_pod_spec(template_spec: Mapping[str, Any]) -> dict[str, Any]:
    """The template's spec plus the automatic DaemonSet tolerations (each added unless already there)."""
    spec = copy.deepcopy(dict(template_spec))
    tolerations: list[dict[str, Any]] = spec.get("tolerations") or []
    wanted = list(_AUTOMATIC_TOLERATIONS)
    if spec.get("hostNetwork"):
        wanted.append((TAINT_NETWORK_UNAVAILABLE, NO_SCHEDULE))
    for key, effect in wanted:
        toleration = {"key": key, "operator": "Exists", "effect": effect}
        if not any(t.get("key") == key and t.get("effect") == effect for t in tolerations):
            tolerations.append(toleration)
    spec["tolerations"] = tolerations
    return spec


def node_should_run(ds: Object, node: Object) -> tuple[bool, bool]:
    """(should run, should continue running) a daemon pod of ``ds`` on ``node``."""
    spec = daemon_pod_spec(((ds.get("spec") or {}).get("template") or {}).get("spec") or {})
    name = meta(node).get("name") or ""
    if spec.get("nodeName") and spec["nodeName"] != name:
        return False, False
    if not nodeaffinity.required_matches(spec, meta(node).get("labels") or {}, name):
        return False, False
    taints = (node.get("spec") or {}).get("taints") or []
    tolerations = spec["tolerations"]
    if untolerated(taints, tolerations, (NO_SCHEDULE, NO_EXECUTE)):
        return False, not untolerated(taints, tolerations, (NO_EXECUTE,))
    return True, True


def target_node(pod: Object) -> str:
    """The node a daemon pod is for: its ``nodeName``, or the one its node affinity names (``GetTargetNodeName``)."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = nodeaffinity.node_affinity(spec).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for req in term.get("matchFields") or []:
            values = req.get("values") or []
            if req.get("key") == "metadata.name" and req.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return ""


def new_pod(ds: Object, node_name: str, revision_hash: str, ref: Mapping[str, Any]) -> Object:
    """The daemon pod for ``node_name`` (see the module docstring)."""
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    template["spec"] = daemon_pod_spec(template.get("spec") or {})
    labels = template.setdefault("metadata", {}).get("labels") or {}
    labels[REVISION_HASH_LABEL] = revision_hash
    generation = template_generation(ds)
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = generation
    template["metadata"]["labels"] = labels
    affinity = template["spec"].get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
    affinity["nodeAffinity"] = node_affinity
    template["spec"]["affinity"] = affinity
    return pod_from_template(template, ds, ref)


def is_pod_updated(pod: Object, revision_hash: str, generation: str | None) -> bool:
    """Made from the current template: its hash or its template generation matches (``IsPodUpdated``)."""
    labels = meta(pod).get("labels") or {}
    return (generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == generation) or \
        (bool(revision_hash) and labels.get(REVISION_HASH_LABEL) == revision_hash)


def is_failed(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") == POD_FAILED


def oldest_first(pods: Sequence[Object]) -> list[Object]:
    """By creation time, then name (``podByCreationTimestampAndPhase`` without the phase tie-break)."""
    return sorted(pods, key=lambda p: (meta(p).get("creationTimestamp") or "", meta(p).get("name") or ""))


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``."""
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value or 0)


def surge_and_unavailable(ds: Object, desired: int) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as pod counts for ``desired`` nodes; at least one unavailable without surge."""
    rolling = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    surge = scaled_value(rolling.get("maxSurge"), desired, True)
    unavailable = scaled_value(rolling.get("maxUnavailable"), desired, True)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


@dataclass
class Replacement:
    """What a RollingUpdate step does: delete these old pods, create surge pods on these nodes."""

    delete: list[Object] = field(default_factory=list)
    create_on: list[str] = field(default_factory=list)


def pods_to_replace(ds: Object, node_pods: Mapping[str, Sequence[Object]], revision_hash: str,
                    now: datetime) -> Replacement:
    """One RollingUpdate step over the nodes that should run the daemon (``rollingUpdate``).

    Without surge, old pods go while no more than maxUnavailable nodes lack an available daemon (unavailable
    old pods always go).  With surge, a new pod starts beside the old one on up to maxSurge nodes, and the old
    one goes once the new one is available.
    """
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    generation = template_generation(ds)
    max_surge, max_unavailable = surge_and_unavailable(ds, len(node_pods))
    step = Replacement()
    unavailable = surging = 0
    candidates: list[tuple[str, Object]] = []
    for node in sorted(node_pods):
        live = [p for p in node_pods[node] if not meta(p).get("deletionTimestamp") and not is_failed(p)]
        new = [p for p in live if is_pod_updated(p, revision_hash, generation)]
        old = [p for p in live if not is_pod_updated(p, revision_hash, generation)]
        if len(new) > 1 or len(old) > 1 or not live:
            unavailable += 1  # the manage step creates or deletes here first
        elif new and old:
            if max_surge and is_pod_available(new[0], min_ready, now):
                step.delete.append(old[0])
            elif max_surge:
                surging += 1
            else:
                unavailable += 1
        elif new:
            if not is_pod_available(new[0], min_ready, now):
                unavailable += 1
        elif not is_pod_available(old[0], min_ready, now):
            if max_surge:  # an unavailable old pod is replaced at once
                step.create_on.append(node)
            else:
                step.delete.append(old[0])
        else:
            candidates.append((node, old[0]))
    if max_surge:
        step.create_on.extend(node for node, _ in candidates[:max(0, max_surge - surging)])
    else:
        step.delete.extend(pod for _, pod in candidates[:max(0, max_unavailable - unavailable)])
    return step


def calculate_status(ds: Object, node_pods: Mapping[str, Sequence[Object]], should_run: set[str],
                     revision_hash: str, now: datetime) -> dict[str, Any]:
    """The status ``ds`` should have (``updateDaemonSetStatus``), as Go writes it (zero counts after the
    first four omitted)."""
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    generation = template_generation(ds)
    current = misscheduled = ready = available = updated = 0
    for node, pods in node_pods.items():
        if not pods:
            continue
        if node not in should_run:
            misscheduled += 1
            continue
        current += 1
        pod = oldest_first(pods)[0]
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
        if is_pod_updated(pod, revision_hash, generation):
            updated += 1
    desired = len(should_run)
    status: dict[str, Any] = {"currentNumberScheduled": current, "numberMisscheduled": misscheduled,
                              "desiredNumberScheduled": desired, "numberReady": ready}
    optional = {"observedGeneration": int(meta(ds).get("generation") or 0), "updatedNumberScheduled": updated,
                "numberAvailable": available, "numberUnavailable": desired - available,
                "collisionCount": (ds.get("status") or {}).get("collisionCount")}
    status.update({k: v for k, v in optional.items() if v})
    if (ds.get("status") or {}).get("conditions"):
        status["conditions"] = ds["status"]["conditions"]
    return status
