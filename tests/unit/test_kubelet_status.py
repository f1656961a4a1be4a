"""kubelet.status: getPhase with init containers, and the Initialized / Ready / ContainersReady conditions."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet import status as st

C = {"name": "main", "image": "busybox"}
I1 = {"name": "init-a", "image": "busybox"}
I2 = {"name": "init-b", "image": "busybox"}
T0 = "2024-01-01T00:00:00Z"


def _run(c: dict[str, Any] = C, **kw: Any) -> dict[str, Any]:
    return st.running(c, T0, 0, **kw)


def _done(c: dict[str, Any], code: int, init: bool = False) -> dict[str, Any]:
    return st.terminated(c, code, T0, T0, 0, init=init)


def _crashloop(c: dict[str, Any], code: int) -> dict[str, Any]:
    last = {"terminated": _done(c, code)["state"]["terminated"]}
    return st.waiting(c, "CrashLoopBackOff", 1, last)


@pytest.mark.parametrize("policy,statuses,inits,expected", [
    ("Always", [st.waiting(C, "PodInitializing", 0)], [_run(I1)], "Pending"),
    ("Always", [st.waiting(C, "PodInitializing", 0)], [_done(I1, 0, True)], "Pending"),
    ("Always", [_run()], [_done(I1, 0, True)], "Running"),
    ("Never", [st.waiting(C, "PodInitializing", 0)], [_done(I1, 1, True)], "Failed"),
    ("OnFailure", [st.waiting(C, "PodInitializing", 0)], [_crashloop(I1, 1)], "Pending"),
    ("Never", [_done(C, 0)], [_done(I1, 0, True)], "Succeeded"),
    ("Always", [_crashloop(C, 1)], [], "Running"),
    ("Never", [_done(C, 2)], [], "Failed"),
    ("OnFailure", [_done(C, 0)], [], "Succeeded"),
    ("Always", [], [], "Pending"),
])
def test_pod_phase(policy: str, statuses: list[dict[str, Any]], inits: list[dict[str, Any]], expected: str) -> None:
    assert st.pod_phase(policy, statuses, inits) == expected


def test_pod_phase_counts_init_containers_without_status_as_pending() -> None:
    assert st.pod_phase("Always", [_run()], [_done(I1, 0, True)], init_total=2) == "Pending"


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"restartPolicy": "Always", "containers": [C], **spec},
            "status": {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": T0},
                                      {"type": "DisruptionTarget", "status": "True", "lastTransitionTime": T0}]}}


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", "")) for c in status["conditions"]}


def test_initializing_pod() -> None:
    pod = _pod(initContainers=[I1, I2])
    status = st.build_status(pod, [st.waiting(C, "PodInitializing", 0)], "10.0.0.1", T0,
                             [_done(I1, 0, init=True), _run(I2, ready=False)])
    conditions = _conditions(status)
    assert status["phase"] == "Pending"
    assert conditions["Initialized"] == ("False", "ContainersNotInitialized",
                                         "containers with incomplete status: [init-b]")
    assert conditions["Ready"] == ("False", "ContainersNotReady", "containers with unready status: [main]")
    assert conditions["DisruptionTarget"][0] == "True"  # not the kubelet's: kept
    assert [s["name"] for s in status["initContainerStatuses"]] == ["init-a", "init-b"]
    assert status["initContainerStatuses"][0]["ready"] is True


def test_initialized_and_ready() -> None:
    pod = _pod(initContainers=[I1])
    status = st.build_status(pod, [_run()], "10.0.0.1", T0, [_done(I1, 0, init=True)])
    conditions = _conditions(status)
    assert status["phase"] == "Running"
    assert conditions["Initialized"][0] == conditions["Ready"][0] == conditions["ContainersReady"][0] == "True"
    assert [c["type"] for c in status["conditions"]] == ["DisruptionTarget", "Initialized", "Ready",
                                                         "ContainersReady", "PodScheduled"]


def test_ephemeral_containers_are_reported_apart_and_count_for_nothing() -> None:
    """A debugger that failed leaves the pod Running and Ready; its status is never ready and has no ``started``."""
    debuggers = [st.ephemeral(_done({"name": "z-dbg", "image": "busybox"}, 1)), st.ephemeral(_run({"name": "a-dbg"}))]
    status = st.build_status(_pod(), [_run()], "10.0.0.1", T0, ephemeral_statuses=debuggers)
    assert status["phase"] == "Running" and _conditions(status)["Ready"][0] == "True"
    assert [s["name"] for s in status["ephemeralContainerStatuses"]] == ["a-dbg", "z-dbg"]
    assert all(s["ready"] is False and "started" not in s for s in status["ephemeralContainerStatuses"])
    assert "ephemeralContainerStatuses" not in st.build_status(_pod(), [_run()], "10.0.0.1", T0)


def test_readiness_and_startup_drive_ready() -> None:
    other = {"name": "a-side", "image": "busybox"}
    pod = _pod(containers=[C, other])
    statuses = [_run(ready=False), _run(other, started=False)]
    status = st.build_status(pod, statuses, "10.0.0.1", T0)
    assert [s["name"] for s in status["containerStatuses"]] == ["a-side", "main"]
    assert status["containerStatuses"][0]["started"] is False and status["containerStatuses"][0]["ready"] is False
    assert _conditions(status)["ContainersReady"] == ("False", "ContainersNotReady",
                                                      "containers with unready status: [main a-side]")


def test_readiness_gates() -> None:
    pod = _pod(readinessGates=[{"conditionType": "example.com/lb"}])
    message = 'corresponding condition of pod readiness gate "example.com/lb" does not exist.'
    assert _conditions(st.build_status(pod, [_run()], "h", T0))["Ready"] == ("False", "ReadinessGatesNotReady", message)
    pod["status"]["conditions"].append({"type": "example.com/lb", "status": "True"})
    assert _conditions(st.build_status(pod, [_run()], "h", T0))["Ready"][0] == "True"


def test_completed_and_failed_reasons() -> None:
    pod = _pod(restartPolicy="Never")
    assert _conditions(st.build_status(pod, [_done(C, 0)], "h", T0))["Ready"][1] == "PodCompleted"
    assert _conditions(st.build_status(pod, [_done(C, 0)], "h", T0))["Initialized"][1] == "PodCompleted"
    assert _conditions(st.build_status(pod, [_done(C, 1)], "h", T0))["ContainersReady"][1] == "PodFailed"


def test_container_id_follows_the_instance() -> None:
    cid = "process://abc"
    assert st.waiting(C, "ContainerCreating", 0)["containerID"] == ""
    assert _run(container_id=cid)["containerID"] == cid
    done = st.terminated(C, 1, T0, T0, 0, container_id=cid)
    assert done["containerID"] == cid and done["state"]["terminated"]["containerID"] == cid
    # Waiting to restart: still the last instance's, as kubelet shows it during CrashLoopBackOff.
    assert st.waiting(C, "CrashLoopBackOff", 1, {"terminated": done["state"]["terminated"]})["containerID"] == cid
