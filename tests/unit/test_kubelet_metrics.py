"""The kubelet's container_state label, from the containerStatus a pod worker reports."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet.metrics import container_state


@pytest.mark.parametrize(("status", "state"), [
    ({"state": {"running": {"startedAt": "2026-12-06T03:00:00Z"}}}, "running"),
    ({"state": {"terminated": {"exitCode": 0}}}, "exited"),
    ({"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": {"terminated": {"exitCode": 1}}}, "exited"),
    ({"state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}}, None),  # no container yet
    ({"state": {}}, "unknown"),
])
def test_container_state_as_the_runtime_sees_it(status: dict[str, Any], state: str | None) -> None:
    assert container_state(status) == state
