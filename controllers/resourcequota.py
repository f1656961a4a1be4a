"""The resourcequota controller (``pkg/controller/resourcequota``): each ResourceQuota's ``status``.

The ResourceQuota admission plugin charges usage as objects are created; nothing there gives it back. This
controller keeps ``status.hard`` equal to ``spec.hard`` and ``status.used`` equal to what exists:

* the queue holds quota keys; a quota added, or its ``spec.hard`` changed, is enqueued — never for a status
  write (admission's charges: a recount then could read caches that have not yet seen the charged object and
  undo the charge); every quota comes back each ``--resource-quota-sync-period`` (kube's ``enqueueAll``);
* replenishment: an object deleted, a pod turning terminal (Succeeded/Failed, or being deleted), another object
  whose usage changed (a Service no longer a NodePort) enqueues the quotas of its namespace that track its kind —
  usage goes down as soon as the pod goes;
* ``sync(key)`` counts, for each name in ``spec.hard``, the usage of the namespace's objects that the quota's
  scopes cover (``apimachinery.quota``, the same arithmetic the admission plugin uses), from informers: pods,
  services, secrets, configmaps and replication controllers from the start, and for ``count/<resource>.<group>``
  of any other resource (a custom one: found through discovery) an informer started the first time a quota
  names it — kube's quota monitors — so its deletions replenish too;
* the status is written only when it changed; a 409 (admission charged meanwhile) is retried by the worker.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

from apimachinery.meta import Object
from apimachinery.quantity import Quantity
from apimachinery.quota import (
    ResourceList,
    add,
    covered_names,
    mask,
    matches_scopes,
    matching_resources,
    parse_list,
    pod_is_terminal,
    to_wire,
    usage,
)
from controllers.support.base import Controller, unwrap
from controllers.support.podutil import meta
from kubeclient import (
    CONFIG_MAPS,
    NAMESPACE_INDEX,
    PODS,
    REPLICATION_CONTROLLERS,
    RESOURCE_QUOTAS,
    RESOURCES,
    SECRETS,
    SERVICES,
    Clientset,
    DeletedFinalStateUnknown,
    InformerFactory,
    Resource,
)
from kubeclient.informer import SharedInformer, wait_for_cache_sync

log = logging.getLogger(__name__)

DEFAULT_RESYNC_PERIOD = 300.0  # --resource-quota-sync-period
SYNC_TIMEOUT = 30.0  # how long a sync waits for a newly started informer's first list


def calculate_status(quota: Object, used: ResourceList) -> dict[str, Any]:
    """The quota's new status: ``hard`` from the spec, ``used`` for every hard name (0 when nothing uses it)."""
    hard = dict((quota.get("spec") or {}).get("hard") or {})
    zero = Quantity(0)
    return {"hard": hard, "used": to_wire({name: used.get(name, zero) for name in hard})}


