"""All served resources, their stores, and the cross-resource rules (namespace lifecycle, bootstrap objects)."""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apimachinery import errors
from apimachinery.errors import Cause
from apimachinery.meta import json_copy

from ..fieldmanager import Schema
from ..storage.encryptionconfig import EncryptionConfig
from ..storage.etcd3 import EtcdStorage
from ..storage.leases import DEFAULT_REUSE_SECONDS
from .decoder import BodyDecoder, Decoder
from .masterleases import MasterLeases
from .readonly import ReadOnlyStore, ReadOnlyStrategy
from .store import ETCD_MAX_REQUEST_BYTES, ResourceStore
from .strategy import Object, Strategy
from .virtual import VirtualStore, VirtualStrategy

log = logging.getLogger(__name__)

# Namespaces kube-apiserver creates at start-up (the last one holds node heartbeat Leases).
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# How often the bootstrap objects are checked again (kube-apiserver's bootstrap controller: 10 s).
BOOTSTRAP_INTERVAL = 10.0
# How long after a namespace's DELETE creates in it read the namespace afresh (kube's NamespaceLifecycle
# forceLiveLookupTTL): the watch cache may not have the deletion yet.
FORCE_LIVE_LOOKUP_SECONDS = 30.0


@dataclass(frozen=True)
class BootstrapObject:
    """An object the apiserver creates at start-up and every ``BOOTSTRAP_INTERVAL`` after when it is missing
    (kube-apiserver's bootstrap controller: a deleted ``default/kubernetes`` Service comes back).

    With ``points_at`` (the ``ip:port`` an object of this kind names), an existing one is brought back to ``obj``
    (all but metadata; its labels are added) at start-up, and later when it names no live apiserver
    (``masterleases``), as the endpoint reconciler does for ``default/kubernetes``.

    With ``keep_spec``, an existing one for which it answers True is brought back to ``obj`` whenever it differs
    (API Priority and Fairness's ``apf.kubernetes.io/autoupdate-spec``)."""

    group: str
    resource: str
    namespace: str | None
    obj: Object
    points_at: Callable[[Object], str | None] | None = None
    keep_spec: Callable[[Object], bool] | None = None

    def differs(self, current: Object) -> bool:
        return any(current.get(k) != v for k, v in self.obj.items() if k not in ("metadata", "apiVersion", "kind"))

    def reconciled(self, current: Object) -> Object:
        new = {**current, **{k: v for k, v in copy.deepcopy(self.obj).items() if k != "metadata"}}
        labels = {**(current["metadata"].get("labels") or {}), **(self.obj["metadata"].get("labels") or {})}
        new["metadata"] = {**current["metadata"], "labels": labels}
        return new


def system_namespaces() -> list[BootstrapObject]:
    return [BootstrapObject("", "namespaces", None, {"metadata": {"name": name}}) for name in SYSTEM_NAMESPACES]


