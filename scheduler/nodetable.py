"""Node state in numpy arrays, so filters and scores run over every node at once.

Why: at 5,000 nodes a Python loop over nodes per pod costs milliseconds per plugin; numpy does the same
arithmetic over all rows in microseconds. The table mirrors the cache's ``NodeInfo``s row by row (the cache
calls ``upsert``/``update_usage``/``remove`` on every change); plugins still read the ``NodeInfo``s.

* Columns: allocatable and requested cpu (milli), memory, ephemeral storage and pods; the non-zero cpu/memory
  requests scores use; flags (cordoned, hard taints, PreferNoSchedule taints, images, host ports) and counts of
  pods with volumes or pod (anti-)affinity, which tell when a plugin has nothing to say about a node.
* ``fit_reasons``, ``least_allocated`` and ``balanced_allocation`` are NodeResourcesFit's and
  BalancedAllocation's integer/float maths over arrays, equal to the per-node functions (a unit test compares).
* ``ShapeCache`` keeps, per pod shape (a plugin's view of the pod, e.g. its nodeSelector and node affinity), the
  per-node results of plugins that read only the node's labels, taints and name. A row is recomputed (by calling
  the plugin) only after that node's labels/taints/spec changed, so a thousand pods of one shape pay once.

Rows stay dense: a removed node's row is replaced by the last row. ``names``/``infos`` are replaced, never
mutated, so a diagnosis may keep a reference to the node order of its attempt.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .affinityindex import AffinityIndex
from .framework import MAX_NODE_SCORE, NodeInfo, Pod, Resources, Status

CPU, MEM, EPH, PODS = range(4)
# NodeResourcesFit's reasons as bits, in the order ``insufficient`` lists them.
TOO_MANY_PODS, INSUFFICIENT_CPU, INSUFFICIENT_MEMORY, INSUFFICIENT_EPHEMERAL = 1, 2, 4, 8
FIT_REASONS = ((TOO_MANY_PODS, "Too many pods"), (INSUFFICIENT_CPU, "Insufficient cpu"),
               (INSUFFICIENT_MEMORY, "Insufficient memory"), (INSUFFICIENT_EPHEMERAL, "Insufficient ephemeral-storage"))
SHAPE_CACHE_SIZE = 256


def _row(r: Resources) -> tuple[int, int, int, int]:
    return r.milli_cpu, r.memory, r.ephemeral_storage, r.pods


def pod_flags(pod: Pod) -> tuple[int, int, int]:
    """(has volumes, has required pod anti-affinity, has any pod affinity/anti-affinity term) as 0/1."""
    spec = pod.get("spec", {})
    affinity = spec.get("affinity") or {}
    anti = affinity.get("podAntiAffinity") or {}
    return (int(bool(spec.get("volumes"))), int(bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))),
            int(bool(affinity.get("podAffinity") or anti)))


class NodeTable:
    def __init__(self, capacity: int = 64) -> None:
        self.n = 0
        self.names: list[str] = []
        self.infos: list[NodeInfo] = []
        self.index: dict[str, int] = {}
        self.alloc = np.zeros((capacity, 4), np.int64)
        self.req = np.zeros((capacity, 4), np.int64)
        self.nz = np.zeros((capacity, 2), np.int64)  # non-zero cpu, memory requested (scores)
        self.unschedulable = np.zeros(capacity, bool)
        self.hard_taints = np.zeros(capacity, bool)  # has NoSchedule/NoExecute taints
        self.prefer_taints = np.zeros(capacity, bool)  # has PreferNoSchedule taints
        self.images = np.zeros(capacity, bool)
        self.ports = np.zeros(capacity, bool)  # some pod uses a host port
        self.counts = np.zeros((capacity, 3), np.int32)  # pods with: volumes, required anti-affinity, affinity
        self.shapes = ShapeCache(self)
        self.affinity = AffinityIndex(capacity)  # placed pods by labels and by pod (anti-)affinity terms

    @property
    def capacity(self) -> int:
        return len(self.alloc)

    def _grow(self) -> None:
        new = self.capacity * 2
        for name in ("alloc", "req", "nz", "unschedulable", "hard_taints", "prefer_taints", "images", "ports",
                     "counts"):
            old = getattr(self, name)
            grown = np.zeros((new, *old.shape[1:]), old.dtype)
            grown[:len(old)] = old
            setattr(self, name, grown)
        self.shapes.grow(new)
        self.affinity.grow(new)

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
        node = info.node
        self.alloc[i] = _row(info.allocatable)
        self.unschedulable[i] = bool(node.get("spec", {}).get("unschedulable"))
        effects = {t.get("effect") for t in node.get("spec", {}).get("taints") or []}
        self.hard_taints[i] = bool(effects & {"NoSchedule", "NoExecute"})
        self.prefer_taints[i] = "PreferNoSchedule" in effects
        self.images[i] = bool(node.get("status", {}).get("images"))
        self.update_usage(info)
        if static_changed:
            self.shapes.invalidate(i)
            self.affinity.set_labels(i, info.labels)
        return i

    def update_usage(self, info: NodeInfo) -> None:
        i = self.index.get(info.name)
        if i is None:
            return
        self.req[i] = _row(info.requested)
        self.nz[i] = info.non_zero_requested.milli_cpu, info.non_zero_requested.memory
        self.ports[i] = bool(info.used_ports)

    def count_pod(self, name: str, pod: Pod, sign: int) -> None:
        i = self.index.get(name)
        if i is not None:
            self.counts[i] += np.array(pod_flags(pod), np.int32) * sign
            self.affinity.count(i, pod, sign)

    def remove(self, name: str) -> None:
        i = self.index.pop(name, None)
        if i is None:
            return
        last = self.n - 1
        names, infos = list(self.names), list(self.infos)
        if i != last:
            for arr in (self.alloc, self.req, self.nz, self.unschedulable, self.hard_taints, self.prefer_taints,
                        self.images, self.ports, self.counts):
                arr[i] = arr[last]
            names[i], infos[i] = names[last], infos[last]
            self.index[names[i]] = i
            self.shapes.move(last, i)
        self.counts[last] = 0
        self.affinity.move(last, i)
        names.pop()
        infos.pop()
        self.names, self.infos = names, infos
        self.n -= 1


# --- NodeResourcesFit / BalancedAllocation over arrays ---------------------------------------------------------

def fit_reasons(table: NodeTable, want: Resources) -> np.ndarray:
    """Per node, the bits of NodeResourcesFit's reasons (0: fits) — ``noderesources.insufficient`` at once."""
    n = table.n
    alloc, req = table.alloc[:n], table.req[:n]
    bits = np.where((alloc[:, PODS] != 0) & (req[:, PODS] + 1 > alloc[:, PODS]), TOO_MANY_PODS, 0)
    for col, bit, need in ((CPU, INSUFFICIENT_CPU, want.milli_cpu), (MEM, INSUFFICIENT_MEMORY, want.memory),
                           (EPH, INSUFFICIENT_EPHEMERAL, want.ephemeral_storage)):
        if need:
            bits |= np.where(need > alloc[:, col] - req[:, col], bit, 0)
    return bits.astype(np.uint8)


