"""Quota usage, scopes and the quota messages (``apimachinery.quota``, the ResourceQuota admission's refusals,
the resourcequota controller's status)."""

from __future__ import annotations

from typing import Any

import pytest

from apimachinery import errors
from apimachinery.quantity import Quantity
from apimachinery.quota import (
    covered_names,
    matches_scopes,
    matching_resources,
    missing_constraints,
    parse_list,
    pretty,
    to_wire,
    usage,
)
from apiserver.admission.attributes import Attributes
from apiserver.admission.resourcequota import ResourceQuotaAdmission, charged, refusal
from apiserver.authentication import ANONYMOUS
from apiserver.registry.resourcequotas import ResourceQuotaStrategy
from controllers.resourcequota import calculate_status


def pod(*containers: dict[str, Any], init: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": list(containers), **spec}
    if init is not None:
        body["initContainers"] = init
    return {"metadata": {"name": "p"}, "spec": body}


def container(name: str = "c", **resources: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "resources": resources}


def test_pod_usage_sums_containers_and_takes_the_largest_init_container() -> None:
    p = pod(container("a", requests={"cpu": "100m", "memory": "64Mi"}, limits={"cpu": "200m"}),
            container("b", requests={"cpu": "250m"}),
            init=[container("i", requests={"cpu": "1"})])
    assert to_wire(usage("", "pods", p)) == {
        "count/pods": "1", "cpu": "1", "limits.cpu": "200m", "memory": "64Mi", "pods": "1",
        "requests.cpu": "1", "requests.memory": "64Mi"}


def test_a_terminal_pod_only_counts_its_object() -> None:
    p = pod(container(requests={"cpu": "1"}))
    p["status"] = {"phase": "Succeeded"}
    assert to_wire(usage("", "pods", p)) == {"count/pods": "1"}


def test_object_counts() -> None:
    assert to_wire(usage("apps", "deployments", {})) == {"count/deployments.apps": "1"}
    assert to_wire(usage("", "configmaps", {})) == {"configmaps": "1", "count/configmaps": "1"}
    svc = {"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443}]}}
    assert to_wire(usage("", "services", svc)) == {"count/services": "1", "services": "1",
                                                   "services.nodeports": "2"}


def test_matching_resources_by_kind() -> None:
    names = {"pods", "requests.cpu", "limits.memory", "count/pods", "secrets", "count/deployments.apps"}
    assert matching_resources("", "pods", names) == {"pods", "requests.cpu", "limits.memory", "count/pods"}
    assert matching_resources("", "secrets", names) == {"secrets"}
    assert matching_resources("apps", "deployments", names) == {"count/deployments.apps"}


def test_scopes() -> None:
    best_effort = pod(container())
    burstable = pod(container(requests={"cpu": "1"}), activeDeadlineSeconds=30, priorityClassName="high")
    assert matches_scopes({"scopes": ["BestEffort"]}, "", "pods", best_effort)
    assert not matches_scopes({"scopes": ["BestEffort"]}, "", "pods", burstable)
    assert matches_scopes({"scopes": ["NotBestEffort", "Terminating"]}, "", "pods", burstable)
    assert matches_scopes({"scopes": ["NotTerminating"]}, "", "pods", best_effort)
    selector = {"scopeSelector": {"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}
    assert matches_scopes(selector, "", "pods", burstable)
    assert not matches_scopes(selector, "", "pods", best_effort)
    assert not matches_scopes({"scopes": ["BestEffort"]}, "", "secrets", {})  # scoped quotas only cover pods
    assert matches_scopes({}, "", "secrets", {})
    assert covered_names({"scopes": ["BestEffort"]}, ["pods", "cpu"]) == {"pods"}


def test_constraints_name_each_container_missing_a_tracked_resource() -> None:
    p = pod(container("a", requests={"cpu": "1"}), container("b"))
    assert missing_constraints(p, {"limits.cpu", "requests.cpu", "pods"}) == \
        "must specify limits.cpu for: a,b; requests.cpu for: b"
    assert missing_constraints(p, {"pods", "count/pods"}) is None


def quota(hard: dict[str, str], used: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "q"}, "status": {"hard": hard, "used": used}}


def test_exceeded_quota_message() -> None:
    q = quota({"pods": "2", "requests.cpu": "1"}, {"pods": "2", "requests.cpu": "200m"})
    requested = {"pods": Quantity.from_int(1), "requests.cpu": Quantity.from_milli(100),
                 "count/pods": Quantity.from_int(1)}
    assert refusal(q, requested) == "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
    q["status"]["used"]["pods"] = "1"
    assert refusal(q, requested) is None
    assert charged(q, requested)["status"]["used"] == {"pods": "2", "requests.cpu": "300m"}


def test_pretty_sorts_names() -> None:
    assert pretty(parse_list({"pods": "1", "cpu": "500m"})) == "cpu=500m,pods=1"


def test_controller_status_has_every_hard_name() -> None:
    q = {"spec": {"hard": {"pods": "2", "secrets": "3"}}}
    assert calculate_status(q, {"pods": Quantity.from_int(1)}) == {
        "hard": {"pods": "2", "secrets": "3"}, "used": {"pods": "1", "secrets": "0"}}


def test_quota_scope_validation() -> None:
    bad = {"spec": {"hard": {"pods": "1", "secrets": "2", "count/pods": "3"},
                    "scopes": ["BestEffort", "NotBestEffort"]}}
    assert [f"{c.field}: {c.message}" for c in ResourceQuotaStrategy().validate(bad)] == [
        'spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort", "NotBestEffort"}: unsupported scope '
        "applied to resource",
        'spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort", "NotBestEffort"}: unsupported scope '
        "applied to resource",
        'spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort", "NotBestEffort"}: conflicting scopes',
    ]
    assert ResourceQuotaStrategy().validate({"spec": {"hard": {"pods": "1", "cpu": "1"},
                                                      "scopes": ["NotBestEffort"]}}) == []


class QuotaSources:
    """The one read the plugin makes: the namespace's quotas."""

    def __init__(self, *quotas: dict[str, Any]) -> None:
        self.quotas = list(quotas)

    def list(self, group: str, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.quotas if (group, resource) == ("", "resourcequotas") else []

    def cached(self, group: str, resource: str) -> list[Any]:
        return self.quotas


def plugin_attrs(resource: str, obj: dict[str, Any], operation: str = "CREATE", group: str = "",
                 dry_run: bool = True) -> Attributes:
    return Attributes(operation, group, "v1", resource, "", "Kind",  # type: ignore[arg-type]
                      "ns", obj["metadata"]["name"], True, ANONYMOUS, dry_run, obj=obj)


async def test_admission_refusals_in_kube_order() -> None:
    unsynced = {"metadata": {"name": "new"}, "spec": {"hard": {"pods": "1"}}}
    partial = {"metadata": {"name": "partial"}, "spec": {"hard": {"pods": "1", "limits.cpu": "1"}},
               "status": {"hard": {"pods": "1", "limits.cpu": "1"}, "used": {"pods": "0"}}}
    plugin = ResourceQuotaAdmission(QuotaSources(unsynced), None)  # type: ignore[arg-type]
    p = {**pod(container(limits={"cpu": "100m"})), "metadata": {"name": "p"}}
    assert plugin.handles(plugin_attrs("pods", p))
    assert not plugin.handles(plugin_attrs("events", {"metadata": {"name": "e"}}))
    await plugin.validate(plugin_attrs("pods", p))  # a quota the controller has not synced enforces nothing
    plugin = ResourceQuotaAdmission(QuotaSources(partial), None)  # type: ignore[arg-type]
    with pytest.raises(errors.Forbidden, match='pods "p" is forbidden: status unknown for quota: partial, '
                                               "resources: limits.cpu,pods"):
        await plugin.validate(plugin_attrs("pods", p))
    bare = {**pod(container()), "metadata": {"name": "bare"}}
    with pytest.raises(errors.Forbidden, match="failed quota: partial: must specify limits.cpu for: c"):
        await plugin.validate(plugin_attrs("pods", bare))


def test_quota_scopes_are_immutable() -> None:
    old = {"spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}}
    new = {"spec": {"hard": {"pods": "2"}, "scopes": ["NotBestEffort"]}}
    assert [f"{c.field}: {c.message}" for c in ResourceQuotaStrategy().validate_update(new, old)] == [
        'spec.scopes: Invalid value: []core.ResourceQuotaScope{"NotBestEffort"}: field is immutable']
    assert ResourceQuotaStrategy().validate_update({"spec": {"hard": {"pods": "3"}, "scopes": ["BestEffort"]}},
                                                   old) == []


def test_a_claim_counts_its_storage_overall_and_per_storage_class() -> None:
    claim = {"metadata": {"name": "a"}, "spec": {"storageClassName": "gold",
                                                 "resources": {"requests": {"storage": "1Gi"}}}}
    assert {k: str(v) for k, v in usage("", "persistentvolumeclaims", claim).items()} == {
        "count/persistentvolumeclaims": "1", "persistentvolumeclaims": "1", "requests.storage": "1Gi",
        "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
        "gold.storageclass.storage.k8s.io/requests.storage": "1Gi"}
    assert matching_resources("", "persistentvolumeclaims", [
        "gold.storageclass.storage.k8s.io/requests.storage", "requests.storage", "pods"]) == {
        "gold.storageclass.storage.k8s.io/requests.storage", "requests.storage"}
