"""PodTopologySpread: spread matching pods evenly over topology domains (nodes, zones).

Filter, for the pod's ``whenUnsatisfiable: DoNotSchedule`` constraints, as kube-scheduler: PreFilter counts the
matching pods (same namespace, not terminating, ``labelSelector`` plus ``matchLabelKeys``) in each domain over
the nodes that pass the pod's nodeSelector/required node affinity and carry every topology key; a node fails
when ``count(its domain) + (1 if the pod matches itself) - min over domains > maxSkew`` (the minimum is 0 when
fewer than ``minDomains`` domains exist), or when it lacks a topology key.

Score, for the pod's ``ScheduleAnyway`` constraints or, when it has no constraints at all, the system defaults
(hostname maxSkew 3, zone maxSkew 5) applied to the pods of the same owner (kube-scheduler derives the selector
from the pod's Services and controllers; here the controller ownerReference is the owner): a node's raw score is
Σ count × log(domains + 2) + maxSkew − 1, fewer matching pods being better; normalisation reverses it.
With the defaults a node without a zone label is still scored by hostname.

Batch forms (what the runner uses): the same verdicts and scores for every node at once, from counts the node
table keeps (scheduler/podcounts.py: per constraint's selector, the matching placed pods per node, updated as
pods are assumed, bound and deleted; each topology key's domain per node), folded per domain with
``np.bincount`` — as kube-scheduler's PreFilter/PreScore precompute counts per topology pair, so an attempt's
cost does not grow with the pods already placed. A unit test compares them with the per-node path.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from apimachinery.labels import Selector, selector_from_label_selector, selector_from_set

from ..framework import (
    MAX_NODE_SCORE,
    SUCCESS,
    BatchVerdicts,
    CodedStatuses,
    CycleState,
    NodeInfo,
    Pod,
    Status,
    unschedulable,
)
from ..nodetable import NodeTable
from ..podcounts import selector_counts
from ..shapecache import shape_key
from .nodeaffinity import required_matches, required_view

NAME = "PodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SYSTEM_DEFAULT_CONSTRAINTS: tuple[dict[str, Any], ...] = (
    {"maxSkew": 3, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway"},
    {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
)
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

PodMatcher = Callable[[Pod], bool]


@dataclass(frozen=True)
class Constraint:
    max_skew: int
    topology_key: str
    matches: PodMatcher  # does an existing pod (already in the pod's namespace) count?
    min_domains: int = 1
    key: Hashable = None  # identifies ``matches`` within the pod's namespace (for the kept counts)


def _labels(pod: Pod) -> dict[str, str]:
    return pod.get("metadata", {}).get("labels") or {}


def label_matcher(selector: Selector) -> PodMatcher:
    if selector.empty():
        return lambda other: False  # as countPodsMatchSelector: an empty selector counts no pod
    return lambda other: selector.matches(_labels(other))


def controller_uid(pod: Pod) -> str | None:
    for ref in pod.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            uid: str | None = ref.get("uid")
            return uid
    return None


def constraints_of(pod: Pod, action: str) -> list[Constraint]:
    """The pod's own constraints with ``whenUnsatisfiable == action``, ``matchLabelKeys`` merged in."""
    out = []
    for c in pod.get("spec", {}).get("topologySpreadConstraints") or []:
        if c.get("whenUnsatisfiable", "DoNotSchedule") != action:
            continue
        selector = selector_from_label_selector(c.get("labelSelector"))
        extra = {k: _labels(pod)[k] for k in c.get("matchLabelKeys") or [] if k in _labels(pod)}
        if extra and not selector.is_nothing():
            selector = selector_from_set(extra).add(*selector.requirements)
        out.append(Constraint(int(c.get("maxSkew", 1)), c.get("topologyKey", ""), label_matcher(selector),
                              int(c.get("minDomains") or 1),
                              ("labels", shape_key(c.get("labelSelector"), sorted(extra.items())))))
    return out