def fit_reason_strings(bits: int) -> tuple[str, ...]:
    return tuple(text for bit, text in FIT_REASONS if bits & bit)


def _least_requested(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    safe = np.where(capacity == 0, 1, capacity)
    score = (capacity - requested) * MAX_NODE_SCORE // safe
    return np.where((capacity == 0) | (requested > capacity), 0, score)


def least_allocated(table: NodeTable, rows: np.ndarray, want_non_zero: Resources) -> np.ndarray:
    """``noderesources.least_allocated`` for ``rows``."""
    cpu = table.nz[rows, 0] + want_non_zero.milli_cpu
    mem = table.nz[rows, 1] + want_non_zero.memory
    return (_least_requested(cpu, table.alloc[rows, CPU]) + _least_requested(mem, table.alloc[rows, MEM])) // 2


def balanced_allocation(table: NodeTable, rows: np.ndarray, want_non_zero: Resources) -> np.ndarray:
    """``noderesources.balanced_allocation`` for ``rows`` (the same float operations, so the same results)."""
    cpu = (table.nz[rows, 0] + want_non_zero.milli_cpu).astype(np.float64)
    mem = (table.nz[rows, 1] + want_non_zero.memory).astype(np.float64)
    cap_cpu = table.alloc[rows, CPU].astype(np.float64)
    cap_mem = table.alloc[rows, MEM].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        cpu_fraction = np.where(cap_cpu != 0, np.minimum(cpu / np.where(cap_cpu == 0, 1, cap_cpu), 1.0), 1.0)
        mem_fraction = np.where(cap_mem != 0, np.minimum(mem / np.where(cap_mem == 0, 1, cap_mem), 1.0), 1.0)
    std = np.abs(cpu_fraction - mem_fraction) / 2
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)


