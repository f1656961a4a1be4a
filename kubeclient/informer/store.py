"""``Store`` and ``Indexer``: the informer's local cache of objects, keyed by ``namespace/name``.

Guarantees (client-go's ``cache.Store``/``cache.Indexer``, without locks because one event loop owns it):

* One entry per key; ``add``/``update`` replace it, ``delete`` removes it; each returns the previous object,
  so callers learn whether a change was an add or an update without a second lookup.
* ``replace(items)`` swaps the whole content at once and returns what was there before (the reflector uses
  it to compute the deletes a relist implies).
* Indices are maintained on every write: ``by_index(name, value)`` is a dict lookup, never a scan.
* Stored objects are shared with every reader: never mutate one; copy it first.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from apimachinery.meta import namespace_key, split_key
from kubeclient.types import Object, ObjectKey


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """A tombstone: the object was deleted while the watch was down, so its final state was never seen.

    ``obj`` is the last state the store held.  Delete handlers receive either an object or this.
    """

    key: ObjectKey
    obj: Object


def meta_namespace_key(obj: Object | DeletedFinalStateUnknown) -> ObjectKey:
    """``namespace/name``, or ``name`` for cluster-scoped objects; a tombstone yields its own key."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    return namespace_key(meta.get("namespace"), name)


split_meta_namespace_key = split_key
"""The inverse of ``meta_namespace_key``: ``(namespace or None, name)``."""


IndexFunc = Callable[[Object], list[str]]

NAMESPACE_INDEX = "namespace"
NODE_NAME_INDEX = "spec.nodeName"


def namespace_index_func(obj: Object) -> list[str]:
    """Index by ``metadata.namespace`` (cluster-scoped objects are not indexed)."""
    ns = (obj.get("metadata") or {}).get("namespace")
    return [ns] if ns else []


def node_name_index_func(obj: Object) -> list[str]:
    """Index pods by ``spec.nodeName``; unscheduled pods are indexed under ``""``."""
    return [cast(str, (obj.get("spec") or {}).get("nodeName") or "")]


def field_index_func(path: str) -> IndexFunc:
    """Index by the value at a dotted path (e.g. ``status.phase``); a missing value indexes as ``""``."""
    parts = path.split(".")

    def index(obj: Object) -> list[str]:
        value: Any = obj
        for part in parts:
            value = value.get(part) if isinstance(value, dict) else None
        return [str(value) if value is not None else ""]

    return index


class Store:
    """A key → object map.  Keys come from ``key_func`` (default ``meta_namespace_key``)."""

    def __init__(self, key_func: Callable[[Object], ObjectKey] = meta_namespace_key) -> None:
        self._key = key_func
        self._items: dict[ObjectKey, Object] = {}

    def add(self, obj: Object) -> Object | None:
        """Insert or replace ``obj``; returns the object previously under its key."""
        key = self._key(obj)
        old = self._items.get(key)
        self._items[key] = obj
        self._reindex(key, old, obj)
        return old

    update = add

    def delete(self, obj: Object) -> Object | None:
        """Remove the entry under ``obj``'s key; returns it (None if there was none)."""
        return self.delete_key(self._key(obj))

    def delete_key(self, key: ObjectKey) -> Object | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._reindex(key, old, None)
        return old

    def replace(self, items: Iterable[Object]) -> dict[ObjectKey, Object]:
        """Make ``items`` the whole content; returns the previous content as ``{key: object}``."""
        previous = self._items
        self._items = {self._key(obj): obj for obj in items}
        self._rebuild()
        return previous

    def get(self, obj: Object) -> Object | None:
        return self._items.get(self._key(obj))

    def get_by_key(self, key: str) -> Object | None:
        return self._items.get(cast(ObjectKey, key))

    def list(self) -> list[Object]:
        return list(self._items.values())

    def list_keys(self) -> builtins.list[ObjectKey]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def _reindex(self, key: ObjectKey, old: Object | None, new: Object | None) -> None:
        """Hook for ``Indexer``: keep indices in step with one entry's change."""

    def _rebuild(self) -> None:
        """Hook for ``Indexer``: recompute every index after ``replace``."""


class Indexer(Store):
    """A ``Store`` with named secondary indices: ``{index name: {index value: {keys}}}``."""

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None,
                 key_func: Callable[[Object], ObjectKey] = meta_namespace_key) -> None:
        super().__init__(key_func)
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        self._indices: dict[str, dict[str, set[ObjectKey]]] = {name: {} for name in self._indexers}

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indices (existing content is indexed immediately); re-adding a name is a ``ValueError``."""
        clash = self._indexers.keys() & indexers.keys()
        if clash:
            raise ValueError(f"indexer(s) already registered: {sorted(clash)}")
        self._indexers.update(indexers)
        for name, func in indexers.items():
            self._indices[name] = self._build(func)

    def by_index(self, index_name: str, value: str) -> builtins.list[Object]:
        """Objects whose ``index_name`` function returned ``value``."""
        return [self._items[k] for k in self.index_keys(index_name, value)]

    def index_keys(self, index_name: str, value: str) -> builtins.list[ObjectKey]:
        return list(self._index(index_name).get(value, ()))

    def list_index_values(self, index_name: str) -> builtins.list[str]:
        """Every value ``index_name`` currently holds at least one object under."""
        return list(self._index(index_name))

    def index(self, index_name: str, obj: Object) -> builtins.list[Object]:
        """Objects sharing any ``index_name`` value with ``obj`` (client-go's ``Index``)."""
        index = self._index(index_name)
        keys: set[ObjectKey] = set()
        for value in self._indexers[index_name](obj):
            keys |= index.get(value, set())
        return [self._items[k] for k in keys]

    def _index(self, index_name: str) -> dict[str, set[ObjectKey]]:
        try:
            return self._indices[index_name]
        except KeyError:
            raise KeyError(f"no indexer named {index_name!r}") from None

    def _reindex(self, key: ObjectKey, old: Object | None, new: Object | None) -> None:
        for name, func in self._indexers.items():
            index = self._indices[name]
            old_values = func(old) if old is not None else []
            new_values = func(new) if new is not None else []
            if old_values == new_values:
                continue
            for value in old_values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in new_values:
                index.setdefault(value, set()).add(key)

    def _rebuild(self) -> None:
        self._indices = {name: self._build(func) for name, func in self._indexers.items()}

    def _build(self, func: IndexFunc) -> dict[str, set[ObjectKey]]:
        index: dict[str, set[ObjectKey]] = {}
        for key, obj in self._items.items():
            for value in func(obj):
                index.setdefault(value, set()).add(key)
        return index
