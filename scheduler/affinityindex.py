"""InterPodAffinity over all nodes at once: an index of the placed pods, and counts per topology domain.

Why: the plugin's PreFilter/PreScore walk every pod of every node and its Filter/Score run per node; with
thousands of pods and nodes that is tens of milliseconds per attempt. Kubernetes precomputes counts per topology
pair once per attempt; here the counts come from an index the node table keeps up to date as pods come and go:

* ``LabelGroup``: the placed pods of one namespace with identical labels, as a count per node row. A term
  (namespaces × labelSelector) is matched once per group, not once per pod.
* ``TermGroup``: the placed pods of one namespace with identical ``podAffinity``/``podAntiAffinity``, parsed once,
  as a count per node row. Their terms are matched once per group against the incoming pod.
* ``TopologyDomains``: per topology key, each row's domain id (-1: the node lacks the label), updated when a
  node's labels change.

A group's per-row counts folded per domain (``np.bincount``) and read back per row give, for every node, how many
matching pods share its topology domain; ``filter_codes`` and ``raw_scores`` combine those exactly as the plugin's
per-node ``check`` and ``node_score`` do (a unit test compares them on random clusters).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from .framework import MAX_NODE_SCORE, Pod, Status, unschedulable
from .plugins.interpodaffinity import (ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
                                       ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, HARD_POD_AFFINITY_WEIGHT,
                                       AffinityTerm, NamespaceLabels, preferred_terms, required_terms)

# filter_codes' values, in the order the plugin checks them
OK, AFFINITY, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY = range(4)
STATUSES: tuple[Status | None, ...] = (
    None, unschedulable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, resolvable=False),
    unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH),
    unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH))


def _namespace(pod: Pod) -> str:
    return pod.get("metadata", {}).get("namespace", "default")


def _pod_affinity(pod: Pod) -> tuple[Any, Any]:
    affinity = pod.get("spec", {}).get("affinity") or {}
    return affinity.get("podAffinity"), affinity.get("podAntiAffinity")


def term_matches(term: AffinityTerm, namespace: str, labels: Mapping[str, str],
                 namespace_labels: NamespaceLabels) -> bool:
    """``AffinityTerm.matches`` for a group (its namespace and labels) instead of a pod."""
    if namespace not in term.namespaces and not term.namespace_selector.matches(namespace_labels(namespace)):
        return False
    return term.selector.matches(labels)


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


@dataclass
class TopologyDomains:
    ids: np.ndarray
    lookup: dict[str, int] = field(default_factory=dict)

    def set_row(self, row: int, key: str, labels: Mapping[str, str]) -> None:
        value = labels.get(key)
        self.ids[row] = -1 if value is None else self.lookup.setdefault(value, len(self.lookup))


class AffinityIndex:
    """The groups and domains, row-aligned with the NodeTable that owns this index (see the module docstring)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.label_groups: dict[tuple[str, tuple[tuple[str, str], ...]], LabelGroup] = {}
        self.term_groups: dict[tuple[str, str], TermGroup] = {}
        self.domains: dict[str, TopologyDomains] = {}
        self.row_labels: list[Mapping[str, str]] = [{} for _ in range(capacity)]

    # --- maintenance (called by NodeTable) ---------------------------------------------------------------------
    def _arrays(self) -> Iterator[Any]:
        yield from self.label_groups.values()
        yield from self.term_groups.values()

    def grow(self, capacity: int) -> None:
        for group in self._arrays():
            grown = np.zeros(capacity, np.int32)
            grown[:len(group.rows)] = group.rows
            group.rows = grown
        for domains in self.domains.values():
            grown = np.full(capacity, -1, np.int64)
            grown[:len(domains.ids)] = domains.ids
            domains.ids = grown
        self.row_labels.extend({} for _ in range(capacity - self.capacity))
        self.capacity = capacity

    def set_labels(self, row: int, labels: Mapping[str, str]) -> None:
        self.row_labels[row] = dict(labels)
        for key, domains in self.domains.items():
            domains.set_row(row, key, labels)

    def move(self, src: int, dst: int) -> None:
        """Row ``dst`` (a removed node) takes row ``src``'s place; ``src`` is cleared."""
        for group in list(self._arrays()):
            group.total -= int(group.rows[dst])
            group.rows[dst] = group.rows[src]
            group.rows[src] = 0
        self._drop_empty()
        for domains in self.domains.values():
            domains.ids[dst], domains.ids[src] = domains.ids[src], -1
        self.row_labels[dst], self.row_labels[src] = self.row_labels[src], {}

    def count(self, row: int, pod: Pod, sign: int) -> None:
        meta = pod.get("metadata", {})
        namespace = _namespace(pod)
        labels = meta.get("labels") or {}
        key = (namespace, tuple(sorted(labels.items())))
        group = self.label_groups.get(key)
        if group is None:
            group = self.label_groups[key] = LabelGroup(namespace, dict(labels), np.zeros(self.capacity, np.int32))
        group.rows[row] += sign
        group.total += sign
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
        if sign < 0:
            self._drop_empty()

    def _drop_empty(self) -> None:
        for groups in (self.label_groups, self.term_groups):
            for key in [k for k, g in groups.items() if g.total <= 0]:
                del groups[key]  # type: ignore[attr-defined]

    def domain_ids(self, key: str, n: int) -> np.ndarray:
        domains = self.domains.get(key)
        if domains is None:
            domains = self.domains[key] = TopologyDomains(np.full(self.capacity, -1, np.int64))
            for row in range(n):
                domains.set_row(row, key, self.row_labels[row])
        return domains.ids[:n]

    # --- per attempt -------------------------------------------------------------------------------------------
    def in_domain(self, key: str, counts: np.ndarray, n: int) -> np.ndarray:
        """Per row: the sum of ``counts`` over the rows of its topology domain (0 where the node lacks ``key``)."""
        ids = self.domain_ids(key, n)
        has = ids >= 0
        per_domain = np.bincount(ids[has], weights=counts[has], minlength=len(self.domains[key].lookup))
        out = np.zeros(n, np.float64)
        out[has] = per_domain[ids[has]]
        return out

    def matching(self, terms: list[AffinityTerm], n: int, namespace_labels: NamespaceLabels) -> np.ndarray:
        """Per row: placed pods that match every one of ``terms``."""
        out = np.zeros(n, np.int64)
        for group in self.label_groups.values():
            if all(term_matches(t, group.namespace, group.labels, namespace_labels) for t in terms):
                out += group.rows[:n]
        return out


