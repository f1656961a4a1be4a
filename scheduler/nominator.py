"""Pending pods nominated to nodes, as kube-scheduler's ``nominator`` (kept by the scheduling queue).

Why: preemption deletes victims, but the pod that preempted them is bound only after they are gone, in a later
cycle. Until then the room it made must stay its own: when the runner filters a node for another pod, it first
adds the pods nominated to that node with an equal or higher priority (``Runner.filter_with_nominated_pods``).

Guarantees (kube-scheduler's ``addNominatedPodUnlocked`` / ``updateNominatedPod``):

* A pod is nominated to at most one node. ``add(pod, node)`` replaces any earlier nomination: ``node`` given is
  the scheduler's own decision (a preemption; ``""`` clears), ``None`` takes the pod's ``status.nominatedNodeName``.
* A pod that carries ``spec.nodeName`` is never nominated (it is bound).
* ``update(old, new)``: an update in which neither version has a ``nominatedNodeName`` keeps the nomination the
  scheduler holds in memory (its status write may not have arrived yet); otherwise the new status decides.
* The queue drops the nomination when the pod is deleted or seen bound, and the scheduler when it assumes the pod.
"""

from __future__ import annotations

from .framework import Pod, pod_key


def nominated_node_name(pod: Pod) -> str:
    return (pod.get("status") or {}).get("nominatedNodeName") or ""


class Nominator:
    def __init__(self) -> None:
        self._node_of: dict[str, str] = {}  # pod key → node name
        self._pods: dict[str, dict[str, Pod]] = {}  # node name → pod key → pod (in nomination order)

    def add(self, pod: Pod, node_name: str | None = None) -> None:
        key = pod_key(pod)
        self.delete(key)
        node = nominated_node_name(pod) if node_name is None else node_name
        if not node or (pod.get("spec") or {}).get("nodeName"):
            return
        self._node_of[key] = node
        self._pods.setdefault(node, {})[key] = pod

    def update(self, old: Pod, new: Pod) -> None:
        key = pod_key(new)
        keep = None
        if not nominated_node_name(old) and not nominated_node_name(new):
            keep = self._node_of.get(key)
        self.add(new, keep)

    def delete(self, key: str) -> None:
        node = self._node_of.pop(key, None)
        if node is None:
            return
        pods = self._pods[node]
        del pods[key]
        if not pods:
            del self._pods[node]

    def node_of(self, key: str) -> str | None:
        return self._node_of.get(key)

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return list(self._pods.get(node_name, {}).values())

    def nodes(self) -> list[str]:
        """Nodes that have nominated pods (the runner looks only at these)."""
        return list(self._pods)

    def __len__(self) -> int:
        return len(self._node_of)
