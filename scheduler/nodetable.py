"""Node state in numpy arrays, so plugins' batch forms run over every node at once.

Why: at 5,000 nodes a Python loop over nodes per pod costs milliseconds per plugin; numpy does the same
arithmetic over all rows in microseconds. The table mirrors the cache's ``NodeInfo``s row by row (the cache
calls ``upsert``/``update_usage``/``count_pod``/``remove`` on every change); plugins still read the ``NodeInfo``s
on their per-node path. The table knows no plugin: plugins read its columns and keep their own per-row state
in trackers it maintains.

* Columns: allocatable and requested cpu (milli), memory, ephemeral storage and pods; the non-zero cpu/memory
  requests scores use; whether a node lists images, has a pod using a host port, and how many of its pods
  have volumes.
* Trackers (``tracker(key, factory)``): per-row state derived from the placed pods and the nodes' labels — pod
  counts per selector, InterPodAffinity's groups, each topology key's domain per row. A tracker is built on
  first use from the rows as they are, then kept current by the table as pods are counted in and out and nodes
  come, change labels and go, so an attempt reads it without walking any pod.
* ``shapes`` (scheduler/shapecache.py): per pod view, the results of plugins that read only the node object.

Rows stay dense: a removed node's row is replaced by the last row. ``names``/``infos`` are replaced, never
mutated, so a diagnosis may keep a reference to the node order of its attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np

from .framework import NodeInfo, Pod, Resources
from .shapecache import ShapeCache

CPU, MEM, EPH, PODS = range(4)


def _row(r: Resources) -> tuple[int, int, int, int]:
    return r.milli_cpu, r.memory, r.ephemeral_storage, r.pods


def grown(array: np.ndarray, capacity: int, fill: int = 0) -> np.ndarray:
    """``array`` with room for ``capacity`` rows, the new ones set to ``fill``."""
    out = np.full((capacity, *array.shape[1:]), fill, array.dtype)
    out[:len(array)] = array
    return out


class Tracker(Protocol):
    """Per-row state about placed pods and node labels that the table keeps current (see the module docstring).
    ``move(src, dst)``: row ``dst``'s node is gone and row ``src`` takes its place (``src == dst``: just gone)."""

    def grow(self, capacity: int) -> None: ...

    def set_labels(self, row: int, labels: Mapping[str, str]) -> None: ...

    def count(self, row: int, pod: Pod, sign: int) -> None: ...

    def move(self, src: int, dst: int) -> None: ...


T = TypeVar("T", bound=Tracker)


@dataclass
class TopologyDomains:
    """One topology key's domain id per row (-1: the node lacks the label); ids are never reused."""

    key: str
    ids: np.ndarray
    lookup: dict[str, int] = field(default_factory=dict)

    def grow(self, capacity: int) -> None:
        self.ids = grown(self.ids, capacity, -1)

    def set_labels(self, row: int, labels: Mapping[str, str]) -> None:
        value = labels.get(self.key)
        self.ids[row] = -1 if value is None else self.lookup.setdefault(value, len(self.lookup))

    def count(self, row: int, pod: Pod, sign: int) -> None:
        pass

    def move(self, src: int, dst: int) -> None:
        self.ids[dst], self.ids[src] = self.ids[src], -1


