"""PriorityLevelConfigurations (flowcontrol.apiserver.k8s.io/v1): the concurrency shares and queues of an API
Priority and Fairness level.

Defaults (``SetDefaults_…`` of v1): a Limited level's ``nominalConcurrencyShares`` 30 and ``lendablePercent`` 0,
a Queue response's ``queues`` 64, ``handSize`` 8, ``queueLengthLimit`` 50; an Exempt level's shares and percent 0.
Validation: type Exempt or Limited with only its own section, shares and percents in range, ``handSize`` at most
``queues``. kubelab does not throttle requests by them. ``kubectl get prioritylevelconfigurations`` prints NAME,
TYPE, NOMINALCONCURRENCYSHARES, QUEUES, HANDSIZE, QUEUELENGTHLIMIT, AGE.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import invalid, not_supported, required
from apiserver.registry.flowschemas import GROUP
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

TYPES = ("Exempt", "Limited")
RESPONSE_TYPES = ("Queue", "Reject")
QUEUING_DEFAULTS = {"queues": 64, "handSize": 8, "queueLengthLimit": 50}


def default_spec(spec: Object) -> None:
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if limited is not None:
        limited.setdefault("nominalConcurrencyShares", 30)
        limited.setdefault("lendablePercent", 0)
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if queuing is not None:
            for field, value in QUEUING_DEFAULTS.items():
                if not queuing.get(field):
                    queuing[field] = value
    if exempt is not None:
        exempt.setdefault("nominalConcurrencyShares", 0)
        exempt.setdefault("lendablePercent", 0)


class PriorityLevelConfigurationStrategy(Strategy):
    group = GROUP
    kind = "PriorityLevelConfiguration"
    resource = "prioritylevelconfigurations"
    singular = "prioritylevelconfiguration"
    namespaced = False
    subresources = ("status",)

    def prepare_for_create(self, obj: Object) -> None:
        obj["status"] = {}
        default_spec(obj.setdefault("spec", {}))

    def prepare_for_update(self, new: Object, old: Object) -> None:
        default_spec(new.setdefault("spec", {}))
        super().prepare_for_update(new, old)

    def validate(self, obj: Object) -> list[Cause]:
        return validate_priority_level_spec(obj.get("spec") or {}, "spec")

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Type", description="type indicates whether this priority level is subject to "
                                                "limitation on request execution."),
                TableColumn("NominalConcurrencyShares", description="nominalConcurrencyShares (NCS) contributes to "
                                                                    "the computation of the NominalConcurrencyLimit "
                                                                    "(NominalCL) of this level."),
                TableColumn("Queues", description="queues is the number of queues for this priority level."),
                TableColumn("HandSize", description="handSize is a small positive number that configures the "
                                                    "shuffle sharding of requests into queues."),
                TableColumn("QueueLengthLimit", description="queueLengthLimit is the maximum number of requests "
                                                            "allowed to be waiting in a given queue of this "
                                                            "priority level at a time."),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        """``printPriorityLevelConfiguration``: ``<none>`` for what an Exempt or Reject level lacks."""
        metadata, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        shares: Any = "<none>"
        queues: Any = "<none>"
        hand: Any = "<none>"
        length: Any = "<none>"
        limited = spec.get("limited")
        if limited is not None:
            shares = int(limited.get("nominalConcurrencyShares") or 0)
            queuing = (limited.get("limitResponse") or {}).get("queuing")
            if queuing is not None:
                queues, hand, length = (int(queuing.get(f) or 0) for f in ("queues", "handSize", "queueLengthLimit"))
        return [metadata.get("name", ""), spec.get("type") or "", shares, queues, hand, length,
                since(metadata.get("creationTimestamp"))]


def validate_priority_level_spec(spec: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    level_type = spec.get("type") or ""
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if level_type not in TYPES:
        return [not_supported(f"{path}.type", level_type, TYPES)]
    if level_type == "Exempt" and limited is not None:
        causes.append(invalid(f"{path}.limited", "", "must be nil if the type is not Limited"))
    if level_type == "Limited":
        if exempt is not None:
            causes.append(invalid(f"{path}.exempt", "", "must be nil if the type is Limited"))
        if limited is None:
            return causes + [required(f"{path}.limited", "must not be empty when type is Limited")]
        causes.extend(_validate_limited(limited, f"{path}.limited"))
    return causes


def _validate_limited(limited: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    shares = limited.get("nominalConcurrencyShares") or 0
    if shares < 0:
        causes.append(invalid(f"{path}.nominalConcurrencyShares", shares, "must be a non-negative integer"))
    percent = limited.get("lendablePercent") or 0
    if not 0 <= percent <= 100:
        causes.append(invalid(f"{path}.lendablePercent", percent, "must be between 0 and 100, inclusive"))
    response = limited.get("limitResponse") or {}
    response_type = response.get("type") or ""
    if response_type not in RESPONSE_TYPES:
        return causes + [not_supported(f"{path}.limitResponse.type", response_type, RESPONSE_TYPES)]
    queuing = response.get("queuing")
    if response_type == "Reject" and queuing is not None:
        causes.append(invalid(f"{path}.limitResponse.queuing", "", "must be nil if limited.limitResponse.type is "
                                                                   "not Limited"))
    if response_type == "Queue":
        if queuing is None:
            return causes + [required(f"{path}.limitResponse.queuing", "must not be empty if "
                                                                       "limited.limitResponse.type is Limited")]
        queues, hand = queuing.get("queues") or 0, queuing.get("handSize") or 0
        if queues <= 0:
            causes.append(invalid(f"{path}.limitResponse.queuing.queues", queues, "must be positive"))
        if hand <= 0:
            causes.append(invalid(f"{path}.limitResponse.queuing.handSize", hand, "must be positive"))
        elif hand > queues > 0:
            causes.append(invalid(f"{path}.limitResponse.queuing.handSize", hand,
                                  f"should not be greater than queues ({queues})"))
        if (queuing.get("queueLengthLimit") or 0) <= 0:
            causes.append(invalid(f"{path}.limitResponse.queuing.queueLengthLimit",
                                  queuing.get("queueLengthLimit") or 0, "must be positive"))
    return causes