def filter_codes(index: AffinityIndex, n: int, pod: Pod, namespace_labels: NamespaceLabels) -> np.ndarray:
    """Per row, the plugin's verdict as a code (OK, AFFINITY, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY)."""
    codes = np.zeros(n, np.uint8)
    blocked = np.zeros(n, bool)
    for group in index.term_groups.values():
        for term in group.required_anti_affinity:
            if term_matches(term, _namespace(pod), pod.get("metadata", {}).get("labels") or {}, namespace_labels):
                blocked |= index.in_domain(term.topology_key, group.rows[:n], n) > 0
    codes[blocked] = EXISTING_ANTI_AFFINITY
    blocked = np.zeros(n, bool)
    for term in required_terms(pod, "podAntiAffinity"):
        blocked |= index.in_domain(term.topology_key, index.matching([term], n, namespace_labels), n) > 0
    codes[blocked] = ANTI_AFFINITY
    affinity = required_terms(pod, "podAffinity")
    if affinity:
        counts = index.matching(affinity, n, namespace_labels)
        has_keys = np.ones(n, bool)
        exist = np.ones(n, bool)
        any_counts = False
        for term in affinity:
            has_keys &= index.domain_ids(term.topology_key, n) >= 0
            hits = index.in_domain(term.topology_key, counts, n)
            exist &= hits > 0
            any_counts = any_counts or bool(hits.any())
        meta = pod.get("metadata", {})
        self_affine = all(term_matches(t, _namespace(pod), meta.get("labels") or {}, namespace_labels)
                          for t in affinity)
        ok = has_keys & (exist | (not any_counts and self_affine))
        codes[~ok] = AFFINITY
    return codes


def raw_scores(index: AffinityIndex, n: int, pod: Pod, namespace_labels: NamespaceLabels) -> np.ndarray:
    """Per row, the plugin's raw score (``node_score`` of ``topology_scores``)."""
    weighted: dict[str, np.ndarray] = {}  # topology key → weighted matching pods per row

    def add(key: str, counts: np.ndarray, weight: int) -> None:
        if key not in weighted:
            weighted[key] = np.zeros(n, np.int64)
        weighted[key] += counts * weight

    for term in preferred_terms(pod, "podAffinity"):
        add(term.topology_key, index.matching([term], n, namespace_labels), term.weight)
    for term in preferred_terms(pod, "podAntiAffinity"):
        add(term.topology_key, index.matching([term], n, namespace_labels), -term.weight)
    namespace, labels = _namespace(pod), pod.get("metadata", {}).get("labels") or {}
    for group in index.term_groups.values():
        rows = group.rows[:n].astype(np.int64)
        for terms, sign, hard in ((group.required_affinity, 1, True), (group.preferred_affinity, 1, False),
                                  (group.preferred_anti_affinity, -1, False)):
            for term in terms:
                if term_matches(term, namespace, labels, namespace_labels):
                    add(term.topology_key, rows, sign * (HARD_POD_AFFINITY_WEIGHT if hard else term.weight))
    total = np.zeros(n, np.float64)
    for key, counts in weighted.items():
        total += index.in_domain(key, counts, n)
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


class CodedStatuses(Mapping[int, Status]):
    """Rows → Status read from a code array (no dict built per attempt); only failing rows are keys."""

    def __init__(self, codes: np.ndarray, statuses: tuple[Status | None, ...] = STATUSES) -> None:
        self.codes = codes
        self.statuses = statuses

    def __getitem__(self, row: int) -> Status:
        status = self.statuses[int(self.codes[row])] if 0 <= row < len(self.codes) else None
        if status is None:
            raise KeyError(row)
        return status

    def __iter__(self) -> Iterator[int]:
        return iter(np.flatnonzero(self.codes).tolist())

    def __len__(self) -> int:
        return int(np.count_nonzero(self.codes))
