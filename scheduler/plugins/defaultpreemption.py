"""DefaultPreemption (PostFilter): when no node fits, find lower-priority pods whose removal makes one fit.

As kube-scheduler's ``defaultpreemption`` and ``framework/preemption``:

* A pod with ``preemptionPolicy: Never`` may not preempt, nor one whose nominated node still has terminating
  lower-priority pods (its earlier victims).
* Only nodes whose filter verdict was ``Unschedulable`` (resolvable) are tried; the others are "Preemption is not
  helpful for scheduling". On a tried node, every pod of lower ``spec.priority`` is removed; a node without any
  is "No preemption victims found for incoming pod"; if the pod still does not fit, the filter's reason stands.
  Otherwise the removed pods are added back, most important first (higher priority, then earlier start), as long
  as the pod still fits; those that cannot come back are the victims (``select_victims_on_node``).
* At most ``max(10 % of the nodes, 100)`` candidate nodes are collected (``num_candidates``); among them the node
  is picked with the lowest highest victim priority, then the lowest sum of priorities, the fewest victims, the
  latest start of its highest-priority victims, then the first (``pick_one_node``). PodDisruptionBudgets are not
  served by kubelab, so none is violated.
* Whether the pod fits a node without some victims is asked through ``fits_on`` (the runner's
  ``filter_with_nominated_pods``): pods nominated to the node with at least the preemptor's priority count as
  placed, so a preemptor never takes the room an earlier, more important one made.
* Without a candidate the PostFilter fails with a message shaped as Kubernetes', which the scheduler appends to
  FailedScheduling: ``preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.``, and
  the pod's nomination is cleared; a pod not eligible keeps its nomination.

The scheduler (scheduler.py) then deletes the victims (a ``DisruptionTarget`` condition and a ``Preempted`` event
first), sets the pod's ``status.nominatedNodeName`` and requeues it; the victims' deletion wakes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from ..framework import SUCCESS, Candidate, Code, FitsOn, NodeInfo, Pod, PostFilterResult, Status, unschedulable

__all__ = ["Candidate", "DefaultPreemption", "Result", "eligible", "pick_one_node", "preempt",
           "select_victims_on_node"]

NAME = "DefaultPreemption"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
INT32_OFFSET = 2 ** 31  # kube-scheduler adds MaxInt32 + 1 so negative priorities still sum upwards

Fits = Callable[[NodeInfo], Status]  # the profile's filters for the pod on a (modified) node


def priority(pod: Pod) -> int:
    return int(pod.get("spec", {}).get("priority") or 0)


def start_time(pod: Pod) -> str:
    return pod.get("status", {}).get("startTime") or pod.get("metadata", {}).get("creationTimestamp") or ""


Result = PostFilterResult


def eligible(pod: Pod, nodes: list[NodeInfo]) -> str | None:
    """None if the pod may preempt, else Kubernetes' reason. A pod that already preempted waits while its
    victims on the nominated node terminate, rather than choosing more victims."""
    if pod.get("spec", {}).get("preemptionPolicy") == "Never":
        return NOT_ELIGIBLE_NEVER
    nominated = pod.get("status", {}).get("nominatedNodeName")
    for info in nodes if nominated else ():
        if info.name == nominated and any(p.get("metadata", {}).get("deletionTimestamp") and
                                          priority(p) < priority(pod) for p in info.pods.values()):
            return NOT_ELIGIBLE_TERMINATING
    return None


def num_candidates(nodes: int) -> int:
    return min(max(nodes * MIN_CANDIDATE_NODES_PERCENTAGE // 100, MIN_CANDIDATE_NODES_ABSOLUTE), nodes)


def _without(info: NodeInfo, keys: Iterable[str]) -> NodeInfo:
    gone = set(keys)
    copy = NodeInfo(info.node)
    for key, pod in info.pods.items():
        if key not in gone:
            copy.add_pod(key, pod)
    return copy


def select_victims_on_node(pod: Pod, info: NodeInfo, fits: Fits) -> tuple[list[Pod], Status]:
    """The fewest, least important lower-priority pods to remove from ``info`` for ``pod`` to fit."""
    lower = {key: p for key, p in info.pods.items() if priority(p) < priority(pod)}
    if not lower:
        return [], unschedulable(NO_VICTIMS, resolvable=False)
    trial = _without(info, lower)
    status = fits(trial)
    if not status.ok:
        return [], status
    victims = []
    for key, p in sorted(lower.items(), key=lambda kv: (-priority(kv[1]), start_time(kv[1]))):
        trial.add_pod(key, p)
        if not fits(trial).ok:
            trial.remove_pod(key)
            victims.append(p)
    return victims, SUCCESS


def pick_one_node(candidates: list[Candidate]) -> Candidate:
    """kube-scheduler's ``pickOneNodeForPreemption`` without PDBs (see the module docstring)."""
    def highest(c: Candidate) -> int:
        return max(priority(v) for v in c.victims)

    def latest_start(c: Candidate) -> str:
        top = highest(c)
        return min(start_time(v) for v in c.victims if priority(v) == top)

    best = candidates
    for key in (highest, lambda c: sum(priority(v) + INT32_OFFSET for v in c.victims), lambda c: len(c.victims)):
        low = min(key(c) for c in best)
        best = [c for c in best if key(c) == low]
    late = max(latest_start(c) for c in best)
    return next(c for c in best if latest_start(c) == late)


def preempt(pod: Pod, nodes: list[NodeInfo], verdicts: dict[str, Status], fits_on: FitsOn) -> Result:
    """Find the node and victims for ``pod``; ``verdicts`` are the failed filters' statuses by node name and
    ``fits_on(node)`` runs the profile's filters against a modified copy of ``node``."""
    reason = eligible(pod, nodes)
    if reason is not None:
        return Result(None, reason)
    statuses: dict[str, Status] = {}
    potential = []
    for info in nodes:
        verdict = verdicts.get(info.name)
        if verdict is None or verdict.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            statuses[info.name] = unschedulable(NOT_HELPFUL, resolvable=False)
        else:
            potential.append(info)
    candidates: list[Candidate] = []
    want = num_candidates(len(potential))
    for info in potential:
        victims, status = select_victims_on_node(pod, info, fits_on(info))
        if status.ok and victims:
            candidates.append(Candidate(info.name, victims))
            if len(candidates) >= want:
                break
        else:
            statuses[info.name] = status
    if candidates:
        return Result(pick_one_node(candidates))
    counts = Counter(r for s in statuses.values() for r in s.reasons)
    parts = ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))
    return Result(None, f"0/{len(nodes)} nodes are available: {parts}.", clear_nomination=True)


class DefaultPreemption:
    """The PostFilter plugin (``plugins.postFilter`` in a KubeSchedulerConfiguration)."""

    name = NAME

    def post_filter(self, pod: Pod, nodes: list[NodeInfo], statuses: dict[str, Status], fits_on: FitsOn
                    ) -> PostFilterResult:
        """``preempt``, its message prefixed ``preemption:`` as kube-scheduler's PostFilter does."""
        result = preempt(pod, nodes, statuses, fits_on)
        if result.message:
            result.message = f"preemption: {result.message}"
        return result
