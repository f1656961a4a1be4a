"""Pod status as the kubelet computes it: pure functions from container states to phase and conditions.

``pod_phase`` follows kubelet's ``getPhase``: Failed as soon as an init container failed under ``restartPolicy:
Never``; Pending while an init container has not completed or any container has not started; Running while any
runs (or will be restarted); Succeeded when all exited 0 and none will restart; Failed when all exited and one
failed under ``Never``. Conditions follow ``GeneratePodInitializedCondition`` / ``GeneratePodReadyCondition``:
Initialized once every init container exited 0, ContainersReady and Ready once every app container is ready
(``PodCompleted`` when the pod is done). Init container statuses stay in spec order; app container statuses
are sorted by name, as the kubelet sorts them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from apimachinery.meta import now_rfc3339


def pod_phase(restart_policy: str, statuses: Sequence[dict[str, Any]],
              init_statuses: Sequence[dict[str, Any]] = (), init_total: int | None = None) -> str:
    pending_init = failed_init = 0
    for status in init_statuses:
        state = status.get("state") or {}
        last = (status.get("lastState") or {}).get("terminated")
        if "terminated" in state:
            failed_init += state["terminated"].get("exitCode") != 0
        elif "waiting" in state and last:
            failed_init += last.get("exitCode") != 0
        else:
            pending_init += 1
    pending_init += max(0, (init_total if init_total is not None else len(init_statuses)) - len(init_statuses))
    if failed_init and restart_policy == "Never":
        return "Failed"
    waiting = running = stopped = succeeded = 0
    for status in statuses:
        state = status.get("state") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += state["terminated"].get("exitCode") == 0
        elif (status.get("lastState") or {}).get("terminated"):
            stopped += 1  # waiting to be restarted (CrashLoopBackOff)
        else:
            waiting += 1
    if pending_init or waiting or not statuses:
        return "Pending"
    if running:
        return "Running"
    if restart_policy == "Always":
        return "Running"
    if stopped == succeeded:
        return "Succeeded"
    if restart_policy == "Never":
        return "Failed"
    return "Running"


def _condition(kind: str, ok: bool, previous: dict[str, dict[str, Any]], reason: str = "",
               message: str = "") -> dict[str, Any]:
    status = "True" if ok else "False"
    old = previous.get(kind)
    since = old["lastTransitionTime"] if old and old.get("status") == status else now_rfc3339()
    condition: dict[str, Any] = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": since}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


KUBELET_CONDITIONS = ("PodScheduled", "Ready", "Initialized", "ContainersReady", "PodReadyToStartContainers")


def _unfinished(names: list[str], what: str) -> str:
    return f"containers with {what} status: [{' '.join(names)}]"


def _initialized(spec: dict[str, Any], statuses: list[dict[str, Any]], init_statuses: list[dict[str, Any]],
                 phase: str, previous: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``GeneratePodInitializedCondition``."""
    known = {s["name"]: s for s in init_statuses}
    unknown = [c["name"] for c in spec.get("initContainers") or [] if c["name"] not in known]
    incomplete = [name for name, s in known.items()
                  if ((s.get("state") or {}).get("terminated") or {}).get("exitCode", -1) != 0]
    if phase == "Succeeded" and not unknown:
        return _condition("Initialized", True, previous, "PodCompleted")
    if any(_has_started(s) for s in statuses):
        return _condition("Initialized", True, previous)
    messages = [_unfinished(unknown, "unknown")] if unknown else []
    messages += [_unfinished(incomplete, "incomplete")] if incomplete else []
    if messages:
        return _condition("Initialized", False, previous, "ContainersNotInitialized", ", ".join(messages))
    return _condition("Initialized", True, previous)


def _has_started(status: dict[str, Any]) -> bool:
    state = status.get("state") or {}
    return "running" in state or "terminated" in state or bool((status.get("lastState") or {}).get("terminated"))


