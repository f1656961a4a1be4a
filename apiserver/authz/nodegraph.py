"""The node graph (kube's ``plugin/pkg/auth/authorizer/node/graph``): which node may read which object.

A pod bound to a node (``spec.nodeName``) links the node to what the pod uses: its service account, the secrets
and config maps of its volumes (projected ones too), environment and image pull secrets, and its persistent volume
claims. The graph is kept from a watch on the pods' watch cache, one pod at a time, so an edge appears as soon as
the pod is bound and goes when the pod is deleted (or moved). A watch that closes is started again from a list.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Mapping
from typing import Any

from ..storage.cacher import ObjectFilter, WatchCache

log = logging.getLogger(__name__)

# An object a node may read: (resource, namespace, name).
Vertex = tuple[str, str, str]


def pod_references(pod: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(resource, name) of everything a pod uses from its namespace."""
    spec = pod.get("spec") or {}
    yield "serviceaccounts", spec.get("serviceAccountName") or "default"
    for ref in spec.get("imagePullSecrets") or ():
        if ref.get("name"):
            yield "secrets", ref["name"]
    for volume in spec.get("volumes") or ():
        yield from _volume_references(volume)
    for field in ("containers", "initContainers", "ephemeralContainers"):
        for container in spec.get(field) or ():
            for source in container.get("envFrom") or ():
                for key, resource in (("secretRef", "secrets"), ("configMapRef", "configmaps")):
                    if (source.get(key) or {}).get("name"):
                        yield resource, source[key]["name"]
            for env in container.get("env") or ():
                value_from = env.get("valueFrom") or {}
                for key, resource in (("secretKeyRef", "secrets"), ("configMapKeyRef", "configmaps")):
                    if (value_from.get(key) or {}).get("name"):
                        yield resource, value_from[key]["name"]


def _volume_references(volume: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    if (volume.get("secret") or {}).get("secretName"):
        yield "secrets", volume["secret"]["secretName"]
    if (volume.get("configMap") or {}).get("name"):
        yield "configmaps", volume["configMap"]["name"]
    if (volume.get("persistentVolumeClaim") or {}).get("claimName"):
        yield "persistentvolumeclaims", volume["persistentVolumeClaim"]["claimName"]
    for source in (volume.get("projected") or {}).get("sources") or ():
        if (source.get("secret") or {}).get("name"):
            yield "secrets", source["secret"]["name"]
        if (source.get("configMap") or {}).get("name"):
            yield "configmaps", source["configMap"]["name"]
    for driver in ("cephfs", "cinder", "flexVolume", "iscsi", "rbd", "scaleIO", "storageos", "azureFile"):
        ref = (volume.get(driver) or {}).get("secretRef") or {}
        if ref.get("name"):
            yield "secrets", ref["name"]


class NodeGraph:
    """Edges object → nodes, with a count per (object, node) since several pods may share one secret."""

    def __init__(self) -> None:
        self._pods: dict[str, tuple[str, tuple[Vertex, ...]]] = {}  # pod key → (node, its vertices)
        self._edges: dict[Vertex, dict[str, int]] = {}
        self._task: asyncio.Task[None] | None = None

    def has_edge(self, vertex: Vertex, node: str) -> bool:
        return node in self._edges.get(vertex, ())

    def set_pod(self, key: str, pod: Mapping[str, Any] | None) -> None:
        """Add, change (``pod``) or remove (None) one pod's edges."""
        old = self._pods.pop(key, None)
        if old is not None:
            node, vertices = old
            for vertex in vertices:
                counts = self._edges.get(vertex)
                if counts is not None:
                    counts[node] -= 1
                    if counts[node] <= 0:
                        del counts[node]
                    if not counts:
                        del self._edges[vertex]
        node = ((pod or {}).get("spec") or {}).get("nodeName") or ""
        if pod is None or not node:
            return
        namespace = pod["metadata"].get("namespace") or ""
        vertices = tuple({(resource, namespace, name) for resource, name in pod_references(pod)})
        self._pods[key] = (node, vertices)
        for vertex in vertices:
            counts = self._edges.setdefault(vertex, {})
            counts[node] = counts.get(node, 0) + 1

    def start(self, pods: WatchCache) -> None:
        self._task = asyncio.create_task(self._follow(pods), name="node graph")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _follow(self, pods: WatchCache) -> None:
        while True:
            watcher = pods.watch(None, ObjectFilter())  # the current pods as ADDED, then their changes
            self._pods.clear()
            self._edges.clear()
            while (event := await watcher.next()) is not None:
                # Everything already queued in one go: under a burst of pod writes the graph wakes once per
                # burst, not once per pod.
                while event is not None:
                    kind, co = event
                    self.set_pod(co.key, None if kind == "DELETED" else co.obj)
                    event = watcher.queue.get_nowait() if not watcher.queue.empty() else None
                if watcher.closed and watcher.queue.empty():
                    break
            log.info("node graph: pod watch closed, starting again")
            await asyncio.sleep(0.1)