def sum_by_domain(ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per row: the sum of ``counts`` over the rows of its domain (0 where the node lacks the key)."""
    has = ids >= 0
    out = np.zeros(len(ids), np.float64)
    if has.any():
        per_domain = np.bincount(ids[has], weights=counts[has])
        out[has] = per_domain[ids[has]]
    return out


class NodeTable:
    def __init__(self, capacity: int = 64) -> None:
        self.n = 0
        self.names: list[str] = []
        self.infos: list[NodeInfo] = []
        self.index: dict[str, int] = {}
        self.alloc = np.zeros((capacity, 4), np.int64)
        self.req = np.zeros((capacity, 4), np.int64)
        self.nz = np.zeros((capacity, 2), np.int64)  # non-zero cpu, memory requested (scores)
        self.images = np.zeros(capacity, bool)
        self.ports = np.zeros(capacity, bool)  # some pod uses a host port
        self.volumes = np.zeros(capacity, np.int32)  # pods with volumes
        self.shapes = ShapeCache(self)
        self.trackers: dict[Hashable, Tracker] = {}

    @property
    def capacity(self) -> int:
        return len(self.alloc)

    def _columns(self) -> tuple[str, ...]:
        return "alloc", "req", "nz", "images", "ports", "volumes"

    def _grow(self) -> None:
        new = self.capacity * 2
        for name in self._columns():
            setattr(self, name, grown(getattr(self, name), new))
        self.shapes.grow(new)
        for tracker in self.trackers.values():
            tracker.grow(new)

    # --- trackers -----------------------------------------------------------------------------------------------
    def tracker(self, key: Hashable, factory: Callable[[int], T]) -> T:
        """The tracker under ``key``, built by ``factory(capacity)`` and filled from the rows on first use."""
        found = self.trackers.get(key)
        if found is not None:
            return found  # type: ignore[return-value]
        made = factory(self.capacity)
        for row, info in enumerate(self.infos):
            made.set_labels(row, info.labels)
            for pod in info.pods.values():
                made.count(row, pod, 1)
        self.trackers[key] = made
        return made

    def domains(self, key: str) -> TopologyDomains:
        """Topology ``key``'s domains (tracked from the first time it is asked for)."""
        return self.tracker(("domains", key), lambda cap: TopologyDomains(key, np.full(cap, -1, np.int64)))

    def domain_ids(self, key: str) -> np.ndarray:
        """Each row's domain id for topology ``key`` (-1: no such label)."""
        return self.domains(key).ids[:self.n]

    # --- rows ---------------------------------------------------------------------------------------------------
    def upsert(self, info: NodeInfo, static_changed: bool = True) -> int:
        """Add the node's row or refresh it from ``info.node``; ``static_changed``: labels/taints/spec changed."""
        i = self.index.get(info.name)
        if i is None:
            if self.n == self.capacity:
                self._grow()
            i = self.n
            self.n += 1
            self.index[info.name] = i
            self.names = [*self.names, info.name]
            self.infos = [*self.infos, info]
            static_changed = True
        elif self.infos[i] is not info:
            self.infos = [*self.infos[:i], info, *self.infos[i + 1:]]
        self.alloc[i] = _row(info.allocatable)
        self.images[i] = bool(info.node.get("status", {}).get("images"))
        self.update_usage(info)
        if static_changed:
            self.shapes.invalidate(i)
            for tracker in self.trackers.values():
                tracker.set_labels(i, info.labels)
        return i

    def update_usage(self, info: NodeInfo) -> None:
        i = self.index.get(info.name)
        if i is None:
            return
        self.req[i] = _row(info.requested)
        self.nz[i] = info.non_zero_requested.milli_cpu, info.non_zero_requested.memory
        self.ports[i] = bool(info.used_ports)

    def count_pod(self, name: str, pod: Pod, sign: int) -> None:
        """``pod`` was placed on (``sign`` 1) or taken off (-1) node ``name``: every tracker hears of it."""
        i = self.index.get(name)
        if i is None:
            return
        if pod.get("spec", {}).get("volumes"):
            self.volumes[i] += sign
        for tracker in self.trackers.values():
            tracker.count(i, pod, sign)

    def remove(self, name: str) -> None:
        i = self.index.pop(name, None)
        if i is None:
            return
        last = self.n - 1
        names, infos = list(self.names), list(self.infos)
        if i != last:
            for column in self._columns():
                arr = getattr(self, column)
                arr[i] = arr[last]
            names[i], infos[i] = names[last], infos[last]
            self.index[names[i]] = i
            self.shapes.move(last, i)
        self.volumes[last] = 0
        for tracker in self.trackers.values():
            tracker.move(last, i)
        names.pop()
        infos.pop()
        self.names, self.infos = names, infos
        self.n -= 1

