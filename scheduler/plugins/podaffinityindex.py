"""InterPodAffinity over all nodes at once: the placed pods' affinity terms and counts per topology domain.

Why: the plugin's PreFilter/PreScore walk every pod of every node and its Filter/Score run per node; with
thousands of pods and nodes that is tens of milliseconds per attempt. Kubernetes precomputes counts per topology
pair once per attempt; here they come from state the node table keeps current as pods come and go:

* the incoming pod's terms are counted per node row by the table's ``SelectorCounts`` (scheduler/podcounts.py),
  one kept count per term set; a term with a ``namespaceSelector`` (namespace labels may change) is matched per
  ``LabelGroup`` instead: the placed pods of one namespace with identical labels, as a count per row;
* ``TermGroup``: the placed pods of one namespace with identical ``podAffinity``/``podAntiAffinity``, parsed
  once, as a count per row; their terms are matched once per group against the incoming pod;
* each topology key's domain per row (``NodeTable.domain_ids``).

Per-row counts folded per domain (``nodetable.sum_by_domain``) give, for every node, how many matching pods
share its topology domain; ``filter_codes`` and ``raw_scores`` combine those exactly as the plugin's per-node
``check`` and ``node_score`` do (a unit test compares them on random clusters).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
import orjson

from ..framework import MAX_NODE_SCORE, NamespaceLabels, Pod
from ..nodetable import NodeTable, grown, sum_by_domain
from ..podcounts import selector_counts
from .podaffinityterms import (
    HARD_POD_AFFINITY_WEIGHT,
    AffinityTerm,
    preferred_terms,
    required_terms,
    term_matches,
)

# filter_codes' values, in the order the plugin checks them
OK, AFFINITY, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY = range(4)
TRACKER_KEY = "InterPodAffinity"


def _namespace(pod: Pod) -> str:
    namespace: str = pod.get("metadata", {}).get("namespace", "default")
    return namespace


class _Counted(Protocol):
    total: int


_K = TypeVar("_K")
_G = TypeVar("_G", bound=_Counted)


def _drop_empty(groups: dict[_K, _G]) -> None:
    """Forget the groups no node counts any more."""
    for key in [k for k, g in groups.items() if g.total <= 0]:
        del groups[key]


def _pod_affinity(pod: Pod) -> tuple[Any, Any]:
    affinity = pod.get("spec", {}).get("affinity") or {}
    return affinity.get("podAffinity"), affinity.get("podAntiAffinity")


@dataclass
class LabelGroup:
    namespace: str
    labels: dict[str, str]
    rows: np.ndarray
    total: int = 0


@dataclass
class TermGroup:
    required_affinity: list[AffinityTerm]
    required_anti_affinity: list[AffinityTerm]
    preferred_affinity: list[AffinityTerm]
    preferred_anti_affinity: list[AffinityTerm]
    rows: np.ndarray
    total: int = 0


class AffinityIndex:
    """The groups, row-aligned with the node table that keeps this tracker (see the module docstring)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.label_groups: dict[tuple[str, tuple[tuple[str, str], ...]], LabelGroup] = {}
        self.term_groups: dict[tuple[str, str], TermGroup] = {}

    # --- Tracker (called by the node table) --------------------------------------------------------------------
    def _groups(self) -> Iterator[LabelGroup | TermGroup]:
        yield from self.label_groups.values()
        yield from self.term_groups.values()

    def grow(self, capacity: int) -> None:
        for group in self._groups():
            group.rows = grown(group.rows, capacity)
        self.capacity = capacity

    def set_labels(self, row: int, labels: Mapping[str, str]) -> None:
        pass

    def move(self, src: int, dst: int) -> None:
        for group in self._groups():
            group.total -= int(group.rows[dst])
            group.rows[dst], group.rows[src] = group.rows[src], 0
        _drop_empty(self.label_groups)
        _drop_empty(self.term_groups)

    def count(self, row: int, pod: Pod, sign: int) -> None:
        namespace = _namespace(pod)
        labels = pod.get("metadata", {}).get("labels") or {}
        key = (namespace, tuple(sorted(labels.items())))
        group = self.label_groups.get(key)
        if group is None:
            group = self.label_groups[key] = LabelGroup(namespace, dict(labels), np.zeros(self.capacity, np.int32))
        group.rows[row] += sign
        group.total += sign
        if group.total <= 0:
            del self.label_groups[key]
        if any(_pod_affinity(pod)):
            tkey = (namespace, orjson.dumps(_pod_affinity(pod), option=orjson.OPT_SORT_KEYS).decode())
            terms = self.term_groups.get(tkey)
            if terms is None:
                terms = self.term_groups[tkey] = TermGroup(
                    required_terms(pod, "podAffinity"), required_terms(pod, "podAntiAffinity"),
                    preferred_terms(pod, "podAffinity"), preferred_terms(pod, "podAntiAffinity"),
                    np.zeros(self.capacity, np.int32))
            terms.rows[row] += sign
            terms.total += sign
            if terms.total <= 0:
                del self.term_groups[tkey]

    # --- what an attempt asks -------------------------------------------------------------------------------------
    def has_required_anti_affinity(self) -> bool:
        return any(group.required_anti_affinity for group in self.term_groups.values())


