"""Pods (core/v1): defaults and admission on create, the narrow set of spec updates, status, deletion, table.

What kube-apiserver does to a new pod, in order: v1 defaulting (``SetDefaults_Pod`` + ``podspec``), the
mutating admission plugins a default cluster runs (ServiceAccount, DefaultTolerationSeconds; Priority reads
PriorityClasses, so it is in the admission chain: ``apiserver.admission.priority``), then ``PrepareForCreate``
(status reset to ``Pending`` with its QoS class). Updates re-default but skip admission.
The STATUS and RESTARTS cells follow ``printPod`` in ``pkg/printers/internalversion/printers.go`` line by line.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from apimachinery.errors import Cause
from apimachinery.meta import parse_time
from apimachinery.validation import (
    forbidden,
    inclusive_range_error,
    invalid,
    is_valid_ip,
    name_is_dns_subdomain,
    not_supported,
    required,
    validate_immutable,
    validate_qualified_name,
)
from apiserver.registry.podscheduling import validate_only_added_tolerations
from apiserver.registry.podspec import MAX_INT32, default_container, default_pod_spec, validate_pod_spec
from apiserver.registry.qos import qos_class, reject_unparsable, resource_lists
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
TERMINAL_PHASES = ("Succeeded", "Failed")
DEFAULT_TOLERATION_SECONDS = 300
NODE_NOT_READY_TAINT = "node.kubernetes.io/not-ready"
NODE_UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
NODE_LOST_REASON = "NodeLost"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


class PodStrategy(Strategy):
    kind = "Pod"
    resource = "pods"
    singular = "pod"
    short_names = ("po",)
    categories = ("all",)
    subresources = ("status", "binding", "eviction", "log", "exec", "attach", "portforward", "ephemeralcontainers",
                    "proxy")
    status_resets = ("ownerReferences",)  # podStatusStrategy
    bumps_generation = False
    graceful_deletion = True

    # --- create -------------------------------------------------------------------------------------------
    def prepare_for_create(self, obj: Object) -> None:
        spec = obj.setdefault("spec", {})
        reject_unparsable(resource_lists(spec), self.kind, self.version)
        default_pod(obj)
        admit_pod(obj)
        status: Object = {"phase": "Pending", "qosClass": qos_class(spec)}
        if spec.get("schedulingGates"):
            status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                                     "message": "Scheduling is blocked due to non-empty scheduling gates",
                                     "lastProbeTime": None, "lastTransitionTime": None}]
        obj["status"] = status

    def validate(self, obj: Object) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes = validate_pod_spec(spec, "spec", is_pod=True)
        if spec.get("ephemeralContainers"):
            causes.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
        if spec.get("nodeName") and spec.get("schedulingGates"):
            causes.append(forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
        return causes

    # --- update -------------------------------------------------------------------------------------------
    def prepare_for_update(self, new: Object, old: Object) -> None:
        spec = new.setdefault("spec", {})
        reject_unparsable(resource_lists(spec), self.kind, self.version)
        default_pod(new)
        super().prepare_for_update(new, old)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        causes = validate_pod_spec(new.get("spec") or {}, "spec", is_pod=True)
        return causes + validate_pod_spec_update(new.get("spec") or {}, old.get("spec") or {})

    # --- status -------------------------------------------------------------------------------------------
    def prepare_for_status_update(self, new: Object, old: Object) -> None:
        super().prepare_for_status_update(new, old)
        status = new.setdefault("status", {})
        if not status.get("qosClass"):  # old kubelets dropped it; it is set once, at creation
            old_qos = (old.get("status") or {}).get("qosClass")
            if old_qos:
                status["qosClass"] = old_qos

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        return validate_pod_status_update(new, old)

    # --- ephemeralcontainers ---------------------------------------------------------------------------------
    def prepare_for_ephemeralcontainers_update(self, new: Object, old: Object) -> None:
        """``dropNonEphemeralContainerUpdates``: the stored pod with the body's ``spec.ephemeralContainers``
        (defaulted), whatever else the body says (metadata too, as ``ResetObjectMetaForStatus``)."""
        ephemeral = (new.get("spec") or {}).get("ephemeralContainers")
        new.clear()
        new.update(copy.deepcopy(old))
        new["metadata"].pop("resourceVersion", None)
        spec = new["spec"]
        spec.pop("ephemeralContainers", None)
        if ephemeral is not None:
            for container in ephemeral:
                if isinstance(container, dict):
                    default_container(container)
            # After ``containers``, where PodSpec has the field (``kubectl get -o json`` shows it there).
            items = list(spec.items())
            at = next((i + 1 for i, (key, _) in enumerate(items) if key == "containers"), len(items))
            new["spec"] = dict(items[:at] + [("ephemeralContainers", ephemeral)] + items[at:])

    def validate_ephemeralcontainers_update(self, new: Object, old: Object) -> list[Cause]:
        return validate_ephemeral_containers_update(new, old)

    # --- deletion -----------------------------------------------------------------------------------------
    def graceful_delete_seconds(self, obj: Object, requested: int | None) -> int:
        """The request's grace, else the pod's; 0 for a pod never bound to a node or already finished."""
        spec = obj.get("spec") or {}
        period = requested if requested is not None else spec.get("terminationGracePeriodSeconds") or 0
        if not spec.get("nodeName"):
            period = 0
        if (obj.get("status") or {}).get("phase") in TERMINAL_PHASES:
            period = 0
        return 1 if period < 0 else int(period)

    # --- fields and tables --------------------------------------------------------------------------------
    def selectable_fields(self, obj: Object) -> dict[str, str]:
        fields = super().selectable_fields(obj)
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        fields.update({
            "spec.nodeName": spec.get("nodeName") or "",
            "spec.restartPolicy": spec.get("restartPolicy") or "",
            "spec.schedulerName": spec.get("schedulerName") or "",
            "spec.serviceAccountName": spec.get("serviceAccountName") or "",
            "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
            "status.phase": status.get("phase") or "",
            "status.podIP": pod_ip(obj),
            "status.nominatedNodeName": status.get("nominatedNodeName") or "",
        })
        return fields

    def columns(self) -> list[TableColumn]:
        return [
            NAME_COLUMN,
            TableColumn("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
            TableColumn("Status", description="The aggregate status of the containers in this pod."),
            TableColumn("Restarts", description="The number of times the containers in this pod have been "
                                                "restarted and when the last container in this pod has restarted."),
            AGE_COLUMN,
            TableColumn("IP", priority=1, description="podIP address allocated to the pod."),
            TableColumn("Node", priority=1, description="NodeName indicates in which node this pod is scheduled."),
            TableColumn("Nominated Node", priority=1, description="nominatedNodeName is set only when this pod "
                                                                  "preempts other pods on the node."),
            TableColumn("Readiness Gates", priority=1, description="If specified, all readiness gates will be "
                                                                   "evaluated for pod readiness."),
        ]

    def row(self, obj: Object) -> list[Any]:
        return pod_row(obj)


# === defaults and admission ================================================================================


def default_pod(pod: Object) -> None:
    """``SetDefaults_Pod``: requests default to limits, service links on, host ports follow hostNetwork."""
    spec = pod.setdefault("spec", {})
    for kind in ("containers", "initContainers"):
        for container in spec.get(kind) or []:
            resources = container.get("resources") or {}
            limits = resources.get("limits")
            if limits:
                requests = resources.setdefault("requests", {})
                for name, value in limits.items():
                    requests.setdefault(name, value)
                container["resources"] = resources
            if spec.get("hostNetwork"):
                for port in container.get("ports") or []:
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    default_pod_spec(spec)


def admit_pod(pod: Object) -> None:
    """The create-time mutating admission a default cluster applies to every pod (the service account is the
    ServiceAccount admission plugin's, ``apiserver.admission.serviceaccount``)."""
    spec = pod["spec"]
    _add_default_tolerations(spec)


def _add_default_tolerations(spec: Object) -> None:
    """DefaultTolerationSeconds: evict from a NotReady/unreachable node after 300s unless told otherwise."""
    tolerations = spec.get("tolerations") or []
    for taint in (NODE_NOT_READY_TAINT, NODE_UNREACHABLE_TAINT):
        tolerated = any((t.get("key") or "") in (taint, "") and (t.get("effect") or "") in ("NoExecute", "")
                        for t in tolerations)
        if not tolerated:
            tolerations.append({"key": taint, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
    spec["tolerations"] = tolerations


# === update validation =====================================================================================


def validate_pod_spec_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidatePodUpdate``: only images, activeDeadlineSeconds, added tolerations and grace may change."""
    causes: list[Cause] = []
    for kind in ("containers", "initContainers"):
        new_containers, old_containers = new.get(kind) or [], old.get(kind) or []
        if len(new_containers) != len(old_containers):
            return causes + [forbidden(f"spec.{kind}", "pod updates may not add or remove containers")]
        for i, container in enumerate(new_containers):
            image = container.get("image") or ""
            if not image:
                causes.append(required(f"spec.{kind}[{i}].image"))
            if image != image.strip():
                causes.append(invalid(f"spec.{kind}[{i}].image", image, "must not have leading or trailing whitespace"))
    new_deadline, old_deadline = new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds")
    if new_deadline is not None:
        if not 0 <= new_deadline <= MAX_INT32:
            return causes + [invalid("spec.activeDeadlineSeconds", new_deadline, inclusive_range_error(0, MAX_INT32))]
        if old_deadline is not None and old_deadline < new_deadline:
            return causes + [invalid("spec.activeDeadlineSeconds", new_deadline,
                                     "must be less than or equal to previous value")]
    elif old_deadline is not None:
        causes.append(invalid("spec.activeDeadlineSeconds", None, "must not update from a positive integer to nil "
                                                                   "value"))
    causes.extend(validate_only_added_tolerations(new.get("tolerations"), old.get("tolerations"), "spec.tolerations"))
    causes.extend(_validate_only_deleted_gates(new.get("schedulingGates"), old.get("schedulingGates")))
    munged = _munge_updatable(new, old)
    if _normalized(munged) != _normalized(old):
        diff = "\n".join(_diff_lines(_normalized(old), _normalized(munged), ""))
        causes.append(forbidden("spec", "pod updates may not change fields other than "
                                        f"{','.join(UPDATABLE_POD_SPEC_FIELDS)}\n  core.PodSpec{{\n{diff}\n  }}\n"))
    return causes


def _munge_updatable(new: Mapping[str, Any], old: Mapping[str, Any]) -> Object:
    """The new spec with every field users may change reset to its old value."""
    munged = copy.deepcopy(dict(new))
    for kind in ("containers", "initContainers"):
        for container, previous in zip(munged.get(kind) or [], old.get(kind) or [], strict=False):
            container["image"] = previous.get("image")
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged.pop(key, None)
        if key in old:
            munged[key] = copy.deepcopy(old[key])
    old_grace = old.get("terminationGracePeriodSeconds")
    if old_grace is not None and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    return munged


def _validate_only_deleted_gates(new: list[Mapping[str, Any]] | None,
                                 old: list[Mapping[str, Any]] | None) -> list[Cause]:
    old_names = {g.get("name") for g in old or []}
    return [forbidden(f"spec.schedulingGates[{i}].name", f"only deletion is allowed, but found new scheduling gate "
                                                         f"'{g.get('name')}'")
            for i, g in enumerate(new or []) if g.get("name") not in old_names]


def _normalized(value: Any) -> Any:
    """Go's semantic equality: unset, empty lists and empty maps are all the same thing."""
    if isinstance(value, Mapping):
        out = {k: _normalized(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


def _diff_lines(old: Any, new: Any, path: str) -> list[str]:
    """A short ``-``/``+`` listing of what differs (Kubernetes prints a ``cmp.Diff`` here)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        lines: list[str] = []
        for key in sorted(set(old) | set(new)):
            lines.extend(_diff_lines(old.get(key), new.get(key), f"{path}.{key}" if path else key))
        return lines
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        pairs = enumerate(zip(old, new, strict=True))
        return [line for i, (a, b) in pairs for line in _diff_lines(a, b, f"{path}[{i}]")]
    if old == new:
        return []
    lines = []
    if old is not None:
        lines.append(f"- \t{path}: {json.dumps(old)},")
    if new is not None:
        lines.append(f"+ \t{path}: {json.dumps(new)},")
    return lines


def validate_ephemeral_containers_update(new: Object, old: Object) -> list[Cause]:
    """``ValidatePodEphemeralContainersUpdate``: the pod stays valid, and its ephemeral containers may only be
    added — an existing one (matched by name, patches do not keep the order) is never changed or removed."""
    if MIRROR_POD_ANNOTATION in ((old.get("metadata") or {}).get("annotations") or {}):
        return [forbidden("", "static pods do not support ephemeral containers")]
    causes = validate_pod_spec(new.get("spec") or {}, "spec", is_pod=True)
    current = {c.get("name"): c for c in (new.get("spec") or {}).get("ephemeralContainers") or []}
    for previous in (old.get("spec") or {}).get("ephemeralContainers") or []:
        existing = f'existing ephemeral containers "{previous.get("name")}"'
        if previous.get("name") not in current:
            causes.append(forbidden("spec.ephemeralContainers", f"{existing} may not be removed\n"))
        elif _normalized(current[previous.get("name")]) != _normalized(previous):
            diff = "\n".join(_diff_lines(_normalized(previous), _normalized(current[previous.get("name")]), ""))
            causes.append(forbidden("spec.ephemeralContainers", f"{existing} may not be changed\n"
                                                                f"  core.EphemeralContainer{{\n{diff}\n  }}\n"))
    return causes


def validate_pod_status_update(new: Object, old: Object) -> list[Cause]:
    """``ValidatePodStatusUpdate`` plus a check that the phase is one the API defines."""
    causes: list[Cause] = []
    status, old_status = new.get("status") or {}, old.get("status") or {}
    for i, condition in enumerate(status.get("conditions") or []):
        if condition.get("type") not in ("PodScheduled", "Ready", "Initialized"):
            causes.extend(validate_qualified_name(condition.get("type") or "", f"metadata.conditions[{i}].Type"))
    nominated = status.get("nominatedNodeName") or ""
    if nominated and nominated != old_status.get("nominatedNodeName"):
        causes.extend(invalid("status.nominatedNodeName", nominated, msg)
                      for msg in name_is_dns_subdomain(nominated, False))
    causes.extend(validate_immutable(status.get("qosClass") or "", old_status.get("qosClass") or "",
                                     "status.qosClass"))
    phase = status.get("phase")
    if phase and phase not in POD_PHASES:
        causes.append(not_supported("status.phase", phase, POD_PHASES))
    policy = (old.get("spec") or {}).get("restartPolicy")
    for kind in ("containerStatuses", "initContainerStatuses"):
        causes.extend(_validate_state_transitions(status.get(kind), old_status.get(kind), f"status.{kind}", policy))
    # The kubelet never restarts an ephemeral container: as if its restartPolicy were Never.
    causes.extend(_validate_state_transitions(status.get("ephemeralContainerStatuses"),
                                              old_status.get("ephemeralContainerStatuses"),
                                              "status.ephemeralContainerStatuses", "Never"))
    for i, entry in enumerate(status.get("podIPs") or []):
        causes.extend(is_valid_ip(f"status.podIPs[{i}]", entry.get("ip", "")))
    host_ips = status.get("hostIPs") or []
    if host_ips and status.get("hostIP") != host_ips[0].get("ip"):
        causes.append(invalid("status.hostIPs[0].ip", host_ips[0].get("ip", ""), "must be equal to `hostIP`"))
    for i, entry in enumerate(host_ips):
        causes.extend(is_valid_ip(f"status.hostIPs[{i}]", entry.get("ip", "")))
    return causes


def _validate_state_transitions(new: list[Mapping[str, Any]] | None, old: list[Mapping[str, Any]] | None,
                                path: str, restart_policy: str | None) -> list[Cause]:
    """A container that finished for good (per restartPolicy) may not be reported running again."""
    if restart_policy == "Always":
        return []
    causes = []
    for i, previous in enumerate(old or []):
        terminated = (previous.get("state") or {}).get("terminated")
        if terminated is None:
            continue
        if (terminated.get("exitCode") or 0) != 0 and restart_policy == "OnFailure":
            continue
        for current in new or []:
            if current.get("name") == previous.get("name") and (current.get("state") or {}).get("terminated") is None:
                causes.append(forbidden(f"{path}[{i}].state", "may not be transitioned to non-terminated state"))
    return causes


# === table =================================================================================================


def pod_ip(pod: Mapping[str, Any]) -> str:
    status = pod.get("status") or {}
    ips = status.get("podIPs") or []
    return (ips[0].get("ip") if ips else status.get("podIP")) or ""


def pod_row(pod: Object, now: datetime | None = None) -> list[Any]:
    """``printPod``: NAME READY STATUS RESTARTS AGE IP NODE NOMINATED-NODE READINESS-GATES."""
    metadata, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    reason, ready, total, restarts, last_restart = _pod_summary(pod)
    restarts_cell = str(restarts)
    if restarts and last_restart is not None:
        restarts_cell = f"{restarts} ({since(last_restart, now)} ago)"
    gates = spec.get("readinessGates") or []
    gates_cell = "<none>"
    if gates:
        true_conditions = 0
        for gate in gates:
            for condition in status.get("conditions") or []:
                if condition.get("type") == gate.get("conditionType"):
                    true_conditions += condition.get("status") == "True"
                    break
        gates_cell = f"{true_conditions}/{len(gates)}"
    return [metadata.get("name", ""), f"{ready}/{total}", reason, restarts_cell,
            since(metadata.get("creationTimestamp"), now), pod_ip(pod) or "<none>", spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>", gates_cell]


def pod_status_reason(pod: Object) -> str:
    """The STATUS cell alone (``Running``, ``ContainerCreating``, ``Init:0/1``, ``Terminating`` …)."""
    return _pod_summary(pod)[0]


def _pod_summary(pod: Object) -> tuple[str, int, int, int, str | None]:
    """(STATUS, ready containers, total containers, restarts, last restart time) as ``printPod`` computes them."""
    metadata, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total = len(spec.get("containers") or []) + sum(_restartable(c) for c in init_specs.values())
    ready = restarts = sidecar_restarts = 0
    last_restart: str | None = None
    last_sidecar_restart: str | None = None

    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for i, container in enumerate(init_statuses):
        restarts += container.get("restartCount") or 0
        finished = _last_termination(container)
        last_restart = _later(last_restart, finished)
        sidecar = _restartable(init_specs.get(container.get("name")))
        if sidecar:
            sidecar_restarts += container.get("restartCount") or 0
            last_sidecar_restart = _later(last_sidecar_restart, finished)
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and (terminated.get("exitCode") or 0) == 0:
            continue
        if sidecar and container.get("started"):
            ready += bool(container.get("ready"))
            continue
        if terminated is not None:
            if not terminated.get("reason"):
                signal = terminated.get("signal") or 0
                reason = f"Init:Signal:{signal}" if signal else f"Init:ExitCode:{terminated.get('exitCode') or 0}"
            else:
                reason = "Init:" + terminated["reason"]
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        initializing = True
        break

    if not initializing or _condition_true(status, "Initialized"):
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for container in reversed(status.get("containerStatuses") or []):
            restarts += container.get("restartCount") or 0
            last_restart = _later(last_restart, _last_termination(container))
            state = container.get("state") or {}
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated is not None and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated is not None:
                signal = terminated.get("signal") or 0
                reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode') or 0}"
            elif container.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(status, "Ready") else "NotReady"

    if metadata.get("deletionTimestamp") and status.get("reason") == NODE_LOST_REASON:
        reason = "Unknown"
    elif metadata.get("deletionTimestamp") and phase not in TERMINAL_PHASES:
        reason = "Terminating"
    return reason, ready, total, restarts, last_restart


def _restartable(container: Mapping[str, Any] | None) -> bool:
    return bool(container) and container.get("restartPolicy") == "Always"  # type: ignore[union-attr]


def _condition_true(status: Mapping[str, Any], condition_type: str) -> bool:
    for condition in status.get("conditions") or []:
        if condition.get("type") == condition_type:
            return bool(condition.get("status") == "True")
    return False


def _last_termination(container: Mapping[str, Any]) -> str | None:
    terminated = (container.get("lastState") or {}).get("terminated") or {}
    return terminated.get("finishedAt") or None


def _later(current: str | None, candidate: str | None) -> str | None:
    if candidate is None:
        return current
    if current is None or parse_time(candidate) > parse_time(current):
        return candidate
    return current

