"""The CRD controllers every apiserver runs (kube-apiextensions-apiserver's naming, establishing, finalizing and
serving controllers), driven by the apiserver's own CRD watch cache.

Several apiservers may share one etcd: each watches the CRDs through its watch cache and serves what they define
— within one event of the CRD being Established, without restart. Status writes are idempotent (an update that
changes nothing is not written), so apiservers agreeing on a CRD's status do not fight over it. For each CRD:

1. names: ``acceptedNames`` and ``NamesAccepted`` (a plural, singular, short name, kind or list kind another CRD
   of the group accepted first is a conflict: ``"foos" is already in use``), with ``Established`` False
   ``Installing`` until then (``naming_controller.go``);
2. establishing: names accepted → ``Established`` True ``InitialNamesAccepted``;
3. serving: an Established CRD's served versions are installed in the registry (discovery follows), its
   OpenAPI published; a CRD that is gone or not Established is no longer served;
4. finalizing: a CRD being deleted with the ``customresourcecleanup`` finalizer gets ``Terminating``
   ``InstanceDeletionInProgress``, its custom resources are deleted (finalizers of their own are waited for),
   then the finalizer is removed and the CRD goes (``crd_finalizer.go``).

Every sync re-reads the CRD from the cache and is idempotent; a failed sync is retried after a short delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable
from typing import Any

from apimachinery import errors
from apiserver.admission.webhook.client import WebhookClient
from apiserver.registry.decoder import Decoder
from apiserver.registry.registry import Registry
from apiserver.registry.store import DeleteOptions, ResourceStore
from apiserver.storage.cacher import ObjectFilter

from . import crd as crds
from .conversion import WebhookConverter
from .fieldschema import field_schema
from .schemavalidation import RuleValidator
from .strategy import CustomResourceStrategy

log = logging.getLogger(__name__)
Object = dict[str, Any]
RETRY_SECONDS = 0.5
CRDS = (crds.GROUP, "customresourcedefinitions")


class CRDController:
    """Keeps this apiserver serving what the stored CRDs define, and their status current."""

    def __init__(self, registry: Registry, decoder: Decoder,
                 on_served: Callable[[list[CustomResourceStrategy]], None] = lambda _: None,
                 rules: RuleValidator | None = None, webhooks: WebhookClient | None = None) -> None:
        self.registry = registry
        self.webhooks = webhooks  # how conversion webhooks are called (the admission webhooks' client)
        self.decoder = decoder
        self.on_served = on_served
        self.rules = rules
        self.served: dict[str, tuple[Any, list[CustomResourceStrategy]]] = {}  # CRD name → (signature, strategies)
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.queued: set[str] = set()
        self.tasks: list[asyncio.Task[None]] = []
        self.cleaning: dict[str, asyncio.Task[None]] = {}

    @property
    def store(self) -> ResourceStore:
        return self.registry.get(*CRDS)

    async def start(self) -> None:
        for co in self.store.cache.list():
            await self._sync_quietly(co.obj["metadata"]["name"])
        self.tasks = [asyncio.create_task(self._watch(), name="crd-watch"),
                      asyncio.create_task(self._work(), name="crd-sync")]

    async def stop(self) -> None:
        for task in [*self.tasks, *self.cleaning.values()]:
            task.cancel()
        await asyncio.gather(*self.tasks, *self.cleaning.values(), return_exceptions=True)

    def enqueue(self, name: str) -> None:
        if name not in self.queued:
            self.queued.add(name)
            self.queue.put_nowait(name)

    async def _watch(self) -> None:
        while True:
            watcher = self.store.cache.watch(None, ObjectFilter())
            try:
                while (event := await watcher.next()) is not None:
                    obj = event[1].obj
                    self.enqueue(obj["metadata"]["name"])
                    group = (obj.get("spec") or {}).get("group")
                    if event[0] == "DELETED" or obj.get("status", {}).get("acceptedNames") != \
                            (obj.get("spec") or {}).get("names"):
                        for other in self.store.cache.list():  # names freed or claimed: the group's others again
                            if (other.obj.get("spec") or {}).get("group") == group:
                                self.enqueue(other.obj["metadata"]["name"])
            finally:
                watcher.close()

    async def _work(self) -> None:
        while True:
            name = await self.queue.get()
            self.queued.discard(name)
            await self._sync_quietly(name)

    async def _sync_quietly(self, name: str) -> None:
        try:
            await self.sync(name)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - etcd away, a conflict: retried
            log.warning("syncing CustomResourceDefinition %s: %s", name, err)
            asyncio.get_running_loop().call_later(RETRY_SECONDS, self.enqueue, name)

    async def sync(self, name: str) -> None:
        co = self.store.cache.get(self.store.etcd_key(None, name))
        if co is None:
            await self._unserve(name)
            return
        crd = co.obj
        if not crd["metadata"].get("deletionTimestamp"):
            crd = await self._update_names(crd)
        if crds.is_true(crd, "Established"):  # it stays so while terminating: served (refusing creates) until gone
            await self._serve(crd)
        else:
            await self._unserve(name)
        if crd["metadata"].get("deletionTimestamp") and crds.CLEANUP_FINALIZER in \
                (crd["metadata"].get("finalizers") or []) and name not in self.cleaning:
            task = asyncio.create_task(self._finalize(name), name=f"crd-cleanup {name}")
            self.cleaning[name] = task
            task.add_done_callback(lambda _t: self.cleaning.pop(name, None))

    # --- names and establishing -----------------------------------------------------------------------------
    def _names_in_use(self, crd: Object) -> tuple[set[str], set[str]]:
        resources: set[str] = set()
        kinds: set[str] = set()
        group = crd["spec"].get("group")
        for co in self.store.cache.list():
            other = co.obj
            if other["metadata"]["name"] == crd["metadata"]["name"] or other["spec"].get("group") != group:
                continue
            accepted = (other.get("status") or {}).get("acceptedNames") or {}
            resources.update(n for n in (accepted.get("plural"), accepted.get("singular"),
                                         *(accepted.get("shortNames") or [])) if n)
            kinds.update(n for n in (accepted.get("kind"), accepted.get("listKind")) if n)
        return resources, kinds

    def names_and_conditions(self, crd: Object) -> tuple[Object, crds.Condition, crds.Condition]:
        """``calculateNamesAndConditions``: the accepted names and the NamesAccepted and Established conditions."""
        resources, kinds = self._names_in_use(crd)
        requested = crd["spec"].get("names") or {}
        accepted = (crd.get("status") or {}).get("acceptedNames") or {}
        new = dict(accepted)
        cond: crds.Condition = {"type": "NamesAccepted", "status": "Unknown"}

        def conflict(reason: str, message: str) -> None:
            cond["status"], cond["reason"], cond["message"] = "False", reason, message

        for field, pool, reason in (("plural", resources, "PluralConflict"),
                                    ("singular", resources, "SingularConflict")):
            want = requested.get(field, "")
            if want != accepted.get(field) and want in pool:
                conflict(reason, f'"{want}" is already in use')
            else:
                new[field] = want
        if list(requested.get("shortNames") or []) != list(accepted.get("shortNames") or []):
            taken = [s for s in requested.get("shortNames") or []
                     if s not in (accepted.get("shortNames") or []) and s not in (accepted.get("plural"),
                                                                                 accepted.get("singular"))
                     and s in resources]
            if taken:
                conflict("ShortNamesConflict", ", ".join(f'"{s}" is already in use' for s in taken))
            else:
                new["shortNames"] = list(requested.get("shortNames") or [])
        for field, reason in (("kind", "KindConflict"), ("listKind", "ListKindConflict")):
            want = requested.get(field, "")
            if want != accepted.get(field) and want in kinds:
                conflict(reason, f'"{want}" is already in use')
            else:
                new[field] = want
        if requested.get("categories"):
            new["categories"] = list(requested["categories"])
        else:
            new.pop("categories", None)
        if not new.get("shortNames"):
            new.pop("shortNames", None)
        if cond["status"] == "Unknown":
            cond["status"], cond["reason"], cond["message"] = "True", "NoConflicts", "no conflicts found"
        established = crds.condition(crd, "Established") or {
            "type": "Established", "status": "False", "reason": "NotAccepted", "message": "not all names are accepted"}
        if cond["status"] == "True":
            # The establishing controller's step, taken at once: this apiserver installs the endpoints right
            # after the write, in the same sync.
            established = {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                           "message": "the initial names have been accepted"}
        return new, cond, established

    async def _update_names(self, crd: Object) -> Object:
        names, accepted, established = self.names_and_conditions(crd)
        current = crds.condition(crd, "NamesAccepted")
        current_est = crds.condition(crd, "Established")
        same = (crd.get("status") or {}).get("acceptedNames") == names and current is not None and \
            all(current.get(k) == accepted.get(k) for k in ("status", "reason", "message")) and \
            current_est is not None and current_est.get("status") == established.get("status")
        if same:
            return crd

        def update(obj: Object) -> Object:
            status = obj.setdefault("status", {})
            status["acceptedNames"] = names
            crds.set_condition(obj, accepted)
            crds.set_condition(obj, established)
            return obj

        try:
            co = await self.store.guaranteed_update(None, crd["metadata"]["name"], update, subresource="status")
        except errors.NotFound:
            return crd
        return co.obj

    # --- serving --------------------------------------------------------------------------------------------
    async def _serve(self, crd: Object) -> None:
        name = crd["metadata"]["name"]
        signature = (crd["metadata"].get("uid"), crd["spec"], (crd.get("status") or {}).get("acceptedNames"),
                     bool(crd["metadata"].get("deletionTimestamp")))
        if name in self.served and self.served[name][0] == signature:
            return
        served = crds.served_versions(crd)
        if not served:
            await self._unserve(name)
            return
        converter = None
        if (crd["spec"].get("conversion") or {}).get("strategy") == "Webhook" and self.webhooks is not None:
            converter = WebhookConverter(crd, self.webhooks, crds.storage_version(crd))
        strategies = [CustomResourceStrategy(crd, v["name"], self.rules, self.decoder, converter) for v in served]
        schemas = [field_schema(self.decoder.definitions, s.group, s.version, s.kind, s.schema) for s in strategies]
        if (strategies[0].group, strategies[0].resource) in self.registry.builtin:
            log.warning("not serving %s: the apiserver serves %s.%s itself", name, strategies[0].resource,
                        strategies[0].group)
            return
        previous = self.served.get(name)
        if previous is not None and (previous[1][0].group, previous[1][0].resource) != \
                (strategies[0].group, strategies[0].resource):
            await self._unserve(name)
        await self.registry.install(strategies, [s.decoder for s in strategies], schemas,
                                    crds.storage_version(crd), crds.version_priority)
        self.served[name] = (signature, strategies)
        log.info("serving %s (%s)", name, ", ".join(s.version for s in strategies))
        self._published()

    async def _unserve(self, name: str) -> None:
        entry = self.served.pop(name, None)
        if entry is None:
            return
        first = entry[1][0]
        await self.registry.uninstall(first.group, first.resource, crds.version_priority)
        log.info("no longer serving %s", name)
        self._published()

    def _published(self) -> None:
        self.on_served([s for _, strategies in self.served.values() for s in strategies])

    # --- finalizing -----------------------------------------------------------------------------------------
    async def _finalize(self, name: str) -> None:
        """Delete every custom resource of the CRD, then drop the cleanup finalizer (retried until done)."""
        while True:
            try:
                if await self._finalize_once(name):
                    return
            except asyncio.CancelledError:
                raise
            except errors.NotFound:
                return
            except Exception as err:  # noqa: BLE001 - retried
                log.warning("cleaning up custom resources of %s: %s", name, err)
            await asyncio.sleep(RETRY_SECONDS)

    async def _finalize_once(self, name: str) -> bool:
        co = self.store.cache.get(self.store.etcd_key(None, name))
        if co is None:
            return True
        crd = co.obj
        await self._set_terminating(name, "InstanceDeletionInProgress", "CustomResource deletion is in progress")
        entry = self.served.get(name)
        if entry is not None:
            strategy = entry[1][0]
            store = self.registry.stores.get((strategy.group, strategy.resource))
            if store is not None:
                await store.cache.wait_fresh()
                for item in list(store.cache.list()):
                    meta = item.obj["metadata"]
                    if not meta.get("deletionTimestamp"):
                        with contextlib.suppress(errors.NotFound):
                            await store.delete(meta.get("namespace"), meta["name"], DeleteOptions())
                await store.cache.wait_fresh()
                left = len(store.cache.list())
                if left:
                    await self._set_terminating(name, "InstanceDeletionCheck",
                                                f"could not confirm zero CustomResources remaining: {left} left")
                    return False
        await self._set_terminating(name, "InstanceDeletionCompleted", "removed all instances")

        def drop(obj: Object) -> Object:
            obj["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers") or []
                                             if f != crds.CLEANUP_FINALIZER]
            return obj

        await self.store.guaranteed_update(None, crd["metadata"]["name"], drop, subresource="status")
        return True

    async def _set_terminating(self, name: str, reason: str, message: str) -> None:
        def update(obj: Object) -> Object:
            obj = copy.deepcopy(obj)
            crds.set_condition(obj, {"type": "Terminating", "status": "True", "reason": reason, "message": message})
            return obj

        await self.store.guaranteed_update(None, name, update, subresource="status")
