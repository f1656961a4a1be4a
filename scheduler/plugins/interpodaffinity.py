"""InterPodAffinity: place a pod near (affinity) or away from (anti-affinity) pods in a topology domain.

As kube-scheduler. PreFilter counts, over every node's pods, per topology pair (``topologyKey``, node's value):
the existing pods that match *all* of the incoming pod's required affinity terms, those that match each of its
required anti-affinity terms, and the existing pods whose required anti-affinity terms match the incoming pod.
Filter then reads those counts for the node's own pairs. A pod whose affinity terms match itself may go where
no pod matches yet, so the first pod of a self-affine group is not stuck pending.

A term selects pods by ``labelSelector`` in ``namespaces``; with neither ``namespaces`` nor
``namespaceSelector`` it means the owner's namespace, ``namespaceSelector: {}`` means every namespace, and a
non-empty selector is matched against namespace labels: the scheduler's namespace informer, set by the runner
(``namespace_labels``, framework.NamespaceAware); alone, the plugin knows only ``kubernetes.io/metadata.name``.

Score (PreScore over all nodes): for every existing pod, the incoming pod's preferred terms it matches add
(affinity) or subtract (anti-affinity) their weight to its node's topology pair, and the existing pod's own
terms that match the incoming pod do the same (required affinity counting ``hardPodAffinityWeight`` = 1).
A node's raw score sums its pairs; normalisation maps [min(0, lowest), highest] onto 0..100.

Batch forms (plugins/podaffinityindex.py): the same verdicts and scores for every node from counts the node
table keeps as pods come and go; a pod with no terms, in a cluster whose pods have none, costs nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..framework import (
    MAX_NODE_SCORE,
    SUCCESS,
    BatchVerdicts,
    CodedStatuses,
    CycleState,
    NamespaceLabels,
    NodeInfo,
    Pod,
    Status,
    builtin_namespace_labels,
    unschedulable,
)
from ..nodetable import NodeTable
from . import podaffinityindex as index
from .podaffinityterms import HARD_POD_AFFINITY_WEIGHT, AffinityTerm, matches_all, preferred_terms, required_terms

NAME = "InterPodAffinity"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

TopologyPair = tuple[str, str]
STATUSES: tuple[Status | None, ...] = (  # by podaffinityindex.filter_codes' codes
    None, unschedulable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, resolvable=False),
    unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH),
    unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH))
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _has_terms(pod: Pod, when: str) -> bool:
    affinity = pod.get("spec", {}).get("affinity") or {}
    return any((affinity.get(kind) or {}).get(when) for kind in ("podAffinity", "podAntiAffinity"))


# --- Filter ------------------------------------------------------------------------------------------------

@dataclass
class FilterState:
    affinity: list[AffinityTerm]
    anti_affinity: list[AffinityTerm]
    self_affine: bool  # the incoming pod matches all its own required affinity terms
    affinity_counts: Counter[TopologyPair]
    anti_affinity_counts: Counter[TopologyPair]
    existing_anti_affinity_counts: Counter[TopologyPair]


def compute_filter_state(pod: Pod, nodes: list[NodeInfo],
                         namespace_labels: NamespaceLabels = builtin_namespace_labels) -> FilterState:
    affinity, anti = required_terms(pod, "podAffinity"), required_terms(pod, "podAntiAffinity")
    state = FilterState(affinity, anti, matches_all(pod, affinity, namespace_labels), Counter(), Counter(),
                        Counter())
    for info in nodes:
        labels = info.labels
        for existing in info.pods.values():
            for term in required_terms(existing, "podAntiAffinity"):
                if term.topology_key in labels and term.matches(pod, namespace_labels):
                    state.existing_anti_affinity_counts[(term.topology_key, labels[term.topology_key])] += 1
            if matches_all(existing, affinity, namespace_labels):
                for term in affinity:
                    if term.topology_key in labels:
                        state.affinity_counts[(term.topology_key, labels[term.topology_key])] += 1
            for term in anti:
                if term.topology_key in labels and term.matches(existing, namespace_labels):
                    state.anti_affinity_counts[(term.topology_key, labels[term.topology_key])] += 1
    return state


def satisfies_pod_affinity(state: FilterState, node: NodeInfo) -> bool:
    pods_exist = True
    for term in state.affinity:
        value = node.labels.get(term.topology_key)
        if value is None:
            return False  # every topology key must be on the node
        if state.affinity_counts[(term.topology_key, value)] <= 0:
            pods_exist = False
    # The first pod of a group with affinity to itself: no pod anywhere matches yet, but it matches itself.
    return pods_exist or (not +state.affinity_counts and state.self_affine)


def satisfies_pod_anti_affinity(state: FilterState, node: NodeInfo) -> bool:
    return not any(state.anti_affinity_counts[(t.topology_key, node.labels[t.topology_key])] > 0
                   for t in state.anti_affinity if t.topology_key in node.labels)


def satisfies_existing_pods_anti_affinity(state: FilterState, node: NodeInfo) -> bool:
    return not any(state.existing_anti_affinity_counts[pair] > 0 for pair in node.labels.items())


def check(state: FilterState, node: NodeInfo) -> Status:
    if not satisfies_pod_affinity(state, node):
        return unschedulable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, resolvable=False)
    if not satisfies_pod_anti_affinity(state, node):
        return unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
    if not satisfies_existing_pods_anti_affinity(state, node):
        return unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
    return SUCCESS


def assigned_pod_add_may_help(pending: Pod, added: Pod,
                              namespace_labels: NamespaceLabels = builtin_namespace_labels) -> bool:
    """Queueing hint for AssignedPodAdd (kube-scheduler's ``isSchedulableAfterPodChange``): a new pod on a node
    can only satisfy required affinity, and only if it matches all of the pending pod's affinity terms."""
    return matches_all(added, required_terms(pending, "podAffinity"), namespace_labels)


# --- Score -------------------------------------------------------------------------------------------------

def topology_scores(pod: Pod, nodes: list[NodeInfo],
                    namespace_labels: NamespaceLabels = builtin_namespace_labels) -> Counter[TopologyPair]:
    """Weighted matches per topology pair (may be negative), from every existing pod on ``nodes``."""
    scores: Counter[TopologyPair] = Counter()
    incoming = [(t, 1) for t in preferred_terms(pod, "podAffinity")] + \
        [(t, -1) for t in preferred_terms(pod, "podAntiAffinity")]

    def add(term: AffinityTerm, candidate: Pod, labels: dict[str, str], sign: int) -> None:
        if labels and term.topology_key in labels and term.matches(candidate, namespace_labels):
            scores[(term.topology_key, labels[term.topology_key])] += sign * term.weight

    for info in nodes:
        labels = info.labels
        for existing in info.pods.values():
            for term, sign in incoming:
                add(term, existing, labels, sign)
            for term in required_terms(existing, "podAffinity"):
                add(AffinityTerm(term.namespaces, term.namespace_selector, term.selector, term.topology_key,
                                 HARD_POD_AFFINITY_WEIGHT), pod, labels, 1)
            for term in preferred_terms(existing, "podAffinity"):
                add(term, pod, labels, 1)
            for term in preferred_terms(existing, "podAntiAffinity"):
                add(term, pod, labels, -1)
    return scores


def node_score(scores: Counter[TopologyPair], node: NodeInfo) -> int:
    return sum(scores.get(pair, 0) for pair in node.labels.items())


def normalize_scores(scores: dict[str, int]) -> dict[str, int]:
    high = max(0, *scores.values()) if scores else 0
    low = min(0, *scores.values()) if scores else 0
    spread = high - low
    return {n: int(MAX_NODE_SCORE * (s - low) / spread) if spread > 0 else 0 for n, s in scores.items()}


class InterPodAffinity:
    name = NAME

    def __init__(self, namespace_labels: NamespaceLabels = builtin_namespace_labels) -> None:
        self.namespace_labels = namespace_labels

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        state[_PRE_FILTER_KEY] = compute_filter_state(pod, nodes, self.namespace_labels)
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        if _PRE_FILTER_KEY not in state:
            self.pre_filter(state, pod, state.all_nodes([node_info]))
        return check(state[_PRE_FILTER_KEY], node_info)

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> None:
        state[_PRE_SCORE_KEY] = topology_scores(pod, state.all_nodes(nodes), self.namespace_labels)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        if _PRE_SCORE_KEY not in state:
            self.pre_score(state, pod, [node_info])
        return node_score(state[_PRE_SCORE_KEY], node_info)

    def assigned_pod_add_may_help(self, pending: Pod, added: Pod) -> bool:
        return assigned_pod_add_may_help(pending, added, self.namespace_labels)

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts:
        if not _has_terms(pod, REQUIRED) and not index.affinity_index(table).has_required_anti_affinity():
            return BatchVerdicts(np.ones(table.n, bool))
        codes = index.filter_codes(table, pod, self.namespace_labels)
        return BatchVerdicts(codes == index.OK, CodedStatuses(codes, STATUSES))

    def batch_score(self, state: CycleState, pod: Pod, table: NodeTable, rows: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        if not _has_terms(pod, PREFERRED) and not index.affinity_index(table).term_groups:
            zeros = np.zeros(len(rows), np.int64)
            return zeros, zeros
        raw = index.raw_scores(table, pod, self.namespace_labels)[rows]
        return raw, index.normalize(raw)

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> dict[str, int]:
        if not state.get(_PRE_SCORE_KEY):
            return scores
        return normalize_scores(scores)