def affinity_index(table: NodeTable) -> AffinityIndex:
    return table.tracker(TRACKER_KEY, AffinityIndex)


def in_domain(table: NodeTable, key: str, counts: np.ndarray) -> np.ndarray:
    """Per row: the sum of ``counts`` over the rows of its topology domain (0 where the node lacks ``key``)."""
    return sum_by_domain(table.domain_ids(key), counts)


def matching(table: NodeTable, terms: list[AffinityTerm], namespace_labels: NamespaceLabels) -> np.ndarray:
    """Per row: placed pods that match every one of ``terms`` — kept counts when no term selects namespaces by
    label, else summed over the label groups."""
    if all(t.namespace_selector.is_nothing() for t in terms):
        namespaces = frozenset.intersection(*(t.namespaces for t in terms))
        key = (TRACKER_KEY, tuple((t.namespaces, t.selector) for t in terms))
        return selector_counts(table).rows(
            table, key, namespaces, lambda pod: all(t.selector.matches(pod.get("metadata", {}).get("labels") or {})
                                                    for t in terms))
    out = np.zeros(table.n, np.int64)
    for group in affinity_index(table).label_groups.values():
        if all(term_matches(t, group.namespace, group.labels, namespace_labels) for t in terms):
            out += group.rows[:table.n]
    return out


def filter_codes(table: NodeTable, pod: Pod, namespace_labels: NamespaceLabels) -> np.ndarray:
    """Per row, the plugin's verdict as a code (OK, AFFINITY, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY)."""
    n = table.n
    codes = np.zeros(n, np.uint8)
    blocked = np.zeros(n, bool)
    for group in affinity_index(table).term_groups.values():
        for term in group.required_anti_affinity:
            if term_matches(term, _namespace(pod), pod.get("metadata", {}).get("labels") or {}, namespace_labels):
                blocked |= in_domain(table, term.topology_key, group.rows[:n]) > 0
    codes[blocked] = EXISTING_ANTI_AFFINITY
    blocked = np.zeros(n, bool)
    for term in required_terms(pod, "podAntiAffinity"):
        blocked |= in_domain(table, term.topology_key, matching(table, [term], namespace_labels)) > 0
    codes[blocked] = ANTI_AFFINITY
    affinity = required_terms(pod, "podAffinity")
    if affinity:
        counts = matching(table, affinity, namespace_labels)
        has_keys = np.ones(n, bool)
        exist = np.ones(n, bool)
        any_counts = False
        for term in affinity:
            has_keys &= table.domain_ids(term.topology_key) >= 0
            hits = in_domain(table, term.topology_key, counts)
            exist &= hits > 0
            any_counts = any_counts or bool(hits.any())
        meta = pod.get("metadata", {})
        self_affine = all(term_matches(t, _namespace(pod), meta.get("labels") or {}, namespace_labels)
                          for t in affinity)
        ok = has_keys & (exist | (not any_counts and self_affine))
        codes[~ok] = AFFINITY
    return codes


def raw_scores(table: NodeTable, pod: Pod, namespace_labels: NamespaceLabels) -> np.ndarray:
    """Per row, the plugin's raw score (``node_score`` of ``topology_scores``)."""
    n = table.n
    weighted: dict[str, np.ndarray] = {}  # topology key → weighted matching pods per row

    def add(key: str, counts: np.ndarray, weight: int) -> None:
        if key not in weighted:
            weighted[key] = np.zeros(n, np.int64)
        weighted[key] += counts * weight

    for term in preferred_terms(pod, "podAffinity"):
        add(term.topology_key, matching(table, [term], namespace_labels), term.weight)
    for term in preferred_terms(pod, "podAntiAffinity"):
        add(term.topology_key, matching(table, [term], namespace_labels), -term.weight)
    namespace, labels = _namespace(pod), pod.get("metadata", {}).get("labels") or {}
    for group in affinity_index(table).term_groups.values():
        rows = group.rows[:n].astype(np.int64)
        for terms, sign, hard in ((group.required_affinity, 1, True), (group.preferred_affinity, 1, False),
                                  (group.preferred_anti_affinity, -1, False)):
            for term in terms:
                if term_matches(term, namespace, labels, namespace_labels):
                    add(term.topology_key, rows, sign * (HARD_POD_AFFINITY_WEIGHT if hard else term.weight))
    total = np.zeros(n, np.float64)
    for key, counts in weighted.items():
        total += in_domain(table, key, counts)
    return np.rint(total).astype(np.int64)


def normalize(raw: np.ndarray) -> np.ndarray:
    """``interpodaffinity.normalize_scores`` over an array."""
    if not len(raw):
        return raw
    high, low = max(0, int(raw.max())), min(0, int(raw.min()))
    spread = high - low
    if spread <= 0:
        return np.zeros(len(raw), np.int64)
    return (MAX_NODE_SCORE * (raw - low) / spread).astype(np.int64)