def _ready(spec: dict[str, Any], statuses: list[dict[str, Any]], phase: str, previous: dict[str, dict[str, Any]],
           others: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``GeneratePodReadyCondition`` and ``GenerateContainersReadyCondition`` (Ready also waits for readiness gates)."""
    known = {s["name"]: s for s in statuses}
    unknown = [c["name"] for c in spec.get("containers") or [] if c["name"] not in known]
    unready = [c["name"] for c in spec.get("containers") or [] if c["name"] in known and not known[c["name"]]["ready"]]
    if phase == "Succeeded" and not unknown:
        containers = _condition("ContainersReady", False, previous, "PodCompleted")
    elif phase == "Failed":
        containers = _condition("ContainersReady", False, previous, "PodFailed")
    else:
        messages = [_unfinished(unknown, "unknown")] if unknown else []
        messages += [_unfinished(unready, "unready")] if unready else []
        containers = _condition("ContainersReady", not messages, previous,
                                "ContainersNotReady" if messages else "", ", ".join(messages))
    if containers["status"] != "True":
        ready = _condition("Ready", False, previous, containers.get("reason", ""), containers.get("message", ""))
        return [ready, containers]
    gates = {c.get("type"): c.get("status") for c in others}
    for gate in spec.get("readinessGates") or []:
        kind = gate.get("conditionType")
        if kind not in gates:
            message = f'corresponding condition of pod readiness gate "{kind}" does not exist.'
        elif gates[kind] != "True":
            message = f'the status of pod readiness gate "{kind}" is not "True", but {gates[kind]}'
        else:
            continue
        return [_condition("Ready", False, previous, "ReadinessGatesNotReady", message), containers]
    return [_condition("Ready", True, previous), containers]


def build_status(pod: dict[str, Any], statuses: list[dict[str, Any]], host_ip: str, start_time: str,
                 init_statuses: list[dict[str, Any]] | None = None, *, pod_ip: str | None = None,
                 ephemeral_statuses: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The pod's whole ``status`` from its container statuses (PodScheduled is carried over from the binding);
    ``podIP`` only once the pod's sandbox has one, as kubelet reports it. Ephemeral containers are reported
    (sorted by name) but count for neither the phase nor the conditions."""
    spec = pod.get("spec", {})
    old = pod.get("status") or {}
    previous = {c["type"]: c for c in old.get("conditions") or []}
    init_statuses = init_statuses or []
    statuses = sorted(statuses, key=lambda s: s["name"])
    init_total = len(spec.get("initContainers") or [])
    phase = pod_phase(spec.get("restartPolicy", "Always"), statuses, init_statuses, init_total)
    conditions = [c for c in old.get("conditions") or [] if c.get("type") not in KUBELET_CONDITIONS]
    conditions += [
        _initialized(spec, statuses, init_statuses, phase, previous),
        *_ready(spec, statuses, phase, previous, conditions),
        previous.get("PodScheduled") or _condition("PodScheduled", True, previous),
    ]
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "startTime": start_time,
        "containerStatuses": statuses,
    }
    if pod_ip:
        status["podIP"], status["podIPs"] = pod_ip, [{"ip": pod_ip}]
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    if ephemeral_statuses:
        status["ephemeralContainerStatuses"] = sorted(ephemeral_statuses, key=lambda s: s["name"])
    if old.get("qosClass"):
        status["qosClass"] = old["qosClass"]
    return status


def waiting(container: dict[str, Any], reason: str, restarts: int, last: dict[str, Any] | None = None,
            message: str = "") -> dict[str, Any]:
    """A container waiting to be (re)started: its ``containerID`` is the last instance's, if one ran."""
    state: dict[str, Any] = {"reason": reason}
    if message:
        state["message"] = message
    last_id = ((last or {}).get("terminated") or {}).get("containerID", "")
    return _container_status(container, {"waiting": state}, restarts, last, ready=False, container_id=last_id)


def running(container: dict[str, Any], started_at: str, restarts: int,
            last: dict[str, Any] | None = None, *, ready: bool = True, started: bool = True,
            container_id: str = "") -> dict[str, Any]:
    """``ready``: passing its readiness probe (if any); ``started``: passed its startup probe (if any);
    ``container_id``: ``<runtime>://<id>`` as the runtime names the instance."""
    return _container_status(container, {"running": {"startedAt": started_at}}, restarts, last,
                             ready=ready and started, started=started, container_id=container_id)


def terminated(container: dict[str, Any], code: int, started_at: str, finished_at: str, restarts: int,
               last: dict[str, Any] | None = None, *, init: bool = False, container_id: str = "",
               reason: str | None = None, message: str | None = None) -> dict[str, Any]:
    """An init container that exited 0 counts as ready (prober manager's ``UpdatePodStatus``); ``reason``: the
    runtime's own (``OOMKilled``) over Completed/Error."""
    state: dict[str, Any] = {"exitCode": code, "reason": reason or ("Completed" if code == 0 else "Error"),
                             "startedAt": started_at, "finishedAt": finished_at}
    if message:
        state["message"] = message  # the container's termination message
    if container_id:
        state["containerID"] = container_id
    return _container_status(container, {"terminated": state}, restarts, last, ready=init and code == 0,
                             started=False, container_id=container_id)


def ephemeral(status: dict[str, Any]) -> dict[str, Any]:
    """An ephemeral container's status: never ready, and without ``started`` (the prober manager, which sets it,
    looks only at app and init containers)."""
    return {k: (False if k == "ready" else v) for k, v in status.items() if k != "started"}


def _container_status(container: dict[str, Any], state: dict[str, Any], restarts: int,
                      last: dict[str, Any] | None, ready: bool, started: bool = False,
                      container_id: str = "") -> dict[str, Any]:
    image = container.get("image", "")
    return {
        "name": container["name"],
        "image": image,
        "imageID": f"kubelab://{image}",
        "containerID": container_id,
        "state": state,
        "lastState": last or {},
        "ready": ready,
        "started": started,
        "restartCount": restarts,
    }
