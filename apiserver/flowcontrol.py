"""API Priority and Fairness's bootstrap configuration and FlowSchema status, as kube-apiserver 1.32 keeps them.

kube-apiserver creates the mandatory objects (``exempt`` and ``catch-all``, a FlowSchema and a
PriorityLevelConfiguration each) and the suggested ones (``system``, ``node-high``, ``leader-election``,
``workload-high``, ``workload-low``, ``global-default`` …) at start, annotated
``apf.kubernetes.io/autoupdate-spec: "true"``; a deleted one comes back, and one whose annotation says true (or,
without the annotation, one still at generation 1) has its spec put back. Here they are ``BootstrapObject``s with
``keep_spec``. ``FlowSchemaStatus`` keeps each FlowSchema's ``Dangling`` condition, as the APF configuration
controller does. Requests are not throttled by any of it (kubelab serves every request as it comes).
"""

from __future__ import annotations

from typing import Any

from apimachinery.meta import now_rfc3339

from .periodic import Periodic
from .registry.flowschemas import GROUP
from .registry.registry import BootstrapObject, Registry
from .registry.strategy import Object

AUTO_UPDATE = "apf.kubernetes.io/autoupdate-spec"
ALL_RESOURCES = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": True, "namespaces": ["*"]}
ALL_URLS = {"verbs": ["*"], "nonResourceURLs": ["*"]}
EVERYONE = ("system:unauthenticated", "system:authenticated")
KUBE_SYSTEM_SERVICE_ACCOUNTS = {"kind": "ServiceAccount", "serviceAccount": {"name": "*", "namespace": "kube-system"}}
LEADER_ELECTION_VERBS = ["get", "create", "update"]


def groups(*names: str) -> list[Object]:
    return [{"kind": "Group", "group": {"name": name}} for name in names]


def users(*names: str) -> list[Object]:
    return [{"kind": "User", "user": {"name": name}} for name in names]


def _metadata(name: str) -> Object:
    return {"name": name, "annotations": {AUTO_UPDATE: "true"}}


def priority_level(name: str, shares: int, lendable: int, queuing: tuple[int, int, int] | None) -> Object:
    """A Limited level (``queuing``: queues, handSize, queueLengthLimit; None: Reject)."""
    response: Object = {"type": "Reject"}
    if queuing is not None:
        queues, hand_size, queue_length_limit = queuing
        response = {"type": "Queue", "queuing": {"queues": queues, "handSize": hand_size,
                                                 "queueLengthLimit": queue_length_limit}}
    return {"apiVersion": f"{GROUP}/v1", "kind": "PriorityLevelConfiguration", "metadata": _metadata(name),
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": shares, "lendablePercent": lendable,
                                                    "limitResponse": response}}}


def flow_schema(name: str, level: str, precedence: int, method: str | None, subjects: list[Object],
                resource_rules: list[Object] | None = None, url_rules: list[Object] | None = None) -> Object:
    """Without rules: every resource and every non-resource URL (kube's ``NewFSAll…``)."""
    rule: Object = {"subjects": subjects}
    if resource_rules is None and url_rules is None:
        resource_rules, url_rules = [ALL_RESOURCES], [ALL_URLS]
    if resource_rules:
        rule["resourceRules"] = resource_rules
    if url_rules:
        rule["nonResourceRules"] = url_rules
    spec: Object = {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence,
                    "rules": [rule]}
    if method is not None:
        spec["distinguisherMethod"] = {"type": method}
    return {"apiVersion": f"{GROUP}/v1", "kind": "FlowSchema", "metadata": _metadata(name), "spec": spec}


