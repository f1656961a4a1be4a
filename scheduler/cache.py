"""The scheduler's cache: NodeInfos with the pods placed on them, assumed pods, and the node table mirror.

As kube-scheduler's cache:

* A pod counts on its node from the moment the scheduler *assumes* it (before the asynchronous bind), so two
  quick decisions never double-book a node. When the watch shows the pod bound, the assumption is confirmed
  (``add_pod``); if the bind fails, ``forget_pod`` takes it off again.
* Pods bound to a node the cache does not know yet are kept and placed when the node arrives; a node deleted
  while pods remain just leaves the table.
* Terminated pods (Succeeded/Failed) free their node's resources as deleted ones do.
* Every change is mirrored into ``table`` (scheduler/nodetable.py), which the vectorised filters read. The
  cycle is synchronous on one event loop, so the live cache is the attempt's snapshot: nothing changes
  between an attempt's filters and its assume.

``node_changed`` says whether a node update could make an unschedulable pod fit (kube-scheduler's
``nodeSchedulingPropertiesChange``: allocatable, labels, taints, unschedulable, or the node's conditions).
"""

from __future__ import annotations

from typing import Any

from .framework import NodeInfo, Pod
from .nodetable import NodeTable
from .queue import pod_key


def _static(node: dict[str, Any]) -> tuple[Any, ...]:
    """What node-static plugins read: labels, name, spec (taints, unschedulable)."""
    return node["metadata"].get("labels"), node.get("spec")


def _scheduling_properties(node: dict[str, Any]) -> tuple[Any, ...]:
    status = node.get("status", {})
    return _static(node) + (status.get("allocatable"), status.get("images"))


def is_terminated(pod: Pod) -> bool:
    return pod.get("status", {}).get("phase") in ("Succeeded", "Failed")


class Cache:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.table = NodeTable()
        self.pod_nodes: dict[str, str] = {}  # pod key → node name (bound or assumed)
        self.pods: dict[str, Pod] = {}  # pod key → the pod as last seen bound (or as assumed)
        self.assumed: set[str] = set()
        self._by_node: dict[str, set[str]] = {}

    # --- nodes --------------------------------------------------------------------------------------------------
    def add_node(self, node: dict[str, Any]) -> bool:
        """Add or update a node; True if the change could help an unschedulable pod."""
        name = node["metadata"]["name"]
        info = self.nodes.get(name)
        if info is None:
            info = self.nodes[name] = NodeInfo(node)
            for key in self._by_node.get(name, ()):
                info.add_pod(key, self.pods[key])
            self.table.upsert(info)
            for key in self._by_node.get(name, ()):
                self.table.count_pod(name, self.pods[key], 1)
            return True
        old = info.node
        info.node = node
        changed = _scheduling_properties(old) != _scheduling_properties(node)
        if changed:
            self.table.upsert(info, static_changed=_static(old) != _static(node))
        return changed

    def remove_node(self, name: str) -> None:
        if self.nodes.pop(name, None) is not None:
            self.table.remove(name)

    # --- pods ---------------------------------------------------------------------------------------------------
    def assume_pod(self, pod: Pod, node_name: str) -> None:
        key = pod_key(pod)
        self._place(key, pod, node_name)
        self.assumed.add(key)

    def forget_pod(self, key: str) -> None:
        """Undo an assumption (failed bind) or drop a pod that is gone."""
        self.assumed.discard(key)
        node_name = self.pod_nodes.pop(key, None)
        pod = self.pods.pop(key, None)
        if node_name is None:
            return
        keys = self._by_node.get(node_name)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_node[node_name]
        info = self.nodes.get(node_name)
        if info is not None and pod is not None:
            info.remove_pod(key)
            self.table.count_pod(node_name, pod, -1)
            self.table.update_usage(info)

    def add_pod(self, pod: Pod) -> None:
        """A pod seen bound in the watch (confirms an assumption), or updated while bound."""
        key = pod_key(pod)
        if is_terminated(pod):
            self.forget_pod(key)
            return
        self.assumed.discard(key)
        self._place(key, pod, pod["spec"]["nodeName"])

    def remove_pod(self, key: str) -> None:
        self.forget_pod(key)

    def is_assumed(self, key: str) -> bool:
        return key in self.assumed

    def _place(self, key: str, pod: Pod, node_name: str) -> None:
        if self.pod_nodes.get(key) not in (None, node_name):
            self.forget_pod(key)
        old = self.pods.get(key)
        self.pod_nodes[key] = node_name
        self.pods[key] = pod
        self._by_node.setdefault(node_name, set()).add(key)
        info = self.nodes.get(node_name)
        if info is None:
            return
        if old is not None:
            self.table.count_pod(node_name, old, -1)
        info.add_pod(key, pod)
        self.table.count_pod(node_name, pod, 1)
        self.table.update_usage(info)
