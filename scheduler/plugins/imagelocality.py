"""ImageLocality (the seed's ImageLocalityPriority): prefer nodes that already hold the pod's images.

As kube-scheduler: each container image found in the node's ``status.images`` scores its size scaled by its
spread (nodes holding it / all nodes), so one popular node does not attract every pod ("node heating"); the sum
is clamped to [23 MiB, 1000 MiB × containers] and mapped linearly onto 0..100. Names are compared after Docker's
normalisation, so ``busybox`` is ``docker.io/library/busybox:latest``.

Batch form only where no scored node lists any image (every score 0); otherwise the per-node path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..framework import MAX_NODE_SCORE, CycleState, NodeInfo, Pod
from ..nodetable import NodeTable

NAME = "ImageLocality"
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
_STATE_KEY = "PreScore" + NAME


def normalized_image_name(name: str) -> str:
    """Docker's reference normalisation: default registry ``docker.io``, ``library/`` for official images,
    tag ``latest`` when neither tag nor digest is given."""
    name, at, digest = name.partition("@")
    repository, tag = name, ""
    if name.rfind(":") > name.rfind("/"):
        repository, tag = name.rsplit(":", 1)
    first, slash, rest = repository.partition("/")
    if not slash or ("." not in first and ":" not in first and first != "localhost"):
        domain, path = "docker.io", repository
    else:
        domain, path = first, rest
    if domain == "index.docker.io":
        domain = "docker.io"
    if domain == "docker.io" and "/" not in path:
        path = "library/" + path
    if at:
        return f"{domain}/{path}{':' + tag if tag else ''}@{digest}"
    return f"{domain}/{path}:{tag or 'latest'}"


def node_images(node: dict[str, Any]) -> dict[str, int]:
    """Normalised image name → size in bytes, from ``status.images``."""
    images: dict[str, int] = {}
    for image in node.get("status", {}).get("images") or []:
        for name in image.get("names") or []:
            images[normalized_image_name(name)] = int(image.get("sizeBytes") or 0)
    return images


def image_spread(nodes: list[NodeInfo]) -> dict[str, int]:
    """Normalised image name → the number of nodes that hold it (ImageStateSummary.NumNodes)."""
    spread: dict[str, int] = {}
    for info in nodes:
        for name in node_images(info.node):
            spread[name] = spread.get(name, 0) + 1
    return spread


def pod_images(pod: Pod) -> list[str]:
    spec = pod.get("spec", {})
    return [normalized_image_name(c.get("image", "")) for c in
            (spec.get("initContainers") or []) + (spec.get("containers") or [])]


def sum_image_scores(images: list[str], on_node: dict[str, int], spread: dict[str, int], total_nodes: int) -> int:
    return sum(int(on_node[name] * spread.get(name, 1) / total_nodes) for name in images if name in on_node)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = min(max(sum_scores, MIN_THRESHOLD), max_threshold)
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)


def image_locality_score(pod: Pod, node: NodeInfo, spread: dict[str, int], total_nodes: int) -> int:
    images = pod_images(pod)
    if not images or total_nodes == 0:
        return 0
    return calculate_priority(sum_image_scores(images, node_images(node.node), spread, total_nodes), len(images))


class ImageLocality:
    name = NAME

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> None:
        everyone = state.all_nodes(nodes)
        state[_STATE_KEY] = (image_spread(everyone), len(everyone))

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        if _STATE_KEY not in state:
            self.pre_score(state, pod, [node_info])
        spread, total = state[_STATE_KEY]
        return image_locality_score(pod, node_info, spread, total)

    def batch_score(self, state: CycleState, pod: Pod, table: NodeTable, rows: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray] | None:
        if table.images[rows].any():
            return None
        zeros = np.zeros(len(rows), np.int64)
        return zeros, zeros