class Registry:
    """One ``ResourceStore`` per stored resource, one ``VirtualStore`` per virtual (create-only) resource and one
    ``ReadOnlyStore`` per computed read-only resource, looked up by group + plural name."""

    def __init__(self, strategies: list[Strategy], storage: EtcdStorage, cache_capacity: int = 10_000,
                 decoder: Decoder | None = None, on_warning: Callable[[str], None] | None = None,
                 bootstrap: Sequence[BootstrapObject] | None = None,
                 bootstrap_interval: float = BOOTSTRAP_INTERVAL, leases: MasterLeases | None = None,
                 encryption: EncryptionConfig | None = None,
                 max_request_bytes: int = ETCD_MAX_REQUEST_BYTES, ttls: Mapping[str, int] | None = None,
                 lease_reuse_seconds: int = DEFAULT_REUSE_SECONDS) -> None:
        self.storage = storage
        self.cache_capacity = cache_capacity
        self._deleted_namespaces: dict[str, float] = {}  # name → until when creates in it look it up afresh
        self.on_warning = on_warning
        self.leases = leases  # None: no other apiserver is considered (every check puts this one back)
        self.bootstrap = list(bootstrap) if bootstrap is not None else system_namespaces()  # namespaces first
        self.bootstrap_interval = bootstrap_interval
        self._bootstrapper: asyncio.Task[None] | None = None
        self.strategies = strategies
        schema = Schema(decoder.definitions if decoder is not None else None)
        # Every served version of a stored resource has its store (over the same etcd keys); ``stores`` holds the
        # storage version's, the first strategy listed for the resource.
        self.versions: dict[tuple[str, str, str], ResourceStore] = {
            (s.group, s.version, s.resource): ResourceStore(
                s, storage, cache_capacity, decoder, on_warning, schema,
                encryption.transformer_for(s.group, s.resource) if encryption is not None else None,
                max_request_bytes)
            for s in strategies if not isinstance(s, (VirtualStrategy, ReadOnlyStrategy))
        }
        self.stores: dict[tuple[str, str], ResourceStore] = {}
        for (group, _, resource), store in self.versions.items():
            self.stores.setdefault((group, resource), store)
        for store in self.versions.values():  # objects that expire: ttls by group-qualified resource ("events")
            if (ttl := (ttls or {}).get(store.qualified, 0)) > 0:
                store.expire_after(ttl, lease_reuse_seconds)
        # What is served from start-up on: never replaced by a resource installed later (a CRD of the same name).
        self.builtin = {(s.group, s.resource) for s in strategies}
        self.virtual: dict[tuple[str, str], VirtualStore] = {
            (s.group, s.resource): VirtualStore(s, decoder, on_warning)
            for s in strategies if isinstance(s, VirtualStrategy)
        }
        self.read_only: dict[tuple[str, str], ReadOnlyStore] = {
            (s.group, s.resource): ReadOnlyStore(s) for s in strategies if isinstance(s, ReadOnlyStrategy)
        }
        self.group_versions: dict[str, list[str]] = {}
        for s in strategies:
            versions = self.group_versions.setdefault(s.group, [])
            if s.version not in versions:
                versions.append(s.version)

    # --- resources served while running (custom resources) ---------------------------------------------------
    async def install(self, strategies: Sequence[Strategy], decoders: Sequence[BodyDecoder], schemas: Sequence[Schema],
                      storage_version: str, version_order: Callable[[str], Any]) -> None:
        """Serve one resource's versions (one strategy per served version, all over the same etcd keys), or
        serve them with new rules. A version already served keeps its store and watch cache (its watchers stay
        connected) unless the resource moved (scope or plural) or its conversion now goes through a webhook or no
        longer does (the watch cache decodes otherwise); versions no longer listed stop being served."""
        group, resource = strategies[0].group, strategies[0].resource
        if (group, resource) in self.builtin:
            raise ValueError(f"{resource}.{group} is a built-in resource")
        wanted = {s.version for s in strategies}
        for (g, v, r), store in list(self.versions.items()):
            if (g, r) == (group, resource) and (v not in wanted or store.prefix != strategies[0].etcd_prefix().encode()
                                                or store.strategy.namespaced != strategies[0].namespaced
                                                or (store.strategy.converter is None) !=
                                                (strategies[0].converter is None)):
                await self._drop(g, v, r)
        for strategy, decoder, schema in zip(strategies, decoders, schemas, strict=False):
            key = (group, strategy.version, resource)
            existing = self.versions.get(key)
            if existing is not None:
                existing.reconfigure(strategy, decoder, schema)
                store = existing
            else:
                store = ResourceStore(strategy, self.storage, self.cache_capacity, decoder, self.on_warning, schema)
                await store.cache.start()
                self.versions[key] = store
            if strategy.version == storage_version:
                self.stores[(group, resource)] = store
        if (group, resource) not in self.stores:
            self.stores[(group, resource)] = self.versions[(group, strategies[0].version, resource)]
        self._regroup(group, version_order)

    async def uninstall(self, group: str, resource: str, version_order: Callable[[str], Any]) -> None:
        for g, v, r in [k for k in self.versions if (k[0], k[2]) == (group, resource)]:
            await self._drop(g, v, r)
        self._regroup(group, version_order)

    async def _drop(self, group: str, version: str, resource: str) -> None:
        store = self.versions.pop((group, version, resource))
        if self.stores.get((group, resource)) is store:
            del self.stores[(group, resource)]
        self.strategies = [s for s in self.strategies if (s.group, s.version, s.resource) != (group, version, resource)]
        await store.cache.stop()

    def _regroup(self, group: str, version_order: Callable[[str], Any]) -> None:
        """The group's strategies and versions as discovery lists them (preferred version first)."""
        served = [store.strategy for (g, _, _), store in self.versions.items() if g == group]
        self.strategies = [s for s in self.strategies if s.group != group] + \
            sorted(served, key=lambda s: (version_order(s.version), s.resource))
        versions = sorted({s.version for s in served}, key=version_order)
        if versions:
            self.group_versions[group] = versions
        else:
            self.group_versions.pop(group, None)

    def lookup(self, group: str, version: str, resource: str) -> ResourceStore | VirtualStore | ReadOnlyStore:
        store: ResourceStore | VirtualStore | ReadOnlyStore | None = self.versions.get((group, version, resource)) \
            or self.virtual.get((group, resource)) or self.read_only.get((group, resource))
        if store is None or store.strategy.version != version:
            raise errors.NotFound("the server could not find the requested resource")
        return store

    def get(self, group: str, resource: str) -> ResourceStore:
        return self.stores[(group, resource)]

    def strategies_of(self, group: str, version: str) -> list[Strategy]:
        return [s for s in self.strategies if s.group == group and s.version == version]

    async def start(self) -> None:
        await asyncio.gather(*(store.cache.start() for store in self.versions.values()))
        await self._bootstrap(starting=True)
        self._bootstrapper = asyncio.create_task(self._keep_bootstrapped(), name="bootstrap")

    async def stop(self) -> None:
        if self._bootstrapper is not None:
            self._bootstrapper.cancel()
            await asyncio.gather(self._bootstrapper, return_exceptions=True)
        if self.leases is not None:
            await self.leases.release()
        await asyncio.gather(*(store.cache.stop() for store in self.versions.values()))

    async def _keep_bootstrapped(self) -> None:
        while True:
            await asyncio.sleep(self.bootstrap_interval)
            try:
                await self._bootstrap()
            except Exception as err:  # noqa: BLE001 - etcd away, a namespace terminating...: the next round retries
                log.warning("bootstrap objects: %s", err)

    async def _bootstrap(self, starting: bool = False) -> None:
        """Each bootstrap object created when missing (or reconciled): the namespaces first, since the others
        live in them, then the rest at once (one after the other, ~20 etcd round trips at every start)."""
        live = await self.leases.renew() if self.leases is not None else set()
        first = [item.resource == "namespaces" and not item.group for item in self.bootstrap]
        namespaces = [item for item, is_first in zip(self.bootstrap, first, strict=True) if is_first]
        rest = [item for item, is_first in zip(self.bootstrap, first, strict=True) if not is_first]
        for batch in (namespaces, rest):
            await asyncio.gather(*(self._bootstrap_one(item, live, starting) for item in batch))

    async def _bootstrap_one(self, item: BootstrapObject, live: set[str], starting: bool) -> None:
        store = self.stores.get((item.group, item.resource))
        name = item.obj["metadata"]["name"]
        if store is None:
            return
        current = store.cache.get(store.etcd_key(item.namespace, name))
        if current is not None:
            if item.points_at is not None:
                named = item.points_at(current.obj)
                if starting or named == item.points_at(item.obj) or named not in live:
                    await store.guaranteed_update(item.namespace, name, item.reconciled)
            elif item.keep_spec is not None and item.keep_spec(current.obj) and item.differs(current.obj):
                await store.guaranteed_update(item.namespace, name, item.reconciled)
            return
        try:
            await store.create(json_copy(item.obj), item.namespace)
            log.info("created %s %s%s", store.strategy.singular, f"{item.namespace}/" if item.namespace else "",
                     name)
        except errors.AlreadyExists:
            pass

    def deleting(self, store: ResourceStore, name: str) -> None:
        """A DELETE of ``name`` in ``store`` is being admitted: a namespace's is remembered for
        ``FORCE_LIVE_LOOKUP_SECONDS`` (kube's NamespaceLifecycle ``forceLiveLookupCache``), so that creates in it
        do not trust a watch cache that may not have seen the deletion yet."""
        if store.qualified != "namespaces":
            return
        now = time.monotonic()
        self._deleted_namespaces = {n: t for n, t in self._deleted_namespaces.items() if t > now}
        self._deleted_namespaces[name] = now + FORCE_LIVE_LOOKUP_SECONDS

    async def check_namespace(self, namespace: str, resource: str, name: str) -> None:
        """Creating in a namespace needs it to exist and not be terminating (NamespaceLifecycle admission). From
        the watch cache; afresh (once the cache has caught up with etcd) when the cache has no such namespace, or
        has it active although it was deleted moments ago."""
        namespaces = self.stores.get(("", "namespaces"))
        if namespaces is None:
            return
        key = namespaces.etcd_key(None, namespace)
        co = namespaces.cache.get(key)
        recently_deleted = self._deleted_namespaces.get(namespace, 0.0) > time.monotonic()
        if co is None or (recently_deleted and not _terminating(co.obj)):
            await namespaces.cache.wait_fresh()
            co = namespaces.cache.get(key)
        if co is None:
            raise errors.not_found("namespaces", namespace)
        if _terminating(co.obj):  # (decoded on each access)
            raise errors.forbidden(
                resource, name, f"unable to create new content in namespace {namespace} because it is being terminated",
                causes=[Cause("NamespaceTerminating", f"namespace {namespace} is being terminated",
                              "metadata.namespace")])


def _terminating(namespace: Object) -> bool:
    return bool(namespace.get("metadata", {}).get("deletionTimestamp")) or \
        namespace.get("status", {}).get("phase") == "Terminating"