def default_constraints(pod: Pod) -> list[Constraint]:
    """The system defaults, selecting the pods of the same controller (none for a pod without one)."""
    uid = controller_uid(pod)
    if uid is None:
        return []
    return [Constraint(c["maxSkew"], c["topologyKey"], lambda other: controller_uid(other) == uid, 1, ("owner", uid))
            for c in SYSTEM_DEFAULT_CONSTRAINTS]


def _counts(pod: Pod, constraint: Constraint) -> bool:
    return not pod.get("metadata", {}).get("deletionTimestamp") and constraint.matches(pod)


def count_matching(node: NodeInfo, constraint: Constraint, namespace: str) -> int:
    return sum(1 for p in node.pods.values()
               if p.get("metadata", {}).get("namespace") == namespace and _counts(p, constraint))


def _namespace(pod: Pod) -> str:
    namespace: str = pod.get("metadata", {}).get("namespace", "default")
    return namespace


def _has_keys(node: NodeInfo, constraints: list[Constraint]) -> bool:
    return all(c.topology_key in node.labels for c in constraints)


def assigned_pod_add_may_help(pending: Pod, added: Pod) -> bool:
    """Queueing hint for AssignedPodAdd: a new pod changes the skew only if one of the pending pod's
    DoNotSchedule constraints counts it (same namespace, selector matches); it may raise the minimum domain."""
    if _namespace(added) != _namespace(pending):
        return False
    return any(c.matches(added) for c in constraints_of(pending, "DoNotSchedule"))


# --- Filter ------------------------------------------------------------------------------------------------

@dataclass
class FilterState:
    constraints: list[Constraint]
    counts: Counter[tuple[str, str]]  # (topologyKey, value) → matching pods
    domains: Counter[str]  # topologyKey → number of domains


def compute_filter_state(pod: Pod, nodes: list[NodeInfo]) -> FilterState:
    constraints = constraints_of(pod, "DoNotSchedule")
    state = FilterState(constraints, Counter(), Counter())
    if not constraints:
        return state
    for info in nodes:
        if not required_matches(pod, info) or not _has_keys(info, constraints):
            continue
        for c in constraints:
            pair = (c.topology_key, info.labels[c.topology_key])
            state.counts[pair] += count_matching(info, c, _namespace(pod))
    for key, _ in state.counts:
        state.domains[key] += 1
    return state


def min_match(state: FilterState, constraint: Constraint) -> float:
    if state.domains[constraint.topology_key] < constraint.min_domains:
        return 0
    return min((n for (key, _), n in state.counts.items() if key == constraint.topology_key), default=math.inf)


def check(state: FilterState, pod: Pod, node: NodeInfo) -> Status:
    for c in state.constraints:
        value = node.labels.get(c.topology_key)
        if value is None:
            return unschedulable(ERR_REASON_NODE_LABEL_NOT_MATCH, resolvable=False)
        skew = state.counts.get((c.topology_key, value), 0) + (1 if c.matches(pod) else 0) - min_match(state, c)
        if skew > c.max_skew:
            return unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
    return SUCCESS


# --- Score -------------------------------------------------------------------------------------------------

@dataclass
class ScoreState:
    constraints: list[Constraint]
    ignored: set[str]  # feasible nodes lacking a topology key (own constraints only)
    counts: list[dict[str, int]]  # per constraint: domain value → matching pods (hostname: counted per node)
    weights: list[float]


def compute_score_state(pod: Pod, feasible: list[NodeInfo], everyone: list[NodeInfo]) -> ScoreState:
    own = bool(pod.get("spec", {}).get("topologySpreadConstraints"))
    constraints = constraints_of(pod, "ScheduleAnyway") if own else default_constraints(pod)
    state = ScoreState(constraints, set(), [{} for _ in constraints], [])
    if not constraints:
        return state
    for info in feasible:
        if own and not _has_keys(info, constraints):
            state.ignored.add(info.name)
            continue
        for i, c in enumerate(constraints):
            if c.topology_key != HOSTNAME:
                state.counts[i].setdefault(info.labels.get(c.topology_key, ""), 0)
    for i, c in enumerate(constraints):
        size = len(feasible) - len(state.ignored) if c.topology_key == HOSTNAME else len(state.counts[i])
        state.weights.append(math.log(size + 2))
    for info in everyone:
        if not required_matches(pod, info) or (own and not _has_keys(info, constraints)):
            continue
        for i, c in enumerate(constraints):
            value = info.labels.get(c.topology_key, "")
            if c.topology_key != HOSTNAME and value in state.counts[i]:
                state.counts[i][value] += count_matching(info, c, _namespace(pod))
    return state


