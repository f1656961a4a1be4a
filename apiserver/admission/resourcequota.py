"""The ResourceQuota admission plugin (``plugin/pkg/admission/resourcequota``): the last validating plugin.

For a create (or an update that raises usage) of a namespaced object, every ResourceQuota of the namespace whose
scopes cover the object and whose ``status.hard`` names something the object uses is checked, in kube's order and
with its texts (all 403 ``<resource> "<name>" is forbidden: …``):

* ``failed quota: q: must specify limits.cpu for: c`` — a quota on cpu/memory needs every container to say it;
* ``status unknown for quota: q, resources: pods`` — ``status.hard`` names something ``status.used`` lacks;
* ``exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2``.

As in kube, a quota is matched on its ``status.hard``: one the controller has not yet synced enforces nothing.

Then the usage is charged: each quota's ``status.used`` is raised by a compare-and-swap write on its stored
revision, the check made again on the stored status at each attempt (kube updates the quota status with a retry
on conflict), so two concurrent creates can never both take the last unit. Dry runs are checked, never charged.
Usage is given back by the resourcequota controller, which recounts what exists.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from apimachinery import errors
from apimachinery.quota import (
    ResourceList,
    add,
    covered_names,
    less_than_or_equal,
    mask,
    matches_scopes,
    matching_resources,
    missing_constraints,
    parse_list,
    pretty,
    remove_zeros,
    subtract_non_negative,
    to_wire,
    usage,
)

from ..registry.registry import Registry
from .attributes import Attributes, Object
from .sources import Sources

# kube-apiserver's default ignored resources: Events are never counted.
IGNORED = frozenset({("", "events"), ("events.k8s.io", "events")})


def restricted_names(quota: Mapping[str, Any], attrs: Attributes, obj: Mapping[str, Any]) -> set[str]:
    """The quota's ``status.hard`` names this object can use, or none when its scopes do not cover it."""
    spec = quota.get("spec") or {}
    if not matches_scopes(spec, attrs.group, attrs.resource, obj):
        return set()
    hard = (quota.get("status") or {}).get("hard") or {}  # kube matches on status.hard: unsynced, not enforced
    return matching_resources(attrs.group, attrs.resource, covered_names(spec, hard))


def refusal(quota: Mapping[str, Any], requested: ResourceList) -> str | None:
    """``exceeded quota: …`` when ``requested`` on top of the quota's used goes over its hard, else None."""
    status = quota.get("status") or {}
    hard, used = parse_list(status.get("hard")), parse_list(status.get("used"))
    requested = mask(requested, hard)
    new_usage = mask(add(used, requested), requested)
    allowed, exceeded = less_than_or_equal(new_usage, hard)
    if allowed:
        return None
    return (f"exceeded quota: {quota['metadata']['name']}, requested: {pretty(mask(requested, exceeded))}, "
            f"used: {pretty(mask(used, exceeded))}, limited: {pretty(mask(hard, exceeded))}")


def charged(quota: Object, requested: ResourceList) -> Object:
    """The quota with ``requested`` added to ``status.used`` (only the names it limits)."""
    status = quota.setdefault("status", {})
    hard = parse_list(status.get("hard"))
    used = add(parse_list(status.get("used")), mask(requested, hard))
    status["used"] = to_wire(used)
    return quota


class ResourceQuotaAdmission:
    """Checks and charges quotas (a validating plugin: it never changes the admitted object)."""

    def __init__(self, sources: Sources, registry: Registry) -> None:
        self.sources = sources
        self.registry = registry

    def configured(self) -> bool:
        return bool(self.sources.cached("", "resourcequotas"))

    def concerns(self, group: str, resource: str) -> bool:
        return (group, resource) not in IGNORED

    def handles(self, attrs: Attributes) -> bool:
        return (attrs.namespaced and not attrs.subresource and (attrs.group, attrs.resource) not in IGNORED
                and attrs.operation in ("CREATE", "UPDATE")
                and attrs.obj is not None and bool(attrs.namespace)
                and bool(self.sources.list("", "resourcequotas", attrs.namespace)))

    def delta(self, attrs: Attributes) -> ResourceList:
        """What the request adds: the object's usage, less the old object's on an update."""
        new = usage(attrs.group, attrs.resource, attrs.obj or {})
        if attrs.operation == "UPDATE" and attrs.old is not None and \
                (attrs.old.get("metadata") or {}).get("resourceVersion"):
            new = subtract_non_negative(new, usage(attrs.group, attrs.resource, attrs.old))
        return remove_zeros(new)

    async def validate(self, attrs: Attributes) -> None:
        obj = attrs.obj or {}
        quotas = sorted(self.sources.list("", "resourcequotas", attrs.namespace),
                        key=lambda q: q["metadata"]["name"])
        interesting: list[tuple[Object, set[str]]] = []
        for quota in quotas:
            names = restricted_names(quota, attrs, obj)
            if not names:
                continue
            name = quota["metadata"]["name"]
            if attrs.group == "" and attrs.resource == "pods":
                missing = missing_constraints(obj, names)
                if missing is not None:
                    raise errors.forbidden(attrs.resource, attrs.name, f"failed quota: {name}: {missing}",
                                           attrs.group)
            status = quota.get("status") or {}
            if any(n not in (status.get("used") or {}) for n in names):  # hasUsageStats
                raise errors.forbidden(attrs.resource, attrs.name, f"status unknown for quota: {name}, resources: "
                                       f"{','.join(sorted(names))}", attrs.group)
            interesting.append((quota, names))
        if not interesting:
            return
        requested = self.delta(attrs)
        if not requested:
            return
        for quota, names in interesting:
            problem = refusal(quota, mask(requested, names))
            if problem is not None:
                raise errors.forbidden(attrs.resource, attrs.name, problem, attrs.group)
        if attrs.dry_run:
            return
        for quota, names in interesting:
            await self._charge(attrs, quota["metadata"]["name"], mask(requested, names))

    async def _charge(self, attrs: Attributes, quota_name: str, requested: ResourceList) -> None:
        """Raise the stored quota's used, checking again against what is stored at each attempt."""
        def update(quota: Object) -> Object:
            problem = refusal(quota, requested)
            if problem is not None:
                raise errors.forbidden(attrs.resource, attrs.name, problem, attrs.group)
            return charged(quota, requested)

        store = self.registry.get("", "resourcequotas")
        with contextlib.suppress(errors.NotFound):  # the quota went away meanwhile: nothing left to charge
            await store.guaranteed_update(attrs.namespace, quota_name, update, subresource="status")
