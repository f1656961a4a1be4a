"""DaemonSets (apps/v1): one pod per eligible node, kept by the daemonset controller.

What kube-apiserver does, and where:

* ``SetDefaults_DaemonSet``: ``updateStrategy`` RollingUpdate with ``maxUnavailable: 1`` and ``maxSurge: 0``,
  ``revisionHistoryLimit: 10``, plus the template's PodSpec defaults;
* the template generation: apps/v1 carries it as the ``deprecated.daemonset.template.generation`` annotation,
  1 on create and +1 on every template change (a client's value is ignored); the controller puts it on pods as
  ``pod-template-generation``.  ``metadata.generation`` bumps on any spec change;
* ``ValidateDaemonSetSpec``: the apps/v1 selector rules (required, non-empty, selects the template, immutable),
  restartPolicy Always, no activeDeadlineSeconds, and ``ValidateDaemonSetUpdateStrategy``: RollingUpdate or
  OnDelete; for RollingUpdate maxUnavailable and maxSurge are non-negative ints or percents ≤ 100%, and exactly
  one of them is non-zero;
* ``kubectl get ds`` prints NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE (``-o wide`` adds
  CONTAINERS IMAGES SELECTOR).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    Raw,
    go_int_or_string,
    go_quote,
    int_or_percent_value,
    invalid,
    not_supported,
    required,
    validate_int_or_percent,
    validate_nonnegative,
    validate_not_decremented,
    validate_not_more_than_100_percent,
)
from apiserver.registry import selectors
from apiserver.registry.podspec import default_pod_template
from apiserver.registry.qos import reject_unparsable, resource_lists
from apiserver.registry.replicasets import validate_selector_and_template, validate_selector_unchanged
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import container_cells, format_labels, since, template_columns

TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
DEFAULT_REVISION_HISTORY_LIMIT = 10
UPDATE_STRATEGY_TYPES = ("RollingUpdate", "OnDelete")
# Written by Go even when zero (the fields are not omitempty).
ALWAYS_PRESENT_STATUS = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")
STATUS_COUNTS = (*ALWAYS_PRESENT_STATUS, "observedGeneration", "updatedNumberScheduled", "numberAvailable",
                 "numberUnavailable", "collisionCount")


def template_generation(obj: Mapping[str, Any]) -> int:
    """The template generation a DaemonSet carries in its annotation (0 when missing or unparsable)."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    try:
        return int(value)  # type: ignore[arg-type]  # None and garbage alike: the except below
    except (TypeError, ValueError):
        return 0


def _set_template_generation(obj: Object, generation: int) -> None:
    annotations = obj.setdefault("metadata", {}).get("annotations") or {}
    annotations[TEMPLATE_GENERATION_ANNOTATION] = str(generation)
    obj["metadata"]["annotations"] = annotations