def raw_score(state: ScoreState, pod: Pod, node: NodeInfo) -> int:
    if node.name in state.ignored:
        return 0
    total = 0.0
    for i, c in enumerate(state.constraints):
        value = node.labels.get(c.topology_key)
        if value is None:
            continue
        count = count_matching(node, c, _namespace(pod)) if c.topology_key == HOSTNAME else state.counts[i][value]
        total += count * state.weights[i] + (c.max_skew - 1)
    return math.floor(total + 0.5)


def normalize_scores(state: ScoreState, scores: dict[str, int]) -> dict[str, int]:
    valid = {n: s for n, s in scores.items() if n not in state.ignored}
    high = max(valid.values(), default=0)
    low = min(valid.values(), default=0)
    return {n: 0 if n in state.ignored else MAX_NODE_SCORE if high == 0 else
            MAX_NODE_SCORE * (high + low - s) // high for n, s in scores.items()}


class PodTopologySpread:
    name = NAME

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        state[_PRE_FILTER_KEY] = compute_filter_state(pod, nodes)
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        if _PRE_FILTER_KEY not in state:
            self.pre_filter(state, pod, state.all_nodes([node_info]))
        return check(state[_PRE_FILTER_KEY], pod, node_info)

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> None:
        state[_PRE_SCORE_KEY] = compute_score_state(pod, nodes, state.all_nodes(nodes))

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        if _PRE_SCORE_KEY not in state:
            self.pre_score(state, pod, [node_info])
        return raw_score(state[_PRE_SCORE_KEY], pod, node_info)

    def assigned_pod_add_may_help(self, pending: Pod, added: Pod) -> bool:
        return assigned_pod_add_may_help(pending, added)

    def batch_filter(self, state: CycleState, pod: Pod, table: NodeTable) -> BatchVerdicts:
        constraints = constraints_of(pod, "DoNotSchedule")
        if not constraints:
            return BatchVerdicts(np.ones(table.n, bool))
        codes = filter_codes(table, pod, constraints)
        return BatchVerdicts(codes == OK, CodedStatuses(codes, STATUSES))

    def batch_score(self, state: CycleState, pod: Pod, table: NodeTable, rows: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        own = bool(pod.get("spec", {}).get("topologySpreadConstraints"))
        constraints = constraints_of(pod, "ScheduleAnyway") if own else default_constraints(pod)
        if not constraints:
            zeros = np.zeros(len(rows), np.int64)
            return zeros, zeros
        raw, ignored = raw_scores(table, pod, constraints, own, rows)
        return raw, normalize_rows(raw, ignored)

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> dict[str, int]:
        score_state = state.get(_PRE_SCORE_KEY)
        if score_state is None or not score_state.constraints:
            return scores
        return normalize_scores(score_state, scores)


# --- over the node table -----------------------------------------------------------------------------------

OK, MISSING_LABEL, SKEW = range(3)
STATUSES: tuple[Status | None, ...] = (None, unschedulable(ERR_REASON_NODE_LABEL_NOT_MATCH, resolvable=False),
                                       unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH))


def matching_rows(table: NodeTable, pod: Pod, constraint: Constraint) -> np.ndarray:
    """Per row, ``count_matching`` in the pod's namespace, from the table's kept counts."""
    namespace = _namespace(pod)
    return selector_counts(table).rows(table, (NAME, namespace, constraint.key), frozenset((namespace,)),
                                       lambda other: _counts(other, constraint))


def node_affinity_rows(table: NodeTable, pod: Pod) -> np.ndarray:
    """Per row, whether the node passes the pod's nodeSelector and required node affinity (cached per view)."""
    entry = table.shapes.filter(((NAME, "nodeAffinity"), shape_key(required_view(pod))),
                                lambda info: SUCCESS if required_matches(pod, info) else unschedulable())
    return entry.ok[:table.n]


def _per_domain(ids: np.ndarray, counts: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(matching pods, rows) per domain id over ``rows`` (a mask); sized to every id in ``ids``."""
    size = int(ids.max()) + 1 if len(ids) else 0
    return (np.bincount(ids[rows], weights=counts[rows], minlength=size),
            np.bincount(ids[rows], minlength=size))


def filter_codes(table: NodeTable, pod: Pod, constraints: list[Constraint]) -> np.ndarray:
    """Per row, ``check``'s verdict as a code (OK, MISSING_LABEL, SKEW); counts of constraints that share a
    topology key add up, as ``compute_filter_state``'s counts by topology pair do."""
    n = table.n
    ids = {c.topology_key: table.domain_ids(c.topology_key) for c in constraints}
    eligible = node_affinity_rows(table, pod).copy()
    for key_ids in ids.values():
        eligible &= key_ids >= 0
    by_key: dict[str, np.ndarray] = {}
    for c in constraints:
        by_key[c.topology_key] = by_key.get(c.topology_key, 0) + matching_rows(table, pod, c)
    codes = np.zeros(n, np.uint8)
    for c in constraints:
        key_ids = ids[c.topology_key]
        totals, present = _per_domain(key_ids, by_key[c.topology_key], eligible)
        domains = int(np.count_nonzero(present))
        low = 0.0 if domains < c.min_domains else float(totals[present > 0].min()) if domains else math.inf
        has = key_ids >= 0
        skew = np.where(has, totals[np.where(has, key_ids, 0)] if len(totals) else 0.0, 0.0) + \
            (1 if c.matches(pod) else 0) - low
        undecided = codes == OK
        codes[undecided & ~has] = MISSING_LABEL
        codes[undecided & has & (skew > c.max_skew)] = SKEW
    return codes


def raw_scores(table: NodeTable, pod: Pod, constraints: list[Constraint], own: bool, rows: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """(raw scores of ``rows``, which of them are ignored): ``raw_score`` after ``compute_score_state``."""
    n = table.n
    ids = [table.domain_ids(c.topology_key) for c in constraints]
    ignored = np.zeros(len(rows), bool)
    everyone = node_affinity_rows(table, pod)
    if own:
        for key_ids in ids:
            ignored |= key_ids[rows] < 0
            everyone = everyone & (key_ids >= 0)
    valid = rows[~ignored]
    total = np.zeros(len(rows), np.float64)
    for c, key_ids in zip(constraints, ids, strict=False):
        counts = matching_rows(table, pod, c)
        if c.topology_key == HOSTNAME:
            weight = math.log(len(valid) + 2)
            count = counts[rows].astype(np.float64)
        else:
            domains = key_ids.copy()  # a node without the label is in the domain "" (as labels.get(key, ""))
            empty = table.domains(c.topology_key).lookup.get("")
            domains[key_ids < 0] = int(key_ids.max(initial=-1)) + 1 if empty is None else empty
            feasible_domains = np.zeros(int(domains.max(initial=0)) + 1, bool)
            feasible_domains[domains[valid]] = True
            weight = math.log(int(np.count_nonzero(feasible_domains)) + 2)
            totals = np.bincount(domains[everyone], weights=counts[:n][everyone], minlength=len(feasible_domains))
            count = totals[domains[rows]]
        total += np.where(key_ids[rows] >= 0, count * weight + (c.max_skew - 1), 0.0)
    raw = np.floor(total + 0.5).astype(np.int64)
    raw[ignored] = 0
    return raw, ignored


def normalize_rows(raw: np.ndarray, ignored: np.ndarray) -> np.ndarray:
    """``normalize_scores`` over arrays."""
    valid = raw[~ignored]
    high = int(valid.max()) if len(valid) else 0
    low = int(valid.min()) if len(valid) else 0
    out = np.full(len(raw), MAX_NODE_SCORE, np.int64) if high == 0 else MAX_NODE_SCORE * (high + low - raw) // high
    out[ignored] = 0
    return out
