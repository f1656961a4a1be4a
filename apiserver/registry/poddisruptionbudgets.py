"""PodDisruptionBudgets (policy/v1): how many of an application's pods voluntary disruptions (evictions) may take.

What kube-apiserver does, and where:

* ``PrepareForCreate`` clears ``status`` and sets generation 1; an update keeps ``status`` (it has its own
  subresource, written by the disruption controller and by evictions) and bumps the generation when ``spec``
  changes (policy/v1's spec is mutable);
* ``ValidatePodDisruptionBudgetSpec``: ``minAvailable`` and ``maxUnavailable`` not both set, each a non-negative
  int or a percent of at most 100%, a valid label selector, ``unhealthyPodEvictionPolicy`` one of
  ``IfHealthyBudget`` / ``AlwaysAllow`` (unset behaves as ``IfHealthyBudget``);
* ``ValidatePodDisruptionBudgetStatusUpdate``: the counts are non-negative;
* ``kubectl get pdb`` prints NAME, MIN AVAILABLE, MAX UNAVAILABLE (``N/A`` for the unset one), ALLOWED
  DISRUPTIONS and AGE.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    Raw,
    go_pointer,
    invalid,
    not_supported,
    validate_int_or_percent,
    validate_label_selector,
    validate_nonnegative,
    validate_not_more_than_100_percent,
)
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")
STATUS_COUNTS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")


def validate_pdb_spec(spec: Mapping[str, Any], path: str = "spec") -> list[Cause]:
    """``ValidatePodDisruptionBudgetSpec``."""
    causes: list[Cause] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        causes.append(invalid(path, Raw(_go_spec(spec)), "minAvailable and maxUnavailable cannot be both set"))
    for field in ("minAvailable", "maxUnavailable"):
        value = spec.get(field)
        if value is not None:
            causes.extend(validate_int_or_percent(value, f"{path}.{field}"))
            causes.extend(validate_not_more_than_100_percent(value, f"{path}.{field}"))
    causes.extend(validate_label_selector(spec.get("selector"), f"{path}.selector"))
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        causes.append(not_supported(f"{path}.unhealthyPodEvictionPolicy", policy, UNHEALTHY_POD_EVICTION_POLICIES))
    return causes


def _go_spec(spec: Mapping[str, Any]) -> str:
    """``%#v`` of the spec, as the Invalid cause prints it (pointers shown as set or nil, never as addresses)."""
    pointer = go_pointer
    return ("policy.PodDisruptionBudgetSpec{"
            f"MinAvailable:{pointer('intstr.IntOrString', spec.get('minAvailable'))}, "
            f"Selector:{pointer('v1.LabelSelector', spec.get('selector'))}, "
            f"MaxUnavailable:{pointer('intstr.IntOrString', spec.get('maxUnavailable'))}, "
            "UnhealthyPodEvictionPolicy:"
            f"{pointer('policy.UnhealthyPodEvictionPolicyType', spec.get('unhealthyPodEvictionPolicy'))}}}")


def empty_status() -> Object:
    """A new budget's status: every count 0 (they are not omitempty in policy/v1)."""
    return {key: 0 for key in STATUS_COUNTS}


class PodDisruptionBudgetStrategy(Strategy):
    group = "policy"
    kind = "PodDisruptionBudget"
    resource = "poddisruptionbudgets"
    singular = "poddisruptionbudget"
    short_names = ("pdb",)
    subresources = ("status",)

    def prepare_for_create(self, obj: Object) -> None:
        obj["status"] = empty_status()

    def validate(self, obj: Object) -> list[Cause]:
        return validate_pdb_spec(obj.get("spec") or {})

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        status = new.get("status") or {}
        return [cause for key in STATUS_COUNTS for cause in validate_nonnegative(status.get(key), f"status.{key}")]

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Min Available", description="The minimum number of pods that must be available."),
                TableColumn("Max Unavailable", description="The maximum number of pods that may be unavailable."),
                TableColumn("Allowed Disruptions", type="integer",
                            description="Calculated number of pods that may be disrupted at this time."),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        cells = [str(spec[f]) if spec.get(f) is not None else "N/A" for f in ("minAvailable", "maxUnavailable")]
        return [metadata.get("name", ""), *cells, int((obj.get("status") or {}).get("disruptionsAllowed") or 0),
                since(metadata.get("creationTimestamp"))]
