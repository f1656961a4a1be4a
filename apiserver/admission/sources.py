"""What the admission plugins read: stored objects, from this apiserver's watch caches.

Every apiserver keeps its own caches current through etcd watches, so a webhook configuration or a policy created
through one apiserver takes effect in all of them as soon as its watch event arrives (kube-apiserver's plugins read
informers the same way). ``Sources`` is the plugins' only view of the registry.
"""

from __future__ import annotations

import builtins
from typing import Any

from ..registry.registry import Registry
from ..registry.strategy import Strategy
from ..storage.cacher import CachedObject

Object = dict[str, Any]


class Sources:
    """Cached reads over the registry, keyed by group and plural resource name."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def cached(self, group: str, resource: str) -> list[CachedObject]:
        """Every object of a resource, in key order (cluster-scoped: name order); [] for an unserved one."""
        store = self.registry.stores.get((group, resource))
        return store.cache.list() if store is not None else []

    def revision(self, group: str, resource: str) -> int:
        """The cache's revision: it changes whenever the resource's objects may have."""
        store = self.registry.stores.get((group, resource))
        return store.cache.rv if store is not None else 0

    def get(self, group: str, resource: str, namespace: str | None, name: str) -> Object | None:
        store = self.registry.stores.get((group, resource))
        if store is None:
            return None
        co = store.cache.get(store.etcd_key(namespace, name))
        return co.obj if co is not None else None

    def list(self, group: str, resource: str, namespace: str | None = None) -> list[Object]:
        store = self.registry.stores.get((group, resource))
        if store is None:
            return []
        objects = store.cache.list()
        if namespace is not None and store.strategy.namespaced:
            return [co.obj for co in objects if co.fields.get("metadata.namespace") == namespace]
        return [co.obj for co in objects]

    def equivalents(self, group: str, resource: str) -> builtins.list[Strategy]:
        """Every served version of a resource (matchPolicy Equivalent), the request's own among them."""
        return [store.strategy for (g, _v, r), store in self.registry.versions.items() if g == group and r == resource]

    def find(self, group: str, version: str, kind: str) -> Any:
        """The store serving a kind (paramKind), or None."""
        for (g, v, _r), store in self.registry.versions.items():
            if g == group and v == version and store.strategy.kind == kind:
                return store
        return None
