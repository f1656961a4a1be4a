"""ResourceQuotas (core/v1): hard limits per namespace, and the usage charged against them.

What kube-apiserver does, and where:

* ``PrepareForCreate`` clears ``status``: the resourcequota controller fills ``status.hard`` (a copy of
  ``spec.hard``) and ``status.used``; until then the quota admission refuses what it tracks ("status unknown");
  an update keeps ``status`` (its subresource is written by the controller and the ResourceQuota admission);
* ``ValidateResourceQuota``: resource names standard or qualified, quantities not negative (whole numbers for
  counts), scopes known and compatible with the hard names, ``scopeSelector`` operators; scopes immutable;
* ``kubectl get quota`` prints NAME, AGE, REQUEST (``pods: 1/2, cpu: 0/1``) and LIMIT (the ``limits.*``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.errors import Cause
from apimachinery.quota import SCOPES
from apimachinery.validation import Raw, go_quote, invalid, is_qualified_name, required
from apiserver.registry.qos import validate_quantity_value
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since

SCOPE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_quota_resource_name(name: str, path: str) -> list[Cause]:
    """``ValidateResourceQuotaResourceName``: a qualified name (``count/deployments.apps`` may carry a dot
    and a slash: only its prefix-free part is checked loosely)."""
    if name.startswith("count/"):
        return [] if len(name) > len("count/") else [invalid(path, name, "must be a standard resource type or "
                                                                          "fully qualified")]
    return [invalid(path, name, msg) for msg in is_qualified_name(name)]


def validate_resource_list(resources: Mapping[str, Any] | None, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for name, value in (resources or {}).items():
        item = f"{path}[{name}]"
        causes.extend(validate_quota_resource_name(name, item))
        causes.extend(validate_quantity_value(name, value, item))
    return causes


# ``IsStandardQuotaResourceName``: the names a scope is checked against (``count/…`` and extended ones are not).
STANDARD_QUOTA_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services",
    "replicationcontrollers", "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims",
    "services.nodeports", "services.loadbalancers"})
POD_COMPUTE_QUOTA_RESOURCES = frozenset({"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu",
                                         "requests.memory"})
CONFLICTING_SCOPES = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))


def scope_valid_for(scope: str, name: str) -> bool:
    """``IsResourceQuotaScopeValidForResource``: BestEffort tracks only ``pods``; the other pod scopes also the
    cpu/memory names."""
    if scope == "BestEffort":
        return name == "pods"
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"):
        return name == "pods" or name in POD_COMPUTE_QUOTA_RESOURCES
    return True


def _go_scopes(scopes: list[Any]) -> Raw:
    return Raw("[]core.ResourceQuotaScope{" + ", ".join(go_quote(str(s)) for s in scopes) + "}")


def validate_scopes(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateResourceQuotaScopes``: known scopes, valid for every standard hard name, no conflicting pair."""
    causes: list[Cause] = []
    scopes = list(spec.get("scopes") or [])
    hard = sorted(name for name in spec.get("hard") or {} if name in STANDARD_QUOTA_RESOURCES
                  or name.startswith(("hugepages-", "requests.hugepages-")))
    for scope in scopes:
        if scope not in SCOPES:
            causes.append(invalid(f"{path}.scopes", _go_scopes(scopes), "unsupported scope"))
        causes.extend(invalid(f"{path}.scopes", _go_scopes(scopes), "unsupported scope applied to resource")
                      for name in hard if not scope_valid_for(scope, name))
    causes.extend(invalid(f"{path}.scopes", _go_scopes(scopes), "conflicting scopes")
                  for pair in CONFLICTING_SCOPES if set(pair) <= set(scopes))
    return causes + validate_scope_selector(spec, path)


def validate_scope_selector(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateScopedResourceSelectorRequirement``: known scope names and operators, values as the operator
    needs them, scopes valid for the hard names."""
    causes: list[Cause] = []
    hard = [name for name in spec.get("hard") or {} if name in STANDARD_QUOTA_RESOURCES]
    expressions = (spec.get("scopeSelector") or {}).get("matchExpressions") or []
    for expr in expressions:
        item = f"{path}.scopeSelector.matchExpressions"
        scope = expr.get("scopeName")
        if scope not in SCOPES:
            causes.append(invalid(f"{item}.scopeName", scope, "unsupported scope"))
        causes.extend(invalid(f"{item}.scopeName", scope, "unsupported scope applied to resource")
                      for name in hard if not scope_valid_for(scope, name))
        operator = expr.get("operator")
        if operator not in SCOPE_OPERATORS:
            causes.append(invalid(f"{item}.operator", operator, "not a valid selector operator"))
        elif operator in ("In", "NotIn") and not expr.get("values"):
            causes.append(required(f"{item}.values", "must be at least one value when `operator` is 'In' or "
                                                     "'NotIn' for scope selector"))
        elif operator in ("Exists", "DoesNotExist") and expr.get("values"):
            causes.append(invalid(f"{item}.values", expr.get("values"),
                                  "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
    return causes


class ResourceQuotaStrategy(Strategy):
    kind = "ResourceQuota"
    resource = "resourcequotas"
    singular = "resourcequota"
    short_names = ("quota",)
    subresources = ("status",)
    bumps_generation = False

    def prepare_for_create(self, obj: Object) -> None:
        obj.pop("status", None)

    def validate(self, obj: Object) -> list[Cause]:
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        return (validate_resource_list(spec.get("hard"), "spec.hard") + validate_scopes(spec, "spec")
                + validate_resource_list(status.get("hard"), "status.hard")
                + validate_resource_list(status.get("used"), "status.used"))

    def validate_update(self, new: Object, old: Object) -> list[Cause]:
        """``ValidateResourceQuotaUpdate``: the scopes never change (as a set)."""
        causes = self.validate(new)
        scopes = list((new.get("spec") or {}).get("scopes") or [])
        if set(scopes) != set((old.get("spec") or {}).get("scopes") or []):
            causes.append(invalid("spec.scopes", _go_scopes(scopes), "field is immutable"))
        return causes

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        status = new.get("status") or {}
        return (validate_resource_list(status.get("hard"), "status.hard")
                + validate_resource_list(status.get("used"), "status.used"))

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, AGE_COLUMN,
                TableColumn("Request", description="Request represents a minimum amount of cpu/memory that a "
                                                   "container may consume."),
                TableColumn("Limit", description="Limits control the maximum amount of cpu/memory that a container "
                                                 "may use independent of contention on the node.")]

    def row(self, obj: Object) -> list[Any]:
        """``printResourceQuota``: ``used/hard`` per name of ``status.hard``, limits.* in their own column."""
        status = obj.get("status") or {}
        hard, used = status.get("hard") or {}, status.get("used") or {}
        request: list[str] = []
        limit: list[str] = []
        for name in sorted(hard):
            column = limit if name.split(".")[0] == "limits" and "." in name else request
            column.append(f"{name}: {used.get(name, '0')}/{hard[name]}")
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), since(metadata.get("creationTimestamp")), ", ".join(request),
                ", ".join(limit)]
