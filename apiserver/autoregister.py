"""Local APIServices that follow discovery (kube-aggregator's autoregister and availability controllers).

Every group/version the server's discovery lists gets an APIService named ``<version>.<group>`` (``v1.`` for the
core group) with no ``service`` — Local — and the condition ``Available=True`` (reason ``Local``, "Local
APIServices are always available"), labelled ``kube-aggregator.kubernetes.io/automanaged``: ``onstart`` for the
built-in groups, ``true`` for the ones that come and go (custom resources' groups). The controller reads
discovery through ``served`` each round, so a group that appears (a CRD's) gets its APIService within a round,
and an automanaged one that is no longer served is deleted. APIServices that name a Service get their
Available condition from it: ``ServiceNotFound``, ``MissingEndpoints`` or True (``Passed``); nothing is proxied
to them.

Every apiserver runs this; creates that lose a race answer AlreadyExists and are ignored.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable
from typing import Any

from apimachinery import errors
from apimachinery.meta import now_rfc3339

from .periodic import Periodic
from .registry.registry import Registry
from .registry.store import DeleteOptions

GROUP = "apiregistration.k8s.io"
AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"
INTERVAL = 1.0
# kube-apiserver's apiVersionPriorities: (groupPriorityMinimum, versionPriority) of the built-in groups.
PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apiregistration.k8s.io", "v1"): (18000, 15),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    ("metrics.k8s.io", "v1beta1"): (100, 100),
}
CUSTOM_PRIORITY = (1000, 100)  # what kube gives a custom resource's group/version


def apiservice_name(group: str, version: str) -> str:
    return f"{version}.{group}"


def local_apiservice(group: str, version: str, builtin: bool) -> dict[str, Any]:
    group_priority, version_priority = PRIORITIES.get((group, version), CUSTOM_PRIORITY)
    return {
        "apiVersion": f"{GROUP}/v1", "kind": "APIService",
        "metadata": {"name": apiservice_name(group, version),
                     "labels": {AUTOMANAGED: "onstart" if builtin else "true"}},
        "spec": {"group": group, "version": version, "groupPriorityMinimum": group_priority,
                 "versionPriority": version_priority},
    }


def available(status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": "Available", "status": status, "lastTransitionTime": now_rfc3339(), "reason": reason,
            "message": message}


def served_group_versions(groups: dict[str, Any]) -> list[tuple[str, str]]:
    """(group, version) of an ``APIGroupList`` document, the core group's ``v1`` first."""
    out = [("", "v1")]
    for group in groups.get("groups") or []:
        out.extend((group["name"], v["version"]) for v in group.get("versions") or [])
    return out


class AutoRegister(Periodic):
    """Keeps the APIServices in step with ``served`` (a callable answering the discovery ``APIGroupList``)."""

    name = "apiservice-autoregister"

    def __init__(self, registry: Registry, served: Callable[[], dict[str, Any]], builtin: Iterable[tuple[str, str]],
                 interval: float = INTERVAL) -> None:
        super().__init__(interval)
        self.registry = registry
        self.served = served
        self.builtin = set(builtin)

    async def sync(self) -> None:
        """One round: create what is served and missing, delete automanaged ones no longer served, and bring the
        Available conditions up to date."""
        store = self.registry.stores.get((GROUP, "apiservices"))
        if store is None:
            return
        wanted = {apiservice_name(g, v): (g, v) for g, v in served_group_versions(self.served())}
        current = {obj["metadata"]["name"]: obj for obj in (co.obj for co in store.cache.list())}
        for name, (group, version) in wanted.items():
            if name not in current:
                with contextlib.suppress(errors.AlreadyExists):
                    await store.create(local_apiservice(group, version, (group, version) in self.builtin), None)
        for name, obj in current.items():
            labels = obj["metadata"].get("labels") or {}
            if name not in wanted and labels.get(AUTOMANAGED) == "true":
                with contextlib.suppress(errors.NotFound):
                    await store.delete(None, name, DeleteOptions())
        for obj in (co.obj for co in store.cache.list()):
            condition = self._condition(obj)
            if not _same(obj, condition):
                await store.guaranteed_update(None, obj["metadata"]["name"],
                                              functools.partial(_with_condition, condition=condition),
                                              subresource="status")

    def _condition(self, obj: dict[str, Any]) -> dict[str, Any]:
        """kube's availability check, without calling the service (nothing is proxied to it)."""
        service = (obj.get("spec") or {}).get("service")
        if not service:
            return available("True", "Local", "Local APIServices are always available")
        namespace, name = service.get("namespace", ""), service.get("name", "")
        services = self.registry.stores.get(("", "services"))
        endpoints = self.registry.stores.get(("", "endpoints"))
        if services is None or services.cache.get(services.etcd_key(namespace, name)) is None:
            return available("False", "ServiceNotFound", f'service/{name} in "{namespace}" is not present')
        co = endpoints.cache.get(endpoints.etcd_key(namespace, name)) if endpoints is not None else None
        if co is None or not any(subset.get("addresses") for subset in co.obj.get("subsets") or []):
            return available("False", "MissingEndpoints",
                             f'endpoints for service/{name} in "{namespace}" have no addresses with port name ""')
        return available("True", "Passed", "all checks passed")


def _current(obj: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Available"), None)


def _same(obj: dict[str, Any], condition: dict[str, Any]) -> bool:
    current = _current(obj)
    return current is not None and all(current.get(k) == condition[k] for k in ("status", "reason", "message"))


def _with_condition(obj: dict[str, Any], condition: dict[str, Any]) -> dict[str, Any]:
    status = obj.setdefault("status", {})
    others = [c for c in status.get("conditions") or [] if c.get("type") != "Available"]
    current = _current(obj)
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    status["conditions"] = [*others, condition]
    return obj
