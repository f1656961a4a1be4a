"""What a trace is made of: the evidence gathered about one pod, the steps built from it, and the two readings of
those steps that both the table (``trace``) and the sequence diagram (``tracesvg``) print (the critical path and a
step's latency). Its own module so the diagram, drawn only when asked, does not import the command.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubelab.commands.traceaudit import Write

Object = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Stamp:
    """When a step happened, and the field that says so."""

    at: datetime
    precise: bool  # MicroTime (µs) rather than metav1.Time (whole seconds)
    source: str


@dataclass(frozen=True, slots=True)
class Version:
    """One stored version of an object, replayed from etcd's history."""

    type: str  # ADDED | MODIFIED | DELETED
    rv: int
    obj: Object


@dataclass
class Evidence:
    """Everything the components recorded about one pod; ``build_steps`` reads nothing else."""

    pod: Object
    controllers: list[Object] = field(default_factory=list)  # the pod's controller, its controller, ...
    pod_events: list[Object] = field(default_factory=list)
    owner_events: list[Object] = field(default_factory=list)  # events about controllers[0]
    pod_history: list[Version] | None = None  # None: etcd's history was not available
    root_history: list[Version] | None = None  # of controllers[-1]
    node: Object | None = None
    leases: dict[str, Object | None] = field(default_factory=dict)  # lease name -> lease (None: absent)
    audit_log: str | None = None  # the audit log read (None: none found)
    writes: list[Write] | None = None  # the audited writes in the pod's namespace (None: no audit log)
    deliveries: list[Object] | None = None  # /debug/watches/deliveries items of the pod and its root (None: none)


@dataclass
class Step:
    number: str  # "1".."13"; sub-steps "12a", ...
    actor: str
    what: str
    stamp: Stamp | None = None
    revision: int | None = None
    evidence: str = ""
    observed: bool = True
    applicable: bool = True
    latency: float | None = None  # seconds since the previous step with a time
    latency_precise: bool = False
    included_in: str | None = None  # no record of its own: its time is within this later step's latency
    audit_id: str | None = None  # the audited request whose stages time this step


def critical_path(steps: list[Step]) -> Object | None:
    """The pod's critical path: from the first timed step of the flow (2 onwards) to the last, with its total."""
    timed = [s for s in steps if s.stamp is not None and s.number != "1"]
    if len(timed) < 2:
        return None
    first, last = timed[0], timed[-1]
    total = (last.stamp.at - first.stamp.at).total_seconds() if first.stamp and last.stamp else 0.0
    exact = all(s.stamp is not None and s.stamp.precise for s in timed)
    return {"from": first.number, "to": last.number, "total_ms": round(total * 1000, 3), "exact": exact,
            "hops": [s.number for s in timed[1:]]}


def latency_text(step: Step) -> str:
    """A step's latency as the table prints it (``+12.3ms``, ``+1.250s``, ``~+1s``; ``-`` without one)."""
    if step.latency is None:
        return f"(in {step.included_in})" if step.included_in else "-"
    if step.latency_precise:
        return f"{step.latency * 1000:+.1f}ms" if abs(step.latency) < 1 else f"{step.latency:+.3f}s"
    return f"~{int(round(step.latency)):+d}s"