def _leader_election_rules(config_namespace: str) -> list[Object]:
    return [{"verbs": LEADER_ELECTION_VERBS, "apiGroups": [""], "resources": ["endpoints", "configmaps"],
             "clusterScope": False, "namespaces": [config_namespace]},
            {"verbs": LEADER_ELECTION_VERBS, "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "clusterScope": False, "namespaces": ["*"]}]


EXEMPT_LEVEL: Object = {"apiVersion": f"{GROUP}/v1", "kind": "PriorityLevelConfiguration",
                        "metadata": _metadata("exempt"),
                        "spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}}
PRIORITY_LEVELS: tuple[Object, ...] = (
    EXEMPT_LEVEL,
    priority_level("catch-all", 5, 0, None),
    priority_level("node-high", 40, 25, (64, 6, 50)),
    priority_level("system", 30, 33, (64, 6, 50)),
    priority_level("leader-election", 10, 0, (16, 4, 50)),
    priority_level("workload-high", 40, 50, (128, 6, 50)),
    priority_level("workload-low", 100, 90, (128, 6, 50)),
    priority_level("global-default", 20, 50, (128, 6, 50)),
)
FLOW_SCHEMAS: tuple[Object, ...] = (
    flow_schema("exempt", "exempt", 1, None, groups("system:masters")),
    flow_schema("catch-all", "catch-all", 10000, "ByUser", groups(*EVERYONE)),
    flow_schema("probes", "exempt", 2, None, groups(*EVERYONE), [],
                [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]),
    flow_schema("system-leader-election", "leader-election", 100, "ByUser",
                [*users("system:kube-controller-manager", "system:kube-scheduler"), KUBE_SYSTEM_SERVICE_ACCOUNTS],
                _leader_election_rules("kube-system")),
    flow_schema("endpoint-controller", "workload-high", 150, "ByUser",
                [*users("system:kube-controller-manager"),
                 {"kind": "ServiceAccount", "serviceAccount": {"name": "endpoint-controller",
                                                               "namespace": "kube-system"}}],
                [{"verbs": LEADER_ELECTION_VERBS, "apiGroups": [""], "resources": ["endpoints"],
                  "clusterScope": False, "namespaces": ["*"]}]),
    flow_schema("workload-leader-election", "leader-election", 200, "ByUser", [KUBE_SYSTEM_SERVICE_ACCOUNTS],
                _leader_election_rules("*")),
    flow_schema("system-node-high", "node-high", 400, "ByUser", groups("system:nodes"),
                [{"verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"], "clusterScope": True},
                 {"verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                  "clusterScope": False, "namespaces": ["*"]}]),
    flow_schema("system-nodes", "system", 500, "ByUser", groups("system:nodes")),
    flow_schema("kube-controller-manager", "workload-high", 800, "ByNamespace",
                users("system:kube-controller-manager")),
    flow_schema("kube-scheduler", "workload-high", 800, "ByNamespace", users("system:kube-scheduler")),
    flow_schema("kube-system-service-accounts", "workload-high", 900, "ByNamespace", [KUBE_SYSTEM_SERVICE_ACCOUNTS]),
    flow_schema("service-accounts", "workload-low", 9000, "ByUser", groups("system:serviceaccounts")),
    flow_schema("global-default", "global-default", 9900, "ByUser", groups(*EVERYONE)),
)


def auto_updates(obj: Object) -> bool:
    """``shouldUpdateSpec``: the annotation when it is a boolean, else whether the object is still generation 1."""
    meta = obj.get("metadata") or {}
    value = str((meta.get("annotations") or {}).get(AUTO_UPDATE, "")).lower()
    if value in ("true", "1", "t"):
        return True
    if value in ("false", "0", "f"):
        return False
    return meta.get("generation") == 1


def bootstrap_objects() -> list[BootstrapObject]:
    """Priority levels first, so the FlowSchemas find theirs."""
    return [*(BootstrapObject(GROUP, "prioritylevelconfigurations", None, obj, keep_spec=auto_updates)
              for obj in PRIORITY_LEVELS),
            *(BootstrapObject(GROUP, "flowschemas", None, obj, keep_spec=auto_updates) for obj in FLOW_SCHEMAS)]


def dangling_condition(schema: Object, levels: set[str]) -> dict[str, Any]:
    level = ((schema.get("spec") or {}).get("priorityLevelConfiguration") or {}).get("name") or ""
    if level in levels:
        return {"type": "Dangling", "status": "False", "reason": "Found",
                "message": f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" and '
                           "it exists"}
    return {"type": "Dangling", "status": "True", "reason": "NotFound",
            "message": f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" but there '
                       "is no such object"}


class FlowSchemaStatus(Periodic):
    """Keeps each FlowSchema's ``Dangling`` condition true to whether its priority level exists."""

    name = "flowschema-status"

    def __init__(self, registry: Registry, interval: float = 1.0) -> None:
        super().__init__(interval)
        self.registry = registry

    async def sync(self) -> None:
        schemas = self.registry.stores.get((GROUP, "flowschemas"))
        levels_store = self.registry.stores.get((GROUP, "prioritylevelconfigurations"))
        if schemas is None or levels_store is None:
            return
        levels = {co.obj["metadata"]["name"] for co in levels_store.cache.list()}
        for co in schemas.cache.list():
            wanted = dangling_condition(co.obj, levels)
            current = next((c for c in (co.obj.get("status") or {}).get("conditions") or []
                            if c.get("type") == "Dangling"), None)
            if current is not None and all(current.get(k) == v for k, v in wanted.items()):
                continue

            def update(obj: Object, wanted: dict[str, Any] = wanted) -> Object:
                others = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") != "Dangling"]
                obj["status"] = {"conditions": [*others, {**wanted, "lastTransitionTime": now_rfc3339()}]}
                return obj

            await schemas.guaranteed_update(None, co.obj["metadata"]["name"], update, subresource="status")
