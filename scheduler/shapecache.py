"""Per pod view, the per-node results of plugins that read only the node object (name, labels, spec).

Why: NodeName, NodeUnschedulable, TaintToleration and NodeAffinity give the same verdict and score for every pod
that looks the same to them (its ``nodeName``, tolerations, node selector and node affinity) on a node whose
labels and spec did not change. A thousand pods of one ReplicaSet pay for one pass over the nodes; after that a
row is recomputed, by calling the plugin's per-node method, only once its node's labels/taints/spec changed
(the table invalidates the row). ``static_filter``/``static_scores`` are the batch forms such a plugin gives by
naming its view of the pod; it must not read other pods or other nodes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from .framework import BatchVerdicts, CycleState, NodeInfo, Pod, Status

if TYPE_CHECKING:
    from .nodetable import NodeTable

SHAPE_CACHE_SIZE = 256


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
    return orjson.dumps(parts, option=orjson.OPT_SORT_KEYS).decode()


def _plugin_id(plugin: Any) -> tuple[str, str, str]:
    return type(plugin).__module__, type(plugin).__qualname__, plugin.name


def static_filter(plugin: Any, view: Any, state: CycleState, pod: Pod, table: NodeTable,
                  point: str = "filter") -> BatchVerdicts:
    """The batch Filter of a node-static ``plugin`` whose verdict depends only on the node and ``view``
    (``point`` names another per-node check of the plugin cached the same way)."""
    entry = table.shapes.filter((_plugin_id(plugin), point, shape_key(view)),
                                lambda info: plugin.filter(state, pod, info))
    return BatchVerdicts(entry.ok[:table.n], entry.statuses)


def static_scores(plugin: Any, view: Any, state: CycleState, pod: Pod, table: NodeTable,
                  rows: np.ndarray) -> np.ndarray:
    """Raw scores of ``rows`` from a node-static ``plugin``'s ``score``, cached per ``view``."""
    entry = table.shapes.score((_plugin_id(plugin), "score", shape_key(view)),
                               lambda info: plugin.score(state, pod, info))
    raw: np.ndarray = entry.raw[rows]
    return raw


def normalize_through(plugin: Any, state: CycleState, pod: Pod, table: NodeTable, rows: np.ndarray,
                      raw: np.ndarray) -> np.ndarray:
    """``raw`` (of ``rows``) through the plugin's own dict-based ``normalize``, back as an array."""
    names = [table.names[r] for r in rows.tolist()]
    normalized = plugin.normalize(state, pod, dict(zip(names, raw.tolist(), strict=False)))
    return np.array([normalized[name] for name in names], np.int64)