def default_normalize(raw: np.ndarray, reverse: bool = False) -> np.ndarray:
    """``framework.default_normalize_score`` over an array."""
    top = int(raw.max()) if len(raw) else 0
    if top == 0:
        return np.full(len(raw), MAX_NODE_SCORE if reverse else 0, np.int64)
    out = raw * MAX_NODE_SCORE // top
    return MAX_NODE_SCORE - out if reverse else out


# --- per pod shape results of node-static plugins --------------------------------------------------------------

@dataclass
class StaticResults:
    """One plugin's results for one pod shape on every node row (``valid`` false: recompute that row)."""

    ok: np.ndarray
    raw: np.ndarray
    valid: np.ndarray
    statuses: dict[int, Status] = field(default_factory=dict)  # failing rows; replaced, never mutated


class ShapeCache:
    """LRU of ``StaticResults`` by (plugin, extension point, pod shape); see the module docstring."""

    def __init__(self, table: NodeTable, size: int = SHAPE_CACHE_SIZE) -> None:
        self.table = table
        self.size = size
        self.entries: OrderedDict[Hashable, StaticResults] = OrderedDict()

    def _new(self) -> StaticResults:
        cap = self.table.capacity
        return StaticResults(np.zeros(cap, bool), np.zeros(cap, np.int64), np.zeros(cap, bool))

    def grow(self, capacity: int) -> None:
        for entry in self.entries.values():
            for name in ("ok", "raw", "valid"):
                old = getattr(entry, name)
                grown = np.zeros(capacity, old.dtype)
                grown[:len(old)] = old
                setattr(entry, name, grown)

    def invalidate(self, row: int) -> None:
        for entry in self.entries.values():
            entry.valid[row] = False

    def move(self, src: int, dst: int) -> None:
        for entry in self.entries.values():
            entry.ok[dst], entry.raw[dst], entry.valid[dst] = entry.ok[src], entry.raw[src], entry.valid[src]
            entry.valid[src] = False
            if src in entry.statuses or dst in entry.statuses:
                statuses = dict(entry.statuses)
                statuses.pop(dst, None)
                if src in statuses:
                    statuses[dst] = statuses.pop(src)
                entry.statuses = statuses

    def _entry(self, key: Hashable) -> StaticResults:
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = self._new()
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)
        else:
            self.entries.move_to_end(key)
        return entry

    def filter(self, key: Hashable, check: Callable[[NodeInfo], Status]) -> StaticResults:
        """``check`` each row whose result is unknown; ``ok`` and ``statuses`` then hold every row's verdict."""
        entry = self._entry(key)
        stale = np.flatnonzero(~entry.valid[:self.table.n])
        if len(stale):
            statuses = dict(entry.statuses)
            infos = self.table.infos
            for i in stale.tolist():
                status = check(infos[i])
                entry.ok[i] = status.ok
                if status.ok:
                    statuses.pop(i, None)
                else:
                    statuses[i] = status
            entry.valid[stale] = True
            entry.statuses = statuses
        return entry

    def score(self, key: Hashable, score: Callable[[NodeInfo], int]) -> StaticResults:
        entry = self._entry(key)
        stale = np.flatnonzero(~entry.valid[:self.table.n])
        infos = self.table.infos
        for i in stale.tolist():
            entry.raw[i] = score(infos[i])
        entry.valid[stale] = True
        return entry


def shape_key(*parts: Any) -> str:
    """A hashable key for a pod's view (dicts in canonical order)."""
    import orjson
    return orjson.dumps(parts, option=orjson.OPT_SORT_KEYS).decode()
