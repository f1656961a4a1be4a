"""The garbage collector (``pkg/controller/garbagecollector``): ``ownerReferences`` and deletion propagation.

The apiserver only marks; this controller does the rest:

* **Background** (kubectl's default): the owner is removed at once; its dependents now have a *dangling*
  ownerReference (the owner is gone, or a namesake with another uid exists) and are deleted.  A dependent that
  still has another, live owner only loses the dangling reference.
* **Foreground**: the owner stays, with ``deletionTimestamp`` and the ``foregroundDeletion`` finalizer, while its
  dependents are deleted; once no dependent with ``blockOwnerDeletion`` remains, the finalizer is removed and
  the apiserver deletes the owner.  A dependent that has dependents of its own is deleted in the foreground too.
* **Orphan** (``--cascade=orphan``): the owner carries the ``orphan`` finalizer; its dependents lose their
  ownerReference to it, then the finalizer is removed.

The graph is not kept as a separate structure: every monitored resource's informer indexes its objects by the
uids they name as owners, so "the dependents of X" is an index lookup and "is X's owner alive" a cache lookup,
confirmed with a GET before anything is deleted (a cache can lag behind a just-created owner).

Monitors: the built-in resources at start, then every resource discovery lists with list, watch and delete,
looked up again every ``discovery_interval`` (kube's GC resyncs its monitors from discovery every 30 s), so
ownerReferences to and from custom resources work; a resource no longer served loses its monitor.

Queue keys are ``<verb>|<resource>|<namespace/name>`` (resource: ``plural`` or ``plural.group``) with verb
``delete`` (``attemptToDelete``: decide about an
object with owners, or an owner deleting its dependents) or ``orphan``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from typing import Any

from apimachinery.errors import NotFound
from apimachinery.meta import Object
from controllers.support.base import Controller, ensure_indexer, key_of, unwrap
from controllers.support.discovery import discover
from controllers.support.podutil import meta
from kubeclient import (
    CONFIG_MAPS,
    CONTROLLER_REVISIONS,
    CRON_JOBS,
    DAEMON_SETS,
    DEPLOYMENTS,
    ENDPOINT_SLICES,
    ENDPOINTS,
    JOBS,
    LEASES,
    NODES,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SERVICES,
    Clientset,
    DeletedFinalStateUnknown,
    InformerFactory,
    Resource,
)
from kubeclient.informer import SharedInformer, wait_for_cache_sync

log = logging.getLogger(__name__)

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
OWNER_UID_INDEX = "ownerUID"
MONITORED: tuple[Resource, ...] = (PODS, REPLICA_SETS, REPLICATION_CONTROLLERS, DEPLOYMENTS, JOBS, CRON_JOBS,
                                   SERVICES, CONFIG_MAPS, LEASES, NODES, ENDPOINTS, ENDPOINT_SLICES, DAEMON_SETS,
                                   CONTROLLER_REVISIONS)
DISCOVERY_INTERVAL = 30.0
MONITOR_SYNC_WAIT = 10.0  # how long a discovery round waits for its new monitors' first lists
MONITOR_VERBS = frozenset({"list", "watch", "delete"})
# kube's DefaultIgnoredResources: events are never owners nor collected (and events.k8s.io/v1 events are the core
# ones again: monitoring both would watch every event twice).
IGNORED_RESOURCES = frozenset({"events", "events.events.k8s.io"})


def monitor_key(resource: Resource) -> str:
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


def owner_uid_index(obj: Object) -> list[str]:
    return [r["uid"] for r in meta(obj).get("ownerReferences") or [] if r.get("uid")]


def _finalizers(obj: Object) -> list[str]:
    return list(meta(obj).get("finalizers") or [])


def deleting_dependents(obj: Object | None) -> bool:
    return obj is not None and bool(meta(obj).get("deletionTimestamp")) and FOREGROUND in _finalizers(obj)


class GarbageCollector(Controller):
    name = "garbage-collector-controller"
    queue_name = "garbage_collector_attempt_to_delete"

    def __init__(self, clientset: Clientset, factory: InformerFactory, *, workers: int = 20,
                 resources: tuple[Resource, ...] = MONITORED,
                 discovery_interval: float | None = DISCOVERY_INTERVAL) -> None:
        super().__init__(workers=workers)
        self.clientset = clientset
        self.discovery_interval = discovery_interval
        self.monitors: dict[str, SharedInformer] = {}
        self._by_kind: dict[tuple[str, str], Resource] = {}
        # Monitors added from discovery, each with its own stop event (they go when their resource goes).
        self._discovered: dict[str, tuple[asyncio.Event, asyncio.Task[None]]] = {}
        for resource in resources:
            self._monitor(factory.informer(resource), resource)
        self.informers = list(self.monitors.values())

    def _monitor(self, informer: SharedInformer, resource: Resource) -> None:
        ensure_indexer(informer, OWNER_UID_INDEX, owner_uid_index)
        self.monitors[monitor_key(resource)] = informer
        self._by_kind[(resource.api_version, resource.kind)] = resource
        self._watch(informer, resource)

    # --- monitors from discovery ---------------------------------------------------------------------------
    def background(self) -> list[asyncio.Task[None]]:
        if self.discovery_interval is None:
            return []
        return [asyncio.create_task(self._resync_monitors(), name=f"{self.name} discovery")]

    async def _resync_monitors(self) -> None:
        assert self.discovery_interval is not None
        while True:
            try:
                await self.sync_monitors()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # noqa: BLE001 - the apiserver away: the next round tries again
                log.warning("garbage collector discovery: %s", err)
            await asyncio.sleep(self.discovery_interval)

    async def sync_monitors(self) -> None:
        """Monitor every deletable resource discovery lists; stop monitoring the ones no longer served."""
        served = {monitor_key(r): r for r in await discover(self.clientset, MONITOR_VERBS)
                  if monitor_key(r) not in IGNORED_RESOURCES}
        added: set[tuple[str, str]] = set()
        started: list[SharedInformer] = []
        for key, resource in served.items():
            if key in self.monitors:
                continue
            informer = SharedInformer(self.clientset.resource(resource))
            self._monitor(informer, resource)
            stop = asyncio.Event()
            self._discovered[key] = (stop, asyncio.create_task(informer.run(stop), name=f"gc monitor {key}"))
            added.add((resource.api_version, resource.kind))
            started.append(informer)
            log.info("garbage collector monitors %s", key)
        if added:  # objects whose owners were of a kind unknown until now: decide about them again, once the new
            # monitors have listed (an owner deleted before its monitor's first list sends it no delete event, so
            # a dependent decided while that owner lived would wait for the next resync)
            await wait_for_cache_sync(*started, timeout=MONITOR_SYNC_WAIT)
            for informer in list(self.monitors.values()):
                for obj in informer.indexer.list():
                    refs = meta(obj).get("ownerReferences") or []
                    if any((r.get("apiVersion"), r.get("kind")) in added for r in refs):
                        self._add("delete", informer.resource, obj)
        for key in [k for k in self._discovered if k not in served]:
            stop, task = self._discovered.pop(key)
            stop.set()
            self.monitors.pop(key)
            self._by_kind = {k: r for k, r in self._by_kind.items() if monitor_key(r) != key}
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            log.info("garbage collector no longer monitors %s", key)

    async def run(self, stop: asyncio.Event) -> None:
        try:
            await super().run(stop)
        finally:
            for event, task in self._discovered.values():
                event.set()
                task.cancel()
            await asyncio.gather(*(t for _, t in self._discovered.values()), return_exceptions=True)

    # --- handlers ------------------------------------------------------------------------------------------
    def _watch(self, informer: SharedInformer, resource: Resource) -> None:
        def on_add(obj: Object) -> None:
            self._changed(resource, None, obj)

        def on_update(old: Object, new: Object) -> None:
            self._changed(resource, old, new)

        def on_delete(obj: Object | DeletedFinalStateUnknown) -> None:
            self._deleted(resource, unwrap(obj))

        informer.add_event_handler(on_add, on_update, on_delete)

    def _add(self, verb: str, resource: Resource, obj: Object) -> None:
        self.queue.add(f"{verb}|{monitor_key(resource)}|{key_of(obj)}")

    def _changed(self, resource: Resource, old: Object | None, new: Object) -> None:
        m = meta(new)
        if old is not None and meta(old).get("resourceVersion") == m.get("resourceVersion"):
            return
        if m.get("deletionTimestamp"):
            if ORPHAN in _finalizers(new):
                self._add("orphan", resource, new)
            if FOREGROUND in _finalizers(new):
                self._add("delete", resource, new)
                for dependent_resource, dependent in self._dependents(m["uid"]):
                    self._add("delete", dependent_resource, dependent)
        refs_changed = old is None or meta(old).get("ownerReferences") != m.get("ownerReferences")
        if m.get("ownerReferences") and refs_changed:
            self._add("delete", resource, new)

    def _deleted(self, resource: Resource, obj: Object) -> None:
        """Its dependents may now dangle; owners waiting in the foreground may now be free to go."""
        m = meta(obj)
        for dependent_resource, dependent in self._dependents(m.get("uid") or ""):
            self._add("delete", dependent_resource, dependent)
        for ref in m.get("ownerReferences") or []:
            owner_resource, owner = self._cached_owner(ref, m.get("namespace"))
            if owner_resource is not None and deleting_dependents(owner):
                self._add("delete", owner_resource, owner)  # type: ignore[arg-type]

    # --- graph lookups -------------------------------------------------------------------------------------
    def _dependents(self, uid: str) -> list[tuple[Resource, Object]]:
        out = []
        for _plural, informer in self.monitors.items():
            for obj in informer.indexer.by_index(OWNER_UID_INDEX, uid):
                out.append((informer.resource, obj))
        return out

    def _resource_of(self, ref: dict[str, Any]) -> Resource | None:
        return self._by_kind.get((ref.get("apiVersion", ""), ref.get("kind", "")))

    def _cached_owner(self, ref: dict[str, Any], namespace: str | None) -> tuple[Resource | None, Object | None]:
        resource = self._resource_of(ref)
        if resource is None:
            return None, None
        key = f"{namespace}/{ref.get('name')}" if resource.namespaced else ref.get("name", "")
        monitor = self.monitors.get(monitor_key(resource))
        if monitor is None:
            return None, None
        owner = monitor.indexer.get_by_key(key)
        return resource, (owner if owner is not None and meta(owner).get("uid") == ref.get("uid") else None)

    async def _owner(self, ref: dict[str, Any], namespace: str | None) -> tuple[str, Object | None]:
        """("solid" | "dangling" | "waiting" | "unknown", the owner): the state of one ownerReference."""
        resource, owner = self._cached_owner(ref, namespace)
        if resource is None:
            return "unknown", None  # a kind we do not monitor: never delete on its account
        if owner is None:  # confirm against the apiserver before calling it gone
            try:
                fresh = await self.clientset.resource(resource).get(ref.get("name", ""),
                                                                    namespace if resource.namespaced else None)
            except NotFound:
                return "dangling", None
            if meta(fresh).get("uid") != ref.get("uid"):
                return "dangling", None
            owner = fresh
        return ("waiting" if deleting_dependents(owner) else "solid"), owner

    # --- sync ----------------------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        verb, plural, obj_key = key.split("|", 2)
        informer = self.monitors.get(plural)
        obj = informer.indexer.get_by_key(obj_key) if informer is not None else None
        if obj is None or informer is None:
            return
        if verb == "orphan":
            await self._orphan_dependents(informer.resource, obj)
        elif deleting_dependents(obj):
            await self._process_deleting_dependents(informer.resource, obj)
        elif await self._attempt_to_delete(informer.resource, obj) and self.discovery_interval is not None:
            # an owner of a kind discovery has not shown yet (a CRD just created): look again after the next one
            self.queue.add_after(key, self.discovery_interval)

    async def _attempt_to_delete(self, resource: Resource, obj: Object) -> bool:
        """Decide about an object with owners; True when an owner's kind is unknown (to be decided later)."""
        m = meta(obj)
        refs = m.get("ownerReferences") or []
        if not refs or m.get("deletionTimestamp"):
            return False
        states = [(ref, *(await self._owner(ref, m.get("namespace")))) for ref in refs]
        unknown = any(state == "unknown" for _, state, _ in states)
        if all(state in ("solid", "unknown") for _, state, _ in states):
            return unknown
        # About to act: decide on the object as stored now, not as cached (an orphaning may just have
        # removed the reference we are looking at).
        try:
            fresh = await self.clientset.resource(resource).get(m["name"], m.get("namespace"))
        except NotFound:
            return False
        m = meta(fresh)
        if m.get("uid") != meta(obj).get("uid") or m.get("deletionTimestamp") or not m.get("ownerReferences"):
            return False
        obj = fresh
        states = [(ref, *(await self._owner(ref, m.get("namespace")))) for ref in m["ownerReferences"]]
        solid = [ref for ref, state, _ in states if state in ("solid", "unknown")]
        dangling = [ref for ref, state, _ in states if state == "dangling"]
        waiting = [ref for ref, state, _ in states if state == "waiting"]
        if solid:
            if dangling or waiting:  # keep the live owners, drop the others
                await self._remove_owner_refs(resource, obj, {r["uid"] for r in dangling + waiting})
            return unknown
        if waiting and self._dependents(m["uid"]):
            log.info("deleting %s %s in the foreground (its owner waits for its dependents)", resource.kind,
                     key_of(obj))
            await self._delete(resource, obj, "Foreground")
            return False
        policy = "Orphan" if ORPHAN in _finalizers(obj) else "Foreground" if FOREGROUND in _finalizers(obj) \
            else "Background"
        log.info("deleting %s %s: no live owner", resource.kind, key_of(obj))
        await self._delete(resource, obj, policy)
        return False

    async def _process_deleting_dependents(self, resource: Resource, owner: Object) -> None:
        """Foreground: once no blocking dependent is left, drop the finalizer (the apiserver then deletes)."""
        uid = meta(owner)["uid"]
        blocking = []
        for dependent_resource, dependent in self._dependents(uid):
            refs = [r for r in meta(dependent).get("ownerReferences") or [] if r.get("uid") == uid]
            if any(r.get("blockOwnerDeletion") for r in refs):
                blocking.append((dependent_resource, dependent))
        if not blocking:
            await self._remove_finalizer(resource, owner, FOREGROUND)
            return
        for dependent_resource, dependent in blocking:
            if not deleting_dependents(dependent):
                self._add("delete", dependent_resource, dependent)

    async def _orphan_dependents(self, resource: Resource, owner: Object) -> None:
        m = meta(owner)
        if not m.get("deletionTimestamp") or ORPHAN not in _finalizers(owner):
            return
        for dependent_resource, dependent in self._dependents(m["uid"]):
            await self._remove_owner_refs(dependent_resource, dependent, {m["uid"]})
        await self._remove_finalizer(resource, owner, ORPHAN)

    # --- writes --------------------------------------------------------------------------------------------
    async def _delete(self, resource: Resource, obj: Object, policy: str) -> None:
        m = meta(obj)
        try:  # noqa: SIM105 (the comment below says why a miss is fine)
            await self.clientset.resource(resource).delete(m["name"], m.get("namespace"),
                                                           propagation_policy=policy,  # type: ignore[arg-type]
                                                           preconditions={"uid": m["uid"]})
        except NotFound:
            pass

    async def _remove_owner_refs(self, resource: Resource, obj: Object, uids: set[str]) -> None:
        m = meta(obj)
        body = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid} for uid in sorted(uids)],
                             "uid": m["uid"]}}
        with contextlib.suppress(NotFound):
            await self.clientset.resource(resource).patch(m["name"], body, "strategic", m.get("namespace"))

    async def _remove_finalizer(self, resource: Resource, obj: Object, finalizer: str) -> None:
        """PUT without ``finalizer``, conditional on the cached resourceVersion (a 409 is retried)."""
        if finalizer not in _finalizers(obj):
            return
        updated = copy.deepcopy(obj)
        remaining = [f for f in _finalizers(obj) if f != finalizer]
        if remaining:
            updated["metadata"]["finalizers"] = remaining
        else:
            updated["metadata"].pop("finalizers", None)
        with contextlib.suppress(NotFound):
            await self.clientset.resource(resource).update(updated)