class ResourceQuotaController(Controller):
    name = "resourcequota-controller"
    queue_name = "resourcequota_primary"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 5,
                 resync_period: float = DEFAULT_RESYNC_PERIOD) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.factory = factory
        self._stop: asyncio.Event | None = None
        self.resync_period = resync_period
        self.quota_informer = factory.informer(RESOURCE_QUOTAS)
        self.quota_informer.add_event_handler(self.enqueue, self._quota_updated, None)
        # Resources counted from a cache, by (group, plural).
        self.watched: dict[tuple[str, str], SharedInformer] = {}
        for r in (PODS, SERVICES, SECRETS, CONFIG_MAPS, REPLICATION_CONTROLLERS):
            self._watch(r.group, r.plural, factory.informer(r))
        self.informers = [self.quota_informer, *self.watched.values()]

    async def run(self, stop: asyncio.Event) -> None:
        self._stop = stop  # informers started later (count/<resource>) stop with the controller
        await super().run(stop)

    # --- handlers -----------------------------------------------------------------------------------------------
    def background(self) -> list[asyncio.Task[None]]:
        return [asyncio.create_task(self._enqueue_all(), name=f"{self.name} resync")]

    async def _enqueue_all(self) -> None:
        """Every quota, every ``resync_period``: the full recalculation that catches what events missed."""
        while True:
            await asyncio.sleep(self.resync_period)
            for quota in self.quota_informer.indexer.list():
                self.enqueue(quota)

    def _quota_updated(self, old: Object, new: Object) -> None:
        """Only a change of ``spec.hard`` (parsed: ``1000m`` is ``1``) drives a recount."""
        hard = (parse_list((old.get("spec") or {}).get("hard")), parse_list((new.get("spec") or {}).get("hard")))
        if hard[0] != hard[1]:
            self.enqueue(new)

    def _watch(self, group: str, resource: str, informer: SharedInformer) -> None:
        """Count ``resource`` from ``informer``; replenish when an object's usage may have gone down: deleted,
        a pod turning terminal (``QuotaV1Pod`` false) or being deleted, another object's usage changed."""
        def updated(old: Object, new: Object) -> None:
            if (group, resource) == ("", "pods"):
                released = (not pod_is_terminal(old) and pod_is_terminal(new)) or \
                    (not meta(old).get("deletionTimestamp") and bool(meta(new).get("deletionTimestamp")))
            else:
                released = usage(group, resource, old) != usage(group, resource, new)
            if released:
                self._replenish(group, resource, new)

        def deleted(obj: Object | DeletedFinalStateUnknown) -> None:
            self._replenish(group, resource, unwrap(obj))

        informer.add_event_handler(None, updated, deleted)
        self.watched[(group, resource)] = informer

    def _replenish(self, group: str, resource: str, obj: Object) -> None:
        """``replenishQuota``: the quotas of the object's namespace that track something of its kind."""
        for quota in self.quota_informer.indexer.by_index(NAMESPACE_INDEX, meta(obj).get("namespace", "")):
            if matching_resources(group, resource, ((quota.get("spec") or {}).get("hard") or {}).keys()):
                self.enqueue(quota)

    # --- sync ---------------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        quota = self.quota_informer.indexer.get_by_key(key)
        if quota is None:
            return
        spec = quota.get("spec") or {}
        names = covered_names(spec, (spec.get("hard") or {}).keys())
        namespace = meta(quota).get("namespace", "")
        used: ResourceList = {}
        for group, resource in self._resources_for(names):
            for obj in await self._objects(group, resource, namespace):
                if matches_scopes(spec, group, resource, obj):
                    used = add(used, mask(usage(group, resource, obj), matching_resources(group, resource, names)))
        status = calculate_status(quota, used)
        if status == self._normalized(quota.get("status") or {}):
            return
        new = copy.deepcopy(quota)
        new["status"] = status
        await self.clientset.resource(RESOURCE_QUOTAS).update_status(new)

    @staticmethod
    def _normalized(status: dict[str, Any]) -> dict[str, Any]:
        return {"hard": status.get("hard") or {}, "used": to_wire(parse_list(status.get("used")))}

    def _resources_for(self, names: set[str]) -> set[tuple[str, str]]:
        """The resources whose objects can use any of ``names``."""
        found = {key for key in self.watched if matching_resources(key[0], key[1], names)}
        for name in names:
            if name.startswith("count/"):
                resource, _, group = name.removeprefix("count/").partition(".")
                found.add((group, resource))
        return found

    async def _objects(self, group: str, resource: str, namespace: str) -> list[Object]:
        informer = await self._informer_for(group, resource)
        return informer.indexer.by_index(NAMESPACE_INDEX, namespace) if informer is not None else []

    async def _informer_for(self, group: str, resource: str) -> SharedInformer | None:
        """The informer counting a resource, started on first use; None for a resource nobody serves."""
        informer = self.watched.get((group, resource))
        if informer is None:
            known = next((r for r in RESOURCES if (r.group, r.plural) == (group, resource) and r.namespaced), None)
            if known is None:
                known = await self._discover(group, resource)
            if known is None:
                return None
            informer = self.watched.get((group, resource))
            if informer is None:  # no other worker started it meanwhile
                informer = self.factory.informer(known)
                self._watch(group, resource, informer)
                if self._stop is not None:
                    self.factory.start(self._stop)
        if not informer.has_synced() and \
                not await wait_for_cache_sync(informer, timeout=SYNC_TIMEOUT, stop=self._stop):
            raise TimeoutError(f"{resource}.{group}: informer not synced")  # the worker retries the quota
        return informer

    async def _discover(self, group: str, resource: str) -> Resource | None:
        """A resource kubeclient has no constant for (a custom resource): its preferred version from discovery."""
        path = f"/apis/{group}" if group else "/api"
        try:
            doc = await self.clientset.rest.request("GET", path)
        except Exception:  # noqa: BLE001 - an unserved group counts nothing
            return None
        version = (doc.get("preferredVersion") or {}).get("version") if group else (doc.get("versions") or [""])[0]
        if not version:
            return None
        listing = await self.clientset.rest.request("GET", f"{path}/{version}")
        for item in listing.get("resources") or []:
            if item.get("name") == resource and item.get("namespaced"):
                return Resource(group, version, resource, item.get("kind", ""), True)
        return None
