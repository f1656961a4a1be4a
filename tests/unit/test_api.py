"""kubelab.Cluster's arguments are checked before anything starts; the package exports it."""

from __future__ import annotations

import pytest

import kubelab
from kubelab.api import Cluster


def test_the_package_exports_the_library_cluster() -> None:
    assert kubelab.Cluster is Cluster
    assert kubelab.cluster.Cluster is not Cluster  # the launcher's engine stays where `kubelab up` uses it


@pytest.mark.parametrize("components", [["scheduler"], ["apiserver", "etcd-operator"], []])
def test_components_must_name_the_apiserver_and_known_components(components: list[str]) -> None:
    with pytest.raises(ValueError, match="components must include 'apiserver'"):
        Cluster(components=components)


def test_a_cluster_not_started_says_so() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        _ = Cluster().api_url


def test_without_kubelets_no_nodes_are_expected() -> None:
    cluster = Cluster(nodes=3, hollow_nodes=5, components=["apiserver", "scheduler"])
    assert (cluster.node_count, cluster.hollow_nodes) == (0, 0)
