"""ComponentStatuses (core/v1, ``cs``, deprecated since v1.19): the health of the scheduler, the controller-manager
and each etcd member, probed when read (``pkg/registry/core/componentstatus``).

Each object is ``{"metadata": {"name": …}, "conditions": [{"type": "Healthy", "status": "True"|"False",
"message": …, "error": …}]}``: a component that answers 200 is Healthy with the body as its message (``ok``);
otherwise Unhealthy with the error, as kube words a failed probe (``Get "http://127.0.0.1:10259/healthz": dial
tcp 127.0.0.1:10259: connect: connection refused``). Every read warns ``v1 ComponentStatus is deprecated in
v1.19+`` as kube-apiserver does. ``kubectl get cs`` prints NAME, STATUS, MESSAGE, ERROR.

The probes themselves (``Probe``: a name and an async check) are given by the apiserver (``apiserver.components``),
which knows the components' health URLs and the etcd members.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from apiserver.registry.readonly import ReadOnlyStrategy
from apiserver.registry.strategy import NAME_COLUMN, Object, TableColumn


@dataclass(frozen=True)
class ProbeResult:
    healthy: bool
    message: str = ""
    error: str = ""


@dataclass(frozen=True)
class Probe:
    name: str
    check: Callable[[], Awaitable[ProbeResult]]


def component_status(name: str, result: ProbeResult) -> Object:
    condition = {"type": "Healthy", "status": "True" if result.healthy else "False"}
    if result.message:
        condition["message"] = result.message
    if result.error:
        condition["error"] = result.error
    return {"metadata": {"name": name}, "conditions": [condition]}


class ComponentStatusStrategy(ReadOnlyStrategy):
    kind = "ComponentStatus"
    resource = "componentstatuses"
    singular = "componentstatus"
    namespaced = False
    short_names = ("cs",)
    deprecation_warning = "v1 ComponentStatus is deprecated in v1.19+"

    def __init__(self, probes: Sequence[Probe] = ()) -> None:
        self.probes = list(probes)

    async def items(self) -> list[Object]:
        results = await asyncio.gather(*(probe.check() for probe in self.probes))
        return sorted((component_status(p.name, r) for p, r in zip(self.probes, results, strict=False)),
                      key=lambda obj: obj["metadata"]["name"])

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Status", description="Status of the component conditions"),
                TableColumn("Message", description="Message of the component conditions"),
                TableColumn("Error", description="Error of the component conditions")]

    def row(self, obj: Object) -> list[Any]:
        """``printComponentStatus``: the Healthy condition, Unknown without one."""
        status, message, error = "Unknown", "", ""
        for condition in obj.get("conditions") or []:
            if condition.get("type") == "Healthy":
                status = "Healthy" if condition.get("status") == "True" else "Unhealthy"
                message, error = condition.get("message") or "", condition.get("error") or ""
                break
        return [(obj.get("metadata") or {}).get("name", ""), status, message, error]
