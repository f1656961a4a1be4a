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
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apimachinery.labels import Selector, selector_from_label_selector, selector_from_set

from ..framework import MAX_NODE_SCORE, SUCCESS, CycleState, NodeInfo, Pod, Status, unschedulable
from .nodeaffinity import required_matches

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


def _labels(pod: Pod) -> dict[str, str]:
    return pod.get("metadata", {}).get("labels") or {}


def label_matcher(selector: Selector) -> PodMatcher:
    if selector.empty():
        return lambda other: False  # as countPodsMatchSelector: an empty selector counts no pod
    return lambda other: selector.matches(_labels(other))


def controller_uid(pod: Pod) -> str | None:
    for ref in pod.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("uid")
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
                              int(c.get("minDomains") or 1)))
    return out


def default_constraints(pod: Pod) -> list[Constraint]:
    """The system defaults, selecting the pods of the same controller (none for a pod without one)."""
    uid = controller_uid(pod)
    if uid is None:
        return []
    return [Constraint(c["maxSkew"], c["topologyKey"], lambda other: controller_uid(other) == uid)
            for c in SYSTEM_DEFAULT_CONSTRAINTS]


def count_matching(node: NodeInfo, constraint: Constraint, namespace: str) -> int:
    return sum(1 for p in node.pods.values()
               if p.get("metadata", {}).get("namespace") == namespace
               and not p.get("metadata", {}).get("deletionTimestamp") and constraint.matches(p))


def _namespace(pod: Pod) -> str:
    return pod.get("metadata", {}).get("namespace", "default")


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

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> dict[str, int]:
        score_state = state.get(_PRE_SCORE_KEY)
        if score_state is None or not score_state.constraints:
            return scores
        return normalize_scores(score_state, scores)
