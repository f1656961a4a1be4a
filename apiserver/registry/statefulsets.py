"""StatefulSets (apps/v1): pods with stable ordinal names and storage, kept by the statefulset controller.

What kube-apiserver 1.32 does, and where:

* ``SetDefaults_StatefulSet``: ``podManagementPolicy`` OrderedReady, ``updateStrategy`` RollingUpdate with
  ``rollingUpdate.partition: 0`` (an explicit ``RollingUpdate`` without ``rollingUpdate`` stays without one),
  ``persistentVolumeClaimRetentionPolicy`` Retain/Retain (StatefulSetAutoDeletePVC is GA in 1.32),
  ``replicas: 1``, ``revisionHistoryLimit: 10``; the template's PodSpec defaults; each ``volumeClaimTemplates``
  entry is a whole PersistentVolumeClaim with ``apiVersion``/``kind``, ``volumeMode: Filesystem`` and
  ``status.phase: Pending``.  ``rollingUpdate.maxUnavailable`` belongs to the MaxUnavailableStatefulSet gate,
  alpha (off) in 1.32, so it is dropped as kube's ``dropStatefulSetDisabledFields`` does unless already stored;
* ``ValidateStatefulSetSpec``: the policy and strategy types, the retention policy, non-negative counts, the
  apps/v1 selector rules (required, non-empty, selects the template); the template is checked for labels,
  annotations, ``restartPolicy: Always`` and no ``activeDeadlineSeconds`` only — kube does not validate a
  StatefulSet template's PodSpec (its volumes name claims that only the controller adds).  The name is a DNS
  label (it becomes the pods' hostname prefix);
* ``ValidateStatefulSetUpdate``: only replicas, ordinals, template, updateStrategy,
  persistentVolumeClaimRetentionPolicy and minReadySeconds may change;
* ``kubectl get sts`` prints NAME READY AGE (``-o wide`` adds CONTAINERS IMAGES).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import (
    Raw,
    forbidden,
    go_quote,
    go_string_map,
    invalid,
    name_is_dns_label,
    not_supported,
    required,
    validate_annotations,
    validate_label_selector,
    validate_labels,
    validate_nonnegative,
    validate_not_decremented,
)
from apiserver.registry import selectors
from apiserver.registry.podspec import default_pod_template
from apiserver.registry.qos import reject_unparsable, resource_lists
from apiserver.registry.replicasets import validate_selector_unchanged
from apiserver.registry.scale import ScalableStrategy
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, TableColumn
from apiserver.registry.tables import container_cells, since

POD_MANAGEMENT_POLICIES = ("OrderedReady", "Parallel")
UPDATE_STRATEGY_TYPES = ("RollingUpdate", "OnDelete")
RETENTION_POLICY_TYPES = ("Retain", "Delete")
DEFAULT_REVISION_HISTORY_LIMIT = 10
# Fields an update may change (``ValidateStatefulSetUpdate``); the rest of the spec is immutable.
MUTABLE_SPEC_FIELDS = ("replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
                       "minReadySeconds")
IMMUTABLE_SPEC_MESSAGE = ("updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                          "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
                          "forbidden")
# Written by Go even when zero (not omitempty).
ALWAYS_PRESENT_STATUS = ("replicas", "availableReplicas")
STATUS_COUNTS = ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")


class StatefulSetStrategy(ScalableStrategy):
    group = "apps"
    kind = "StatefulSet"
    resource = "statefulsets"
    singular = "statefulset"
    short_names = ("sts",)
    categories = ("all",)
    subresources = ("status", "scale")
    status_resets = ("labels",)  # a status write keeps the labels (its status strategy)

    def name_validator(self, name: str) -> list[str]:
        return name_is_dns_label(name)

    def prepare_for_create(self, obj: Object) -> None:
        self.default(obj)
        _drop_max_unavailable(obj, None)
        obj["status"] = {field: 0 for field in ALWAYS_PRESENT_STATUS}

    def default(self, obj: Object) -> None:
        """``SetDefaults_StatefulSet`` plus the template's and the claim templates' defaults."""
        spec = obj.setdefault("spec", {})
        template = spec.setdefault("template", {})
        reject_unparsable(resource_lists(template.get("spec") or {}), self.kind, self.version)
        if not spec.get("podManagementPolicy"):
            spec["podManagementPolicy"] = "OrderedReady"
        strategy = spec.get("updateStrategy") or {}
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            if strategy.get("rollingUpdate") is None:
                strategy["rollingUpdate"] = {}
        rolling = strategy.get("rollingUpdate")
        if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict) and rolling.get("partition") is None:
            rolling["partition"] = 0
        spec["updateStrategy"] = strategy
        policy = spec.get("persistentVolumeClaimRetentionPolicy") or {}
        for when in ("whenDeleted", "whenScaled"):
            if not policy.get(when):
                policy[when] = "Retain"
        spec["persistentVolumeClaimRetentionPolicy"] = policy
        if spec.get("replicas") is None:
            spec["replicas"] = 1
        if spec.get("revisionHistoryLimit") is None:
            spec["revisionHistoryLimit"] = DEFAULT_REVISION_HISTORY_LIMIT
        default_pod_template(template)
        for claim in spec.get("volumeClaimTemplates") or []:
            default_claim_template(claim)

    def validate(self, obj: Object) -> list[Cause]:
        """``ValidateStatefulSetSpec``."""
        spec = obj.get("spec") or {}
        causes = _validate_policy(spec.get("podManagementPolicy"))
        causes.extend(_validate_update_strategy(spec.get("updateStrategy") or {}, "spec.updateStrategy"))
        policy = spec.get("persistentVolumeClaimRetentionPolicy")
        if policy is not None:
            for when in ("whenDeleted", "whenScaled"):
                value = policy.get(when) or ""
                if value not in RETENTION_POLICY_TYPES:
                    causes.append(not_supported(f"spec.persistentVolumeClaimRetentionPolicy.{when}", value,
                                                RETENTION_POLICY_TYPES))
        causes.extend(validate_nonnegative(spec.get("replicas"), "spec.replicas"))
        causes.extend(validate_nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds"))
        ordinals = spec.get("ordinals")
        if ordinals is not None:
            causes.extend(validate_nonnegative(ordinals.get("start"), "spec.ordinals.start"))
        causes.extend(_validate_selector_and_template(spec))
        return causes

    def prepare_for_update(self, new: Object, old: Object) -> None:
        self.default(new)
        _drop_max_unavailable(new, old)
        super().prepare_for_update(new, old)

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        """``ValidateStatefulSetUpdate``: the spec checks (not the name again) and the immutable fields."""
        causes = self.validate(new)
        new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
        rest_new = {k: v for k, v in new_spec.items() if k not in MUTABLE_SPEC_FIELDS}
        rest_old = {k: v for k, v in old_spec.items() if k not in MUTABLE_SPEC_FIELDS}
        if rest_new != rest_old:
            if rest_new.get("selector") != rest_old.get("selector"):
                causes.extend(validate_selector_unchanged(new, old))
            causes.append(forbidden("spec", IMMUTABLE_SPEC_MESSAGE))
        return causes

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        """``ValidateStatefulSetStatusUpdate``."""
        status = new.get("status") or {}
        causes: list[Cause] = []
        for key in (*STATUS_COUNTS, "observedGeneration", "collisionCount"):
            causes.extend(validate_nonnegative(status.get(key), f"status.{key}"))
        replicas = int(status.get("replicas") or 0)
        for key in ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"):
            if int(status.get(key) or 0) > replicas:
                causes.append(invalid(f"status.{key}", status.get(key), "cannot be greater than status.replicas"))
        if int(status.get("availableReplicas") or 0) > int(status.get("readyReplicas") or 0):
            causes.append(invalid("status.availableReplicas", status.get("availableReplicas"),
                                  "cannot be greater than status.readyReplicas"))
        old_collisions = (old.get("status") or {}).get("collisionCount")
        causes.extend(validate_not_decremented(status.get("collisionCount"), old_collisions, "status.collisionCount"))
        return causes

    def selector_string(self, obj: Object) -> str:
        return selectors.to_string((obj.get("spec") or {}).get("selector"))

    def columns(self) -> list[TableColumn]:
        return [
            NAME_COLUMN,
            TableColumn("Ready", description="Number of the pod with ready state"),
            AGE_COLUMN,
            TableColumn("Containers", priority=1, description="Names of each container in the template."),
            TableColumn("Images", priority=1, description="Images referenced by each container in the template."),
        ]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        names, images = container_cells(((spec.get("template") or {}).get("spec") or {}).get("containers"))
        ready = f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}"
        return [metadata.get("name", ""), ready, since(metadata.get("creationTimestamp")), names, images]


def default_claim_template(claim: Object) -> None:
    """A claim template as the v1 defaults leave an embedded PersistentVolumeClaim."""
    claim["apiVersion"] = "v1"
    claim["kind"] = "PersistentVolumeClaim"
    claim.setdefault("metadata", {}).setdefault("creationTimestamp", None)
    spec = claim.setdefault("spec", {})
    if not spec.get("volumeMode"):
        spec["volumeMode"] = "Filesystem"
    status = claim.setdefault("status", {})
    if not status.get("phase"):
        status["phase"] = "Pending"


def _drop_max_unavailable(obj: Object, old: Object | None) -> None:
    """MaxUnavailableStatefulSet is off in 1.32: a new ``maxUnavailable`` is dropped unless already in use."""
    rolling = ((obj.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate")
    if not isinstance(rolling, dict) or "maxUnavailable" not in rolling:
        return
    old_rolling = (((old or {}).get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    if old_rolling.get("maxUnavailable") is None:
        del rolling["maxUnavailable"]


def _validate_policy(policy: Any) -> list[Cause]:
    if not policy:
        return [required("spec.podManagementPolicy")]
    if policy not in POD_MANAGEMENT_POLICIES:
        return [invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'")]
    return []


def _go_rolling_update(rolling: Mapping[str, Any] | None) -> str:
    if rolling is None:
        return "(*apps.RollingUpdateStatefulSetStrategy)(nil)"
    return "(*apps.RollingUpdateStatefulSetStrategy)(0xc000000000)"  # Go prints the pointer's address


def _validate_update_strategy(strategy: Mapping[str, Any], path: str) -> list[Cause]:
    kind, rolling = strategy.get("type") or "", strategy.get("rollingUpdate")
    if not kind:
        return [required(path)]
    if kind == "OnDelete":
        if rolling is None:
            return []
        partition = int(rolling.get("partition") or 0)
        rendered = f"apps.RollingUpdateStatefulSetStrategy{{Partition:{partition}, " \
                   "MaxUnavailable:(*intstr.IntOrString)(nil)}"
        return [invalid(f"{path}.rollingUpdate", Raw(rendered), "only allowed for updateStrategy 'RollingUpdate'")]
    if kind == "RollingUpdate":
        if rolling is None:
            return []
        return validate_nonnegative(rolling.get("partition"), f"{path}.rollingUpdate.partition")
    rendered = f"apps.StatefulSetUpdateStrategy{{Type:{go_quote(kind)}, RollingUpdate:{_go_rolling_update(rolling)}}}"
    return [invalid(path, Raw(rendered), "must be 'RollingUpdate' or 'OnDelete'")]


def _validate_selector_and_template(spec: Mapping[str, Any]) -> list[Cause]:
    """The selector rules and ``ValidatePodTemplateSpecForStatefulSet`` (labels and annotations only)."""
    causes: list[Cause] = []
    selector = spec.get("selector")
    if selector is None:
        causes.append(required("spec.selector"))
    else:
        causes.extend(validate_label_selector(selector, "spec.selector"))
        if not (selector.get("matchLabels") or selector.get("matchExpressions")):
            causes.append(invalid("spec.selector", Raw(selectors.go_label_selector(selector)),
                                  "empty selector is invalid for statefulset"))
    template = spec.get("template") or {}
    template_meta = template.get("metadata") or {}
    if not selectors.is_valid(selector):
        causes.append(invalid("spec.selector", Raw(selectors.go_label_selector(selector)), ""))
    else:
        if not selectors.is_empty(selector) and not selectors.matches(selector, template_meta.get("labels")):
            causes.append(invalid("spec.template.metadata.labels", Raw(go_string_map(template_meta.get("labels"))),
                                  "`selector` does not match template `labels`"))
        causes.extend(validate_labels(template_meta.get("labels"), "spec.template.labels"))
        causes.extend(validate_annotations(template_meta.get("annotations"), "spec.template.annotations"))
    pod_spec = template.get("spec") or {}
    if (pod_spec.get("restartPolicy") or "") != "Always":
        causes.append(not_supported("spec.template.spec.restartPolicy", pod_spec.get("restartPolicy") or "",
                                    ("Always",)))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        causes.append(forbidden("spec.template.spec.activeDeadlineSeconds",
                                "activeDeadlineSeconds in StatefulSet is not Supported"))
    return causes

