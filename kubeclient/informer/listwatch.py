"""``ListerWatcher``: the two calls a reflector makes, bound to one resource, namespace and selectors.

Kept apart from ``ResourceClient`` so a reflector can run over anything that lists and watches (tests
script one directly).  ``ListWatch`` also restores ``kind``/``apiVersion`` on listed items — the wire omits
them in lists but not in watch events — so every object in an informer's store has the same shape.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

from kubeclient.client import ResourceClient
from kubeclient.informer.stats import ReflectorStats
from kubeclient.types import Object, WatchEvent


class ListerWatcher(Protocol):
    async def list(self, *, resource_version: str | None, limit: int | None,
                   continue_: str | None) -> Object:
        """One page of the collection (a ``*List`` object)."""
        ...

    def watch(self, *, resource_version: str, timeout_seconds: int | None,
              allow_bookmarks: bool) -> AsyncGenerator[WatchEvent, None]:
        """Changes after ``resource_version``; the caller closes the iterator to stop."""
        ...


class ListWatch:
    """``ListerWatcher`` over a ``ResourceClient`` with fixed namespace and selectors."""

    def __init__(self, client: ResourceClient, *, namespace: str | None = None, label_selector: str | None = None,
                 field_selector: str | None = None) -> None:
        self.client = client
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector

    async def list(self, *, resource_version: str | None, limit: int | None, continue_: str | None) -> Object:
        result = await self.client.list(self.namespace, label_selector=self.label_selector,
                                        field_selector=self.field_selector, limit=limit, continue_=continue_,
                                        resource_version=None if continue_ else (resource_version or None))
        kind, api_version = self.client.resource.kind, self.client.resource.api_version
        for item in result.get("items") or ():
            item.setdefault("kind", kind)
            item.setdefault("apiVersion", api_version)
        return result

    def watch(self, *, resource_version: str, timeout_seconds: int | None,
              allow_bookmarks: bool) -> AsyncGenerator[WatchEvent, None]:
        return self.client.watch(self.namespace, resource_version=resource_version,
                                 label_selector=self.label_selector, field_selector=self.field_selector,
                                 allow_bookmarks=allow_bookmarks, timeout_seconds=timeout_seconds)

    def __repr__(self) -> str:
        scope = self.namespace or "all namespaces"
        return f"ListWatch({self.client.resource.plural}, {scope})"


def describe(lw: ListerWatcher, name: str) -> ReflectorStats:
    """Fresh stats naming what ``lw`` lists and watches (its resource, scope and selectors when it is a
    ``ListWatch``; ``name`` otherwise)."""
    if isinstance(lw, ListWatch):
        resource = lw.client.resource
        plural = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
        return ReflectorStats(plural, lw.namespace or "", lw.label_selector or "", lw.field_selector or "")
    return ReflectorStats(name)
