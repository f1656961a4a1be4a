"""ImageLocality (the seed's ImageLocalityPriority): nodes already holding big images score higher."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework import CycleState, NodeInfo
from scheduler.plugins.imagelocality import MB, ImageLocality, calculate_priority, normalized_image_name
from support.builders import make_node, make_pod


@pytest.mark.parametrize("name,normalized", [
    ("busybox", "docker.io/library/busybox:latest"),
    ("busybox:1.36", "docker.io/library/busybox:1.36"),
    ("library/busybox", "docker.io/library/busybox:latest"),
    ("docker.io/library/busybox:latest", "docker.io/library/busybox:latest"),
    ("index.docker.io/library/nginx", "docker.io/library/nginx:latest"),
    ("bitnami/redis:7", "docker.io/bitnami/redis:7"),
    ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"),
    ("localhost:5000/app", "localhost:5000/app:latest"),
    ("localhost/app:v1", "localhost/app:v1"),
    ("busybox@sha256:abc", "docker.io/library/busybox@sha256:abc"),
])
def test_normalized_image_name(name: str, normalized: str) -> None:
    assert normalized_image_name(name) == normalized


@pytest.mark.parametrize("total,containers,expected", [
    (0, 1, 0),
    (23 * MB, 1, 0),  # the lower clamp: small images do not count
    (1000 * MB, 1, 100),
    (5000 * MB, 1, 100),  # the upper clamp per container
    (1000 * MB, 2, 49),  # 100 * (1000 - 23) // (2000 - 23)
    (300 * MB, 1, 28),  # 100 * 277 / 977
])
def test_calculate_priority(total: int, containers: int, expected: int) -> None:
    assert calculate_priority(total, containers) == expected


def node(name: str, *images: tuple[list[str], int]) -> NodeInfo:
    n = make_node(name)
    n["status"]["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return NodeInfo(n)


def score_all(pod: dict[str, Any], nodes: list[NodeInfo]) -> dict[str, int]:
    plugin, state = ImageLocality(), CycleState(nodes)
    plugin.pre_score(state, pod, nodes)
    return {n.name: plugin.score(state, pod, n) for n in nodes}


def test_bigger_images_on_the_node_win_scaled_by_spread() -> None:
    """The seed: nodes that already have the pod's images are preferred, the bigger the better."""
    big = node("node01", (["docker.io/library/app:latest"], 800 * MB), (["docker.io/library/busybox:latest",
                                                                          "busybox"], 500 * MB))
    small = node("node02", (["docker.io/library/busybox:latest"], 500 * MB))
    empty = node("node03")
    pod = make_pod("p", image="app").build()
    pod["spec"]["containers"].append({"name": "side", "image": "busybox:latest"})
    scores = score_all(pod, [big, small, empty])
    # node01: 800 MB × 1/3 + 500 MB × 2/3 ≈ 600 MB over [23, 2000] MB → 29; node02: 333 MB → 15.
    assert scores == {"node01": 29, "node02": 15, "node03": 0}


def test_spread_counts_every_node_not_only_feasible_ones() -> None:
    holders = [node(f"n{i}", (["docker.io/library/app:latest"], 1000 * MB)) for i in range(2)]
    pod = make_pod("p", image="docker.io/library/app").build()
    plugin, state = ImageLocality(), CycleState(holders + [node("n2"), node("n3")])
    plugin.pre_score(state, pod, holders[:1])  # only n0 is feasible; the image is on 2 of 4 nodes
    assert plugin.score(state, pod, holders[0]) == calculate_priority(500 * MB, 1) == 48


def test_pod_without_matching_images_scores_zero_everywhere() -> None:
    assert score_all(make_pod("p", image="nginx").build(), [node("a", (["busybox"], 900 * MB))]) == {"a": 0}
