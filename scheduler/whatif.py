"""What-if: where would pods go after a change to the cluster — decided by the running scheduler's own framework.

``POST /debug/whatif`` (scheduler/__main__.py) hands a ``Change`` to ``simulate``, which

1. clones the scheduler's cache (nodes, bound and assumed pods) into a fresh ``Cache`` with the change applied:
   ``cordon`` and ``drain`` set ``spec.unschedulable``, ``taint`` adds the taint, ``delete-node`` drops the node;
2. works out which pods leave their node, as the component that would act does:
   * drain (``kubectl drain --ignore-daemonsets``): DaemonSet and mirror pods stay; a pod without a controller
     blocks the drain (kubectl refuses without ``--force``); every other pod is evicted unless a
     PodDisruptionBudget matching it has no disruption left (``status.disruptionsAllowed``, spent in the order
     the pods are evicted) — then it stays and is reported as blocked, as the eviction API's 429 would;
   * taint with effect NoExecute (the taint-eviction controller): pods that do not tolerate it go now, pods
     that tolerate it for ``tolerationSeconds`` go after that many seconds, the others stay; budgets do not apply;
   * delete-node (the pod garbage collector): every pod on the node goes;
3. schedules what a controller would recreate (pods with a controller owner, not DaemonSet or mirror pods) and the
   pods of ``apply`` in the queue's order (priority, then creation time), each through the profile's own
   ``Runner`` (a fresh one: same plugins and configuration, its own state), assuming each placement before the
   next, and reports the chosen node with the nodes that scored the same (the scheduler picks among those at
   random), or the FitError message (FailedScheduling's wording) with the PostFilter's note.

Everything runs synchronously on the scheduler's event loop on copies, so the live cache cannot change under it
and nothing is written anywhere.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from apimachinery.labels import selector_from_label_selector
from apimachinery.taints import tolerates

from .cache import Cache
from .framework import Pod, pod_priority
from .queue import pod_key
from .runner import Runner

__all__ = ["Change", "ChangeError", "Outcome", "parse_change", "simulate"]

Action = Literal["drain", "cordon", "taint", "delete-node", "apply"]
ACTIONS: tuple[str, ...] = ("drain", "cordon", "taint", "delete-node", "apply")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"


class ChangeError(ValueError):
    """The request does not describe a change (400 for the caller)."""


@dataclass(frozen=True)
class Change:
    action: Action
    node: str = ""
    taint: Mapping[str, str] | None = None
    pods: tuple[Pod, ...] = ()


@dataclass
class Outcome:
    """What happens to one pod: its eviction (if any), then where its replacement (or the new pod) lands."""

    pod: str
    from_node: str = ""
    eviction: str = ""  # evicted | blocked | deleted | evicted-after | "" (a new pod)
    reason: str = ""  # why it is blocked, or after how long it goes
    scheduled: bool = False
    node: str = ""
    equal_nodes: list[str] = field(default_factory=list)  # other nodes with the chosen node's score
    message: str = ""  # FailedScheduling's message when it stays Pending
    diagnosis: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pod": self.pod, "fromNode": self.from_node, "eviction": self.eviction,
                               "reason": self.reason}
        if self.eviction in ("", "evicted", "deleted", "evicted-after") and self.diagnosis is not None:
            out.update(result="Scheduled" if self.scheduled else "Pending", node=self.node,
                       equalNodes=self.equal_nodes, message=self.message, diagnosis=self.diagnosis)
        return out


def parse_change(body: Any) -> Change:
    """``{"action": "drain", "node": "n"}``, ``{"action": "taint", "node": "n", "taint": {key, value, effect}}``,
    ``{"action": "apply", "pods": [...]}`` (pods or a v1 List of them)."""
    if not isinstance(body, dict) or body.get("action") not in ACTIONS:
        raise ChangeError(f"action must be one of {', '.join(ACTIONS)}")
    action = body["action"]
    node = body.get("node") or ""
    if action != "apply" and not isinstance(node, str) or action != "apply" and not node:
        raise ChangeError(f"{action} needs a node")
    taint = body.get("taint")
    if action == "taint":
        if not isinstance(taint, dict) or not taint.get("key") or taint.get("effect") not in EFFECTS:
            raise ChangeError(f"taint needs a key and an effect ({', '.join(EFFECTS)})")
        taint = {k: str(taint[k]) for k in ("key", "value", "effect") if taint.get(k)}
    pods: list[Pod] = []
    if action == "apply":
        for item in body.get("pods") or []:
            items = item.get("items") or [] if isinstance(item, dict) and item.get("kind") == "List" else [item]
            for pod in items:
                if not isinstance(pod, dict) or pod.get("kind", "Pod") != "Pod" or \
                        not (pod.get("metadata") or {}).get("name"):
                    raise ChangeError("apply takes Pods with a metadata.name")
                pods.append(pod)
        if not pods:
            raise ChangeError("apply needs at least one pod")
    return Change(action, node, taint, tuple(pods))


# --- the cluster after the change --------------------------------------------------------------------------------

def _changed_node(node: dict[str, Any], change: Change) -> dict[str, Any] | None:
    if node["metadata"]["name"] != change.node:
        return node
    if change.action == "delete-node":
        return None
    node = {**node, "spec": dict(node.get("spec") or {})}
    if change.action in ("drain", "cordon"):
        node["spec"]["unschedulable"] = True
    elif change.action == "taint" and change.taint is not None:
        taints = [t for t in node["spec"].get("taints") or []
                  if (t.get("key"), t.get("effect")) != (change.taint["key"], change.taint["effect"])]
        node["spec"]["taints"] = [*taints, dict(change.taint)]
    return node


def _bound(pod: Pod, node: str) -> Pod:
    """The pod as bound to ``node`` (an assumed pod's dict has no nodeName yet)."""
    if pod.get("spec", {}).get("nodeName") == node:
        return pod
    return {**pod, "spec": {**pod.get("spec", {}), "nodeName": node}}


def clone(cache: Cache, change: Change, leaving: set[str]) -> Cache:
    """A new cache with the change applied and without the pods in ``leaving``."""
    out = Cache()
    for info in cache.nodes.values():
        node = _changed_node(info.node, change)
        if node is not None:
            out.add_node(node)
    for key, node_name in cache.pod_nodes.items():
        if key not in leaving and node_name in out.nodes:
            out.add_pod(_bound(cache.pods[key], node_name))
    return out


# --- who leaves ------------------------------------------------------------------------------------------------

def _controller(pod: Pod) -> dict[str, Any] | None:
    return next((r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None)


def _daemon_or_mirror(pod: Pod) -> bool:
    owner = _controller(pod)
    return (owner or {}).get("kind") == "DaemonSet" or MIRROR_ANNOTATION in (pod["metadata"].get("annotations") or {})


def _budgets_of(pod: Pod, pdbs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    meta = pod["metadata"]
    return [b for b in pdbs if b["metadata"].get("namespace") == meta.get("namespace")
            and selector_from_label_selector((b.get("spec") or {}).get("selector")).matches(meta.get("labels"))]


def _drain(pods: list[Pod], pdbs: list[dict[str, Any]], node: str) -> list[Outcome]:
    allowed = {pod_key(b): int((b.get("status") or {}).get("disruptionsAllowed") or 0) for b in pdbs}
    out = []
    for pod in pods:
        outcome = Outcome(pod_key(pod), node)
        if _daemon_or_mirror(pod):
            continue
        if _controller(pod) is None:
            outcome.eviction, outcome.reason = "blocked", "the pod declares no controller (drain needs --force)"
        else:
            blocking = [b for b in _budgets_of(pod, pdbs) if allowed[pod_key(b)] <= 0]
            if blocking:
                name = blocking[0]["metadata"]["name"]
                outcome.eviction = "blocked"
                outcome.reason = f"Cannot evict pod as it would violate the pod's disruption budget ({name})"
            else:
                for b in _budgets_of(pod, pdbs):
                    allowed[pod_key(b)] -= 1
                outcome.eviction = "evicted"
        out.append(outcome)
    return out


def _no_execute(pods: list[Pod], taint: Mapping[str, str], node: str) -> list[Outcome]:
    out = []
    for pod in pods:
        matching = [t for t in pod.get("spec", {}).get("tolerations") or [] if tolerates(t, dict(taint))]
        if not matching:
            out.append(Outcome(pod_key(pod), node, "evicted", "does not tolerate the NoExecute taint"))
            continue
        seconds = [int(t["tolerationSeconds"]) for t in matching if t.get("tolerationSeconds") is not None]
        if len(seconds) == len(matching):  # every matching toleration is bounded: the shortest wins
            out.append(Outcome(pod_key(pod), node, "evicted-after", f"evicted after {max(min(seconds), 0)} s"))
    return out


def leaving_pods(change: Change, cache: Cache, pdbs: list[dict[str, Any]]) -> list[Outcome]:
    """The pods of the changed node that go (or would go, but for a budget), in the queue's order."""
    keys = sorted((k for k, n in cache.pod_nodes.items() if n == change.node),
                  key=lambda k: queue_order(cache.pods[k]))
    pods = [_bound(cache.pods[k], change.node) for k in keys]
    if change.action == "drain":
        return _drain(pods, pdbs, change.node)
    if change.action == "taint" and change.taint is not None and change.taint["effect"] == "NoExecute":
        return _no_execute(pods, change.taint, change.node)
    if change.action == "delete-node":
        return [Outcome(pod_key(p), change.node, "deleted", "its node is deleted") for p in pods]
    return []


def queue_order(pod: Pod) -> tuple[int, str, str]:
    """The active queue's order: higher priority first, then the older pod."""
    return -pod_priority(pod), pod["metadata"].get("creationTimestamp") or "", pod_key(pod)


def _replacement(pod: Pod) -> Pod:
    """The pod as a controller would recreate it: unbound, no status."""
    spec = {k: v for k, v in pod.get("spec", {}).items() if k != "nodeName"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod["metadata"], "spec": spec, "status": {}}


# --- scheduling the displaced and new pods ---------------------------------------------------------------------

def simulate(change: Change, cache: Cache, pdbs: list[dict[str, Any]],
             runner_for: Callable[[Pod], Runner | None]) -> dict[str, Any]:
    """Apply ``change`` to a copy of ``cache`` and schedule whoever must move; ``runner_for`` gives a fresh runner
    of the pod's profile (None: another scheduler's pod, left out). Returns the JSON ``/debug/whatif`` serves."""
    outcomes = leaving_pods(change, cache, pdbs)
    moving = [o for o in outcomes if o.eviction in ("evicted", "deleted", "evicted-after")]
    snapshot = clone(cache, change, {o.pod for o in moving})
    queue: list[tuple[Outcome, Pod]] = []
    for o in moving:
        pod = cache.pods[o.pod]
        if _controller(pod) is not None and not _daemon_or_mirror(pod):
            queue.append((o, _replacement(pod)))
    for pod in change.pods:
        pod = copy.deepcopy(pod)
        pod.setdefault("metadata", {}).setdefault("namespace", "default")
        outcome = Outcome(pod_key(pod))
        outcomes.append(outcome)
        queue.append((outcome, pod))
    queue.sort(key=lambda item: queue_order(item[1]))
    for outcome, pod in queue:
        runner = runner_for(pod)
        if runner is None:
            outcome.message = f"not ours: schedulerName {pod.get('spec', {}).get('schedulerName')}"
            continue
        _schedule(runner, pod, snapshot, outcome)
    return {"kind": "WhatIf", "change": {"action": change.action, "node": change.node,
                                         **({"taint": dict(change.taint)} if change.taint else {}),
                                         **({"pods": [pod_key(p) for p in change.pods]} if change.pods else {})},
            "nodes": len(snapshot.nodes), "pods": [o.to_dict() for o in outcomes],
            "schedulableNodes": sum(not (i.node.get("spec") or {}).get("unschedulable")  # not cordoned
                                    for i in snapshot.nodes.values())}


def _schedule(runner: Runner, pod: Pod, cache: Cache, outcome: Outcome) -> None:
    attempt = runner.find_node(pod, cache)
    outcome.diagnosis = attempt.to_dict()
    if attempt.node is None:
        message = attempt.message
        result = runner.post_filter(pod, cache, attempt)
        if result is not None and result.candidate is not None:
            victims = ", ".join(pod_key(v) for v in result.candidate.victims)
            message += f" Preemption would nominate {result.candidate.node}, evicting {victims}."
        elif result is not None and result.message:
            message += f" {result.message}."
        outcome.message = message
        return
    outcome.scheduled, outcome.node = True, attempt.node
    if len(attempt.totals):
        best = attempt.totals.max()
        outcome.equal_nodes = sorted(attempt.node_names[int(r)] for r, t in zip(attempt.feasible.tolist(),
                                                                                attempt.totals.tolist(), strict=False)
                                     if t == best and attempt.node_names[int(r)] != attempt.node)
    cache.assume_pod(pod, attempt.node)

