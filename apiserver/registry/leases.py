"""Leases (coordination.k8s.io/v1): leader election and node heartbeats. Only the spec's numbers are checked."""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import invalid
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since


class LeaseStrategy(Strategy):
    group = "coordination.k8s.io"
    kind = "Lease"
    resource = "leases"
    singular = "lease"
    bumps_generation = False

    def validate(self, obj: Object) -> list[Cause]:
        """``ValidateLeaseSpec``: a positive duration, a non-negative transition count."""
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        duration = spec.get("leaseDurationSeconds")
        if duration is not None and duration <= 0:
            causes.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
        transitions = spec.get("leaseTransitions")
        if transitions is not None and transitions < 0:
            causes.append(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("Holder", description="holderIdentity contains the identity of the holder "
                                                               "of a current lease."), AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), (obj.get("spec") or {}).get("holderIdentity") or "",
                since(metadata.get("creationTimestamp"))]
