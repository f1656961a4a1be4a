"""Placed pods that match a selector, counted per node row and kept current as pods come and go.

Why: PodTopologySpread and InterPodAffinity count, for every attempt, the placed pods a selector matches in each
node's topology domain. kube-scheduler walks every node's pods in PreFilter/PreScore for that; walked in Python
on every attempt, the cost grows with the pods already placed (3,000 pods of one ReplicationController: ~12 ms
per pod). Here each selector an attempt asks about is counted once from the rows (on its first use) and then
updated as pods are assumed, bound, forgotten and deleted (the node table calls ``count`` with +1/-1), so an
attempt reads a ready array.

A selector is a key (whatever identifies it, chosen by the caller), the namespaces whose pods it may count,
and a predicate on a pod. The most recently used ``SELECTORS`` are kept; a placed pod is matched only against
the selectors of its namespace. Guarantee: for every kept selector, ``rows[r]`` equals the number of pods in
``table.infos[r].pods`` it matches (a unit test checks this against a count from scratch).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .framework import Pod
from .nodetable import grown

if TYPE_CHECKING:
    from .nodetable import NodeTable

SELECTORS = 64
TRACKER_KEY = "podcounts"
PodPredicate = Callable[[Pod], bool]


def _namespace(pod: Pod) -> str:
    namespace: str = pod.get("metadata", {}).get("namespace", "default")
    return namespace


@dataclass
class Counted:
    key: Hashable
    namespaces: frozenset[str]
    matches: PodPredicate
    rows: np.ndarray


class SelectorCounts:
    """A node-table tracker (see the module docstring)."""

    def __init__(self, capacity: int, size: int = SELECTORS) -> None:
        self.capacity = capacity
        self.size = size
        self.entries: OrderedDict[Hashable, Counted] = OrderedDict()
        self.by_namespace: dict[str, dict[Hashable, Counted]] = {}

    def rows(self, table: NodeTable, key: Hashable, namespaces: frozenset[str], matches: PodPredicate
             ) -> np.ndarray:
        """Per row of ``table``, the placed pods in ``namespaces`` that ``matches`` accepts."""
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
            return entry.rows[:table.n]
        counts = np.zeros(self.capacity, np.int64)
        for row, info in enumerate(table.infos):
            counts[row] = sum(1 for pod in info.pods.values() if _namespace(pod) in namespaces and matches(pod))
        entry = self.entries[key] = Counted(key, namespaces, matches, counts)
        for namespace in namespaces:
            self.by_namespace.setdefault(namespace, {})[key] = entry
        while len(self.entries) > self.size:
            self._drop(self.entries.popitem(last=False)[1])
        return counts[:table.n]

    def _drop(self, entry: Counted) -> None:
        for namespace in entry.namespaces:
            entries = self.by_namespace.get(namespace, {})
            entries.pop(entry.key, None)
            if not entries:
                self.by_namespace.pop(namespace, None)

    # --- Tracker ------------------------------------------------------------------------------------------------
    def grow(self, capacity: int) -> None:
        for entry in self.entries.values():
            entry.rows = grown(entry.rows, capacity)
        self.capacity = capacity

    def set_labels(self, row: int, labels: Mapping[str, str]) -> None:
        pass

    def count(self, row: int, pod: Pod, sign: int) -> None:
        for entry in self.by_namespace.get(_namespace(pod), {}).values():
            if entry.matches(pod):
                entry.rows[row] += sign

    def move(self, src: int, dst: int) -> None:
        for entry in self.entries.values():
            entry.rows[dst], entry.rows[src] = entry.rows[src], 0


def selector_counts(table: NodeTable) -> SelectorCounts:
    """The table's one ``SelectorCounts`` (shared by every plugin; keys name their plugin)."""
    return table.tracker(TRACKER_KEY, SelectorCounts)
