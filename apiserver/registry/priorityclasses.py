"""PriorityClasses (scheduling.k8s.io/v1): the names pods give ``priorityClassName``, mapped to integer priorities.

What kube-apiserver does, and where:

* defaulting: ``preemptionPolicy`` is ``PreemptLowerPriority`` when unset;
* ``ValidatePriorityClass``: a name with the ``system-`` prefix must be one of the built-in classes with its value
  and globalDefault (``IsKnownSystemPriorityClass``); any other class's value is at most 1000000000
  (``HighestUserDefinablePriority``); ``value`` and ``preemptionPolicy`` never change in an update;
* the built-in classes are created by a post-start hook (``SYSTEM_PRIORITY_CLASSES``, bootstrap objects here) and
  cannot be deleted (``this is a system priority class and cannot be deleted``);
* at most one ``globalDefault`` is the Priority admission plugin's rule (``apiserver.admission.priority``);
* ``kubectl get pc`` prints NAME, VALUE, GLOBAL-DEFAULT, AGE, PREEMPTIONPOLICY.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import FIELD_IMMUTABLE_ERROR_MSG, forbidden, invalid, not_supported
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

SYSTEM_PREFIX = "system-"
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"


def _system_class(name: str, value: int, description: str) -> Object:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "description": description, "preemptionPolicy": DEFAULT_PREEMPTION_POLICY}


# ``schedulingapiv1.SystemPriorityClasses()``: created at start-up, never deletable.
SYSTEM_PRIORITY_CLASSES: tuple[Object, ...] = (
    _system_class("system-node-critical", 2_000_001_000,
                  "Used for system critical pods that must not be moved from their current node."),
    _system_class("system-cluster-critical", 2_000_000_000,
                  "Used for system critical pods that must run in the cluster, but can be moved to another node "
                  "if necessary."),
)
SYSTEM_VALUES = {pc["metadata"]["name"]: pc["value"] for pc in SYSTEM_PRIORITY_CLASSES}


def known_system_class_problem(name: str, value: Any, global_default: bool) -> str | None:
    """``IsKnownSystemPriorityClass``: why ``name`` is not a built-in class as it is declared, or None."""
    if name not in SYSTEM_VALUES:
        return f"{name} is not a known system priority class"
    if value != SYSTEM_VALUES[name]:
        return f"value of {name} PriorityClass must be {SYSTEM_VALUES[name]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


class PriorityClassStrategy(Strategy):
    group = "scheduling.k8s.io"
    kind = "PriorityClass"
    resource = "priorityclasses"
    singular = "priorityclass"
    namespaced = False
    short_names = ("pc",)
    bumps_generation = False

    def prepare_for_create(self, obj: Object) -> None:
        if obj.get("preemptionPolicy") is None:
            obj["preemptionPolicy"] = DEFAULT_PREEMPTION_POLICY

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.prepare_for_create(new)

    def validate(self, obj: Object) -> list[Cause]:
        name = (obj.get("metadata") or {}).get("name") or ""
        value = obj.get("value") or 0
        causes: list[Cause] = []
        if name.startswith(SYSTEM_PREFIX):
            problem = known_system_class_problem(name, value, bool(obj.get("globalDefault")))
            if problem is not None:
                causes.append(forbidden("metadata.name", f"priority class names with '{SYSTEM_PREFIX}' prefix are "
                                                         f"reserved for system use only. error: {problem}"))
        elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
            causes.append(forbidden("value", "maximum allowed value of a user defined priority is "
                                             f"{HIGHEST_USER_DEFINABLE_PRIORITY}"))
        policy = obj.get("preemptionPolicy")
        if policy is not None and policy not in PREEMPTION_POLICIES:
            causes.append(not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
        return causes

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        """``ValidatePriorityClassUpdate``: only the metadata, description and globalDefault may change."""
        causes: list[Cause] = []
        if (new.get("value") or 0) != (old.get("value") or 0):
            causes.append(forbidden("value", "may not be changed in an update."))
        if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
            causes.append(invalid("preemptionPolicy", new.get("preemptionPolicy"), FIELD_IMMUTABLE_ERROR_MSG))
        return causes

    def forbid_delete(self, name: str) -> str | None:
        return "this is a system priority class and cannot be deleted" if name in SYSTEM_VALUES else None

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Value", type="integer", description="value represents the integer value of this "
                                                                 "priority class. This is the actual priority that "
                                                                 "pods receive when they have the name of this "
                                                                 "class in their pod spec."),
                TableColumn("Global-Default", type="boolean",
                            description="globalDefault specifies whether this PriorityClass should be considered as "
                                        "the default priority for pods that do not have any priority class."),
                AGE_COLUMN,
                TableColumn("PreemptionPolicy", description="preemptionPolicy is the Policy for preempting pods "
                                                            "with lower priority.")]

    def row(self, obj: Object) -> list[Any]:
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), int(obj.get("value") or 0), bool(obj.get("globalDefault")),
                since(metadata.get("creationTimestamp")), obj.get("preemptionPolicy") or ""]
