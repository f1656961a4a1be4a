"""The node graph (kube's ``plugin/pkg/auth/authorizer/node/graph``): which node may read which object.

A pod bound to a node (``spec.nodeName``) links the node to what the pod uses: its service account, the secrets
and config maps of its volumes (projected ones too), environment and image pull secrets, and its persistent volume
claims; a claim links on to the persistent volume it is bound to (``spec.volumeName``), so a kubelet may read the
volumes of its pods' claims. The graph is kept from watches on the pods' and the claims' watch caches, one object
at a time, so an edge appears as soon as the pod is bound (or the claim bound) and goes when the pod is deleted
(or moved). A watch that closes is started again from a list. As kube's graph populator, a pod event that cannot
change the pod's edges is passed over without decoding the pod (``pod_may_change``): most of a pod's writes are
its create (no node yet) and its status updates.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..storage.cacher import CachedObject, ObjectFilter, WatchCache

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
        self._claims: dict[str, tuple[Vertex, str]] = {}  # claim key → (its vertex, the volume it is bound to)
        self._volume_claims: dict[str, set[Vertex]] = {}  # volume name → the claims bound to it
        self._tasks: list[asyncio.Task[None]] = []

    def has_edge(self, vertex: Vertex, node: str) -> bool:
        if vertex[0] == "persistentvolumes":  # pv ← claim ← pod → node
            return any(node in self._edges.get(claim, ()) for claim in self._volume_claims.get(vertex[2], ()))
        return node in self._edges.get(vertex, ())

    def set_claim(self, key: str, claim: Mapping[str, Any] | None) -> None:
        """Add, change (``claim``) or remove (None) one claim's edge to its volume."""
        old = self._claims.pop(key, None)
        if old is not None:
            vertex, volume = old
            claims = self._volume_claims.get(volume)
            if claims is not None:
                claims.discard(vertex)
                if not claims:
                    del self._volume_claims[volume]
        volume = ((claim or {}).get("spec") or {}).get("volumeName") or ""
        if claim is None or not volume:
            return
        vertex = ("persistentvolumeclaims", claim["metadata"].get("namespace") or "", claim["metadata"]["name"])
        self._claims[key] = (vertex, volume)
        self._volume_claims.setdefault(volume, set()).add(vertex)

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

    def start(self, pods: WatchCache, claims: WatchCache) -> None:
        self._tasks = [asyncio.create_task(self._follow(pods, self._pods, self.set_pod, "pod", self.pod_may_change),
                                           name="node graph: pods"),
                       asyncio.create_task(self._follow(claims, self._claims, self.set_claim, "claim"),
                                           name="node graph: claims")]

    def pod_may_change(self, co: CachedObject) -> bool:
        """Whether a pod's ADDED or MODIFIED event can change its edges (kube's ``graphPopulator.updatePod``): not
        while it has no node, nor once it has the node it had, since what a pod references is immutable except
        for ephemeral containers, which may add references (a pod with any is looked at). Read from the cached
        object's fields and bytes: the pod is decoded only when it may change."""
        node = co.fields.get("spec.nodeName") or ""
        known = self._pods.get(co.key)
        if known is None:
            return bool(node)
        return known[0] != node or b'"ephemeralContainers"' in co.raw

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _follow(self, cache: WatchCache, known: dict[str, Any],
                      apply: Callable[[str, Mapping[str, Any] | None], None], what: str,
                      may_change: Callable[[CachedObject], bool] = lambda co: True) -> None:
        while True:
            watcher = cache.watch(None, ObjectFilter())  # the current objects as ADDED, then their changes
            for key in list(known):
                apply(key, None)
            while (event := await watcher.next()) is not None:
                # Everything already queued in one go: under a burst of writes the graph wakes once per burst,
                # not once per object.
                while event is not None:
                    kind, co = event
                    if kind == "DELETED":
                        apply(co.key, None)
                    elif may_change(co):
                        apply(co.key, co.obj)
                    event = watcher.queue.get_nowait() if not watcher.queue.empty() else None
                if watcher.closed and watcher.queue.empty():
                    break
            log.info("node graph: %s watch closed, starting again", what)
