"""Bootstrap policy reconciliation (kube's ``rbac/reconciliation`` in the ``rbac/bootstrap-roles`` post-start hook).

At start-up every policy object is created when missing; an existing one whose
``rbac.authorization.kubernetes.io/autoupdate`` annotation is not ``"false"`` gets what it lacks — rules it does
not cover, aggregation selectors, labels, annotations, subjects — and keeps what an administrator added. A binding
whose roleRef changed is replaced (roleRef is immutable). Several apiservers may do this at once: conflicts retry,
a create that loses the race is fine.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Mapping
from typing import Any

from apimachinery import errors
from apimachinery.meta import json_copy

from ..registry.registry import Registry
from ..registry.store import DeleteOptions
from .policy import AUTOUPDATE, GROUP, Obj, cluster_role_bindings, cluster_roles, namespaced_objects
from .rules import compile_rule, compile_rules, covers

log = logging.getLogger(__name__)
RESOURCE_OF = {"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "Role": "roles",
               "RoleBinding": "rolebindings"}


def merged_metadata(current: Obj, expected: Obj) -> None:
    meta, want = current["metadata"], expected["metadata"]
    meta["labels"] = {**want.get("labels", {}), **(meta.get("labels") or {})}
    meta["annotations"] = {**want.get("annotations", {}), **(meta.get("annotations") or {})}


def reconciled_role(current: Obj, expected: Obj) -> Obj:
    """A role with the expected rules it does not cover added, and the expected aggregation selectors."""
    new = copy.deepcopy(current)
    merged_metadata(new, expected)
    rules = list(new.get("rules") or [])
    have = compile_rules(rules)
    rules.extend(rule for rule in expected.get("rules") or [] if not covers(have, compile_rule(rule)))
    if "aggregationRule" in expected:
        selectors = list((new.get("aggregationRule") or {}).get("clusterRoleSelectors") or [])
        selectors.extend(s for s in expected["aggregationRule"]["clusterRoleSelectors"] if s not in selectors)
        new["aggregationRule"] = {"clusterRoleSelectors": selectors}
    if rules or "rules" in new:
        new["rules"] = rules
    return new


def reconciled_binding(current: Obj, expected: Obj) -> Obj:
    new = copy.deepcopy(current)
    merged_metadata(new, expected)
    subjects = list(new.get("subjects") or [])
    subjects.extend(s for s in expected.get("subjects") or [] if s not in subjects)
    if subjects:
        new["subjects"] = subjects
    return new


def policy() -> list[Obj]:
    return [*cluster_roles(), *cluster_role_bindings(), *namespaced_objects()]


async def reconcile(registry: Registry, objects: list[Obj] | None = None) -> None:
    """Bring every bootstrap policy object into the store (see the module docstring), all at once: on a fresh etcd
    that is a hundred-odd creates, which one after the other would add a second to every first start."""
    async def one(expected: Obj) -> None:
        try:
            await reconcile_one(registry, expected)
        except errors.StatusError as err:
            log.warning("bootstrap policy %s %s: %s", expected["kind"], expected["metadata"]["name"], err.message)

    await asyncio.gather(*(one(expected) for expected in (policy() if objects is None else objects)))


async def reconcile_one(registry: Registry, expected: Obj) -> None:
    store = registry.get(GROUP, RESOURCE_OF[expected["kind"]])
    meta = expected["metadata"]
    namespace, name = meta.get("namespace"), meta["name"]
    current = store.cache.get(store.etcd_key(namespace, name))
    if current is None:
        with contextlib.suppress(errors.AlreadyExists):
            await store.create(json_copy(expected), namespace)
        return
    if (current.obj["metadata"].get("annotations") or {}).get(AUTOUPDATE) == "false":
        return
    is_binding = expected["kind"].endswith("Binding")
    if is_binding and _role_ref(current.obj) != _role_ref(expected):
        await store.delete(namespace, name, DeleteOptions())
        await store.create(json_copy(expected), namespace)
        return
    fix = reconciled_binding if is_binding else reconciled_role
    if fix(current.obj, expected) != current.obj:
        await store.guaranteed_update(namespace, name, lambda obj: fix(obj, expected))


def _role_ref(obj: Mapping[str, Any]) -> tuple[str, str]:
    ref = obj.get("roleRef") or {}
    return ref.get("kind") or "", ref.get("name") or ""