class DaemonSetStrategy(Strategy):
    group = "apps"
    kind = "DaemonSet"
    resource = "daemonsets"
    singular = "daemonset"
    short_names = ("ds",)
    categories = ("all",)
    subresources = ("status",)
    status_resets = ("labels",)  # a status write keeps the labels (its status strategy)

    def prepare_for_create(self, obj: Object) -> None:
        self.default(obj)
        _set_template_generation(obj, 1)
        obj["status"] = {field: 0 for field in ALWAYS_PRESENT_STATUS}

    def default(self, obj: Object) -> None:
        """``SetDefaults_DaemonSet`` plus the template's PodSpec defaults."""
        spec = obj.setdefault("spec", {})
        template = spec.setdefault("template", {})
        reject_unparsable(resource_lists(template.get("spec") or {}), self.kind, self.version)
        strategy = spec.get("updateStrategy") or {}
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.get("rollingUpdate") or {}
            if rolling.get("maxUnavailable") is None:
                rolling["maxUnavailable"] = 1
            if rolling.get("maxSurge") is None:
                rolling["maxSurge"] = 0
            strategy["rollingUpdate"] = rolling
        spec["updateStrategy"] = strategy
        if spec.get("revisionHistoryLimit") is None:
            spec["revisionHistoryLimit"] = DEFAULT_REVISION_HISTORY_LIMIT
        default_pod_template(template)

    def validate(self, obj: Object) -> list[Cause]:
        """``ValidateDaemonSetSpec``."""
        spec = obj.get("spec") or {}
        causes = validate_selector_and_template(spec, workload="daemonset", owner="DaemonSet")
        causes.extend(validate_nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds"))
        causes.extend(_validate_update_strategy(spec.get("updateStrategy") or {}, "spec.updateStrategy"))
        causes.extend(validate_nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit"))
        return causes

    def prepare_for_update(self, new: Object, old: Object) -> None:
        """The template generation is the server's: the old one, +1 when the template changed."""
        self.default(new)
        super().prepare_for_update(new, old)
        generation = template_generation(old)
        if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            generation += 1
        _set_template_generation(new, generation)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        return self.validate(new) + validate_selector_unchanged(new, old)

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        status = new.get("status") or {}
        causes: list[Cause] = []
        for key in STATUS_COUNTS:
            causes.extend(validate_nonnegative(status.get(key), f"status.{key}"))
        old_count = (old.get("status") or {}).get("collisionCount")
        causes.extend(validate_not_decremented(status.get("collisionCount"), old_count, "status.collisionCount"))
        return causes

    def columns(self) -> list[TableColumn]:
        return [
            NAME_COLUMN,
            TableColumn("Desired", type="integer", description="The total number of nodes that should be running "
                        "the daemon pod (including nodes correctly running the daemon pod)."),
            TableColumn("Current", type="integer", description="The number of nodes that are running at least 1 "
                        "daemon pod and are supposed to run the daemon pod."),
            TableColumn("Ready", type="integer", description="numberReady is the number of nodes that should be "
                        "running the daemon pod and have one or more of the daemon pod running with a Ready "
                        "Condition."),
            TableColumn("Up-to-date", type="integer", description="The total number of nodes that are running "
                        "updated daemon pod"),
            TableColumn("Available", type="integer", description="The number of nodes that should be running the "
                        "daemon pod and have one or more of the daemon pod running and available (ready for at "
                        "least spec.minReadySeconds)"),
            TableColumn("Node Selector", description="NodeSelector is a selector which must be true for the pod to "
                        "fit on a node. Selector which must match a node's labels for the pod to be scheduled on "
                        "that node."),
            AGE_COLUMN,
            *template_columns("A label query over pods that are managed by the daemon set. Must match in order to "
                              "be controlled. It must match the pod template's labels."),
        ]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        pod_spec = (spec.get("template") or {}).get("spec") or {}
        names, images = container_cells(pod_spec.get("containers"))
        counts = [int(status.get(k) or 0) for k in ("desiredNumberScheduled", "currentNumberScheduled",
                                                    "numberReady", "updatedNumberScheduled", "numberAvailable")]
        return [metadata.get("name", ""), *counts, format_labels(pod_spec.get("nodeSelector")),
                since(metadata.get("creationTimestamp")), names, images,
                selectors.format_label_selector(spec.get("selector"))]


def _validate_update_strategy(strategy: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidateDaemonSetUpdateStrategy``."""
    kind = strategy.get("type") or ""
    if kind == "OnDelete":
        return []
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if rolling is None:
            return [required(f"{path}.rollingUpdate")]
        return _validate_rolling_update(rolling, f"{path}.rollingUpdate")
    rendered = f"apps.DaemonSetUpdateStrategy{{Type:{go_quote(kind)}, " \
               "RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}"
    return [not_supported(path, Raw(rendered), UPDATE_STRATEGY_TYPES)]


def _validate_rolling_update(rolling: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidateRollingUpdateDaemonSet``: exactly one of maxUnavailable and maxSurge is non-zero."""
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    causes = validate_int_or_percent(unavailable, f"{path}.maxUnavailable")
    causes.extend(validate_int_or_percent(surge, f"{path}.maxSurge"))
    for value, field in ((unavailable, "maxUnavailable"), (surge, "maxSurge")):
        causes.extend(validate_not_more_than_100_percent(value, f"{path}.{field}"))
    has_unavailable, has_surge = int_or_percent_value(unavailable) != 0, int_or_percent_value(surge) != 0
    if has_unavailable and has_surge:
        causes.append(invalid(f"{path}.maxSurge", Raw(go_int_or_string(surge)),
                              "may not be set when maxUnavailable is non-zero"))
    elif not has_unavailable and not has_surge:
        causes.append(required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    return causes
