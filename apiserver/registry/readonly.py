"""Read-only computed resources: kinds listed and read, never written or stored (ComponentStatuses).

kube-apiserver serves ``componentstatuses`` with a ``rest.Getter`` + ``rest.Lister`` and no storage: each GET
computes the objects afresh (it probes the components), so there is no watch cache, no resourceVersion and no
write verb (405). A ``ReadOnlyStrategy`` computes the objects; ``ReadOnlyStore`` is what the REST handler reads.
"""

from __future__ import annotations

from typing import ClassVar

import orjson

from apimachinery import errors

from ..storage.cacher import CachedObject
from .store import kubernetes_order
from .strategy import Object, Strategy


class ReadOnlyStrategy(Strategy):
    """A resource whose objects are computed when they are read."""

    verbs: ClassVar[tuple[str, ...]] = ("get", "list")
    bumps_generation = False

    async def items(self) -> list[Object]:
        """Every object, computed now, in the order a list answers them."""
        raise NotImplementedError


class ReadOnlyStore:
    """GET and LIST of one read-only resource."""

    def __init__(self, strategy: ReadOnlyStrategy) -> None:
        self.strategy = strategy

    async def list(self) -> list[CachedObject]:
        return [self._cached(obj) for obj in await self.strategy.items()]

    async def get(self, name: str) -> CachedObject:
        for co in await self.list():
            if co.key == name:
                return co
        raise errors.not_found(self.strategy.resource, name, self.strategy.group)

    def _cached(self, obj: Object) -> CachedObject:
        obj = kubernetes_order({"apiVersion": self.strategy.api_version, "kind": self.strategy.kind, **obj})
        obj.setdefault("metadata", {}).setdefault("creationTimestamp", None)
        return CachedObject(obj["metadata"].get("name") or "", obj, orjson.dumps(obj), 0, {}, {})
