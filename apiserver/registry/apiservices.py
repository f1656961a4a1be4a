"""APIService (apiregistration.k8s.io/v1): one object per API group/version the server offers.

Kube's aggregator lists every built-in group/version as a *Local* APIService (``v1.``, ``v1.apps`` …) and
custom resources' group/versions too; a non-local one names the Service that serves it. The objects here are
kept by ``apiserver.autoregister`` from what discovery serves; this strategy holds kube-aggregator's rules: the
name is ``<version>.<group>``, priorities are in range, ``caBundle`` and ``insecureSkipTLSVerify`` exclude each
other. ``kubectl get apiservices`` shows NAME SERVICE AVAILABLE AGE.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.validation import invalid, is_dns1035_label, is_dns1123_subdomain, required
from apiserver.registry.strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn
from apiserver.registry.tables import since


def available_cell(obj: Object) -> str:
    """``printAPIService``'s AVAILABLE: True, or the status with its reason (``False (MissingEndpoints)``)."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Available":
            status = condition.get("status") or "Unknown"
            if status != "True" and condition.get("reason"):
                return f"{status} ({condition['reason']})"
            return str(status)
    return "Unknown"


class APIServiceStrategy(Strategy):
    group = "apiregistration.k8s.io"
    kind = "APIService"
    resource = "apiservices"
    singular = "apiservice"
    namespaced = False
    categories = ("api-extensions",)
    subresources = ("status",)
    bumps_generation = False

    def name_validator(self, name: str) -> list[str]:
        return []  # checked against spec in validate (``v1.`` is not a DNS subdomain)

    def prepare_for_create(self, obj: Object) -> None:
        obj.setdefault("spec", {})
        obj.setdefault("status", {})

    def validate(self, obj: Object) -> list[Cause]:
        """``ValidateAPIService``."""
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        group, version = spec.get("group") or "", spec.get("version") or ""
        name = (obj.get("metadata") or {}).get("name") or ""
        wanted = f"{version}.{group}"
        if name != wanted:
            causes.append(invalid("metadata.name", name, f'must be `spec.version+"."+spec.group`: "{wanted}"'))
        if not group and version != "v1":
            causes.append(required("spec.group", "only v1 may have an empty group and it better be legacy kube"))
        if group:
            causes.extend(invalid("spec.group", group, msg) for msg in is_dns1123_subdomain(group))
        if not version:
            causes.append(required("spec.version"))
        else:
            causes.extend(invalid("spec.version", version, msg) for msg in is_dns1035_label(version))
        group_priority = spec.get("groupPriorityMinimum") or 0
        if not 0 < group_priority <= 20000:
            causes.append(invalid("spec.groupPriorityMinimum", group_priority,
                                  "must be positive and less than 20000"))
        version_priority = spec.get("versionPriority") or 0
        if not 0 < version_priority <= 1000:
            causes.append(invalid("spec.versionPriority", version_priority, "must be positive and less than 1000"))
        service = spec.get("service")
        if service is None:
            if spec.get("caBundle"):
                causes.append(invalid("spec.caBundle", f"{len(spec['caBundle'])} bytes",
                                      "local APIServices may not have a caBundle"))
            if spec.get("insecureSkipTLSVerify"):
                causes.append(invalid("spec.insecureSkipTLSVerify", True,
                                      "local APIServices may not have insecureSkipTLSVerify"))
        else:
            if not service.get("namespace"):
                causes.append(required("spec.service.namespace"))
            if not service.get("name"):
                causes.append(required("spec.service.name"))
            if spec.get("insecureSkipTLSVerify") and spec.get("caBundle"):
                causes.append(invalid("spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"))
        return causes

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN,
                TableColumn("Service", description="The reference to the service that hosts this API endpoint."),
                TableColumn("Available", description="Whether this service is available."),
                AGE_COLUMN]

    def row(self, obj: Object) -> list[Any]:
        meta = obj.get("metadata") or {}
        service = (obj.get("spec") or {}).get("service")
        where = f"{service.get('namespace', '')}/{service.get('name', '')}" if service else "Local"
        return [meta.get("name", ""), where, available_cell(obj), since(meta.get("creationTimestamp"))]
