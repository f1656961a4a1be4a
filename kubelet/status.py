"""Pod status as the kubelet computes it: pure functions from container states to phase and conditions.

``pod_phase`` follows kubelet's ``getPhase``: Pending while any container has not started, Running while any
runs (or will be restarted), Succeeded when all exited 0 and none will restart, Failed when all exited and one
failed under ``restartPolicy: Never`` (or ``OnFailure`` never restarts a success).
"""

from __future__ import annotations

from typing import Any

from apimachinery.meta import now_rfc3339


def pod_phase(restart_policy: str, statuses: list[dict[str, Any]]) -> str:
    waiting = running = succeeded = failed = 0
    for status in statuses:
        state = status.get("state") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            if state["terminated"].get("exitCode") == 0:
                succeeded += 1
            else:
                failed += 1
        elif status.get("lastState", {}).get("terminated"):
            running += 1  # waiting to be restarted (CrashLoopBackOff): the pod is still Running
        else:
            waiting += 1
    total = len(statuses)
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if succeeded + failed == total and total:
        if restart_policy == "Always":
            return "Running"
        if failed and restart_policy == "Never":
            return "Failed"
        if failed and restart_policy == "OnFailure":
            return "Running"
        return "Succeeded"
    return "Pending"


def _condition(kind: str, ok: bool, previous: dict[str, dict[str, Any]], reason: str = "") -> dict[str, Any]:
    status = "True" if ok else "False"
    old = previous.get(kind)
    since = old["lastTransitionTime"] if old and old.get("status") == status else now_rfc3339()
    condition: dict[str, Any] = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": since}
    if reason and not ok:
        condition["reason"] = reason
    return condition


def build_status(pod: dict[str, Any], statuses: list[dict[str, Any]], host_ip: str, start_time: str) -> dict[str, Any]:
    """The pod's whole ``status`` from its container statuses (PodScheduled is carried over from the binding)."""
    spec = pod.get("spec", {})
    old = pod.get("status") or {}
    previous = {c["type"]: c for c in old.get("conditions") or []}
    phase = pod_phase(spec.get("restartPolicy", "Always"), statuses)
    ready = bool(statuses) and all(s.get("ready") for s in statuses) and phase == "Running"
    conditions = [
        _condition("Initialized", True, previous),
        _condition("Ready", ready, previous, "ContainersNotReady"),
        _condition("ContainersReady", ready, previous, "ContainersNotReady"),
        previous.get("PodScheduled") or _condition("PodScheduled", True, previous),
    ]
    if phase in ("Succeeded", "Failed"):
        for condition in conditions[1:3]:
            condition["reason"] = "PodCompleted"
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": host_ip,
        "podIPs": [{"ip": host_ip}],
        "startTime": start_time,
        "containerStatuses": statuses,
    }
    if old.get("qosClass"):
        status["qosClass"] = old["qosClass"]
    return status


def waiting(container: dict[str, Any], reason: str, restarts: int, last: dict[str, Any] | None = None,
            message: str = "") -> dict[str, Any]:
    state: dict[str, Any] = {"reason": reason}
    if message:
        state["message"] = message
    return _container_status(container, {"waiting": state}, restarts, last, ready=False)


def running(container: dict[str, Any], started_at: str, restarts: int,
            last: dict[str, Any] | None = None) -> dict[str, Any]:
    return _container_status(container, {"running": {"startedAt": started_at}}, restarts, last, ready=True,
                             started=True)


def terminated(container: dict[str, Any], code: int, started_at: str, finished_at: str, restarts: int,
               last: dict[str, Any] | None = None) -> dict[str, Any]:
    state = {"exitCode": code, "reason": "Completed" if code == 0 else "Error", "startedAt": started_at,
             "finishedAt": finished_at}
    return _container_status(container, {"terminated": state}, restarts, last, ready=False, started=False)


def _container_status(container: dict[str, Any], state: dict[str, Any], restarts: int,
                      last: dict[str, Any] | None, ready: bool, started: bool = False) -> dict[str, Any]:
    image = container.get("image", "")
    return {
        "name": container["name"],
        "image": image,
        "imageID": f"kubelab://{image}",
        "containerID": "",
        "state": state,
        "lastState": last or {},
        "ready": ready,
        "started": started,
        "restartCount": restarts,
    }
