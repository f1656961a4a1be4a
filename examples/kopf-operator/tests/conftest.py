"""The operator under test, run for the session against the kubelab plugin's cluster, with its CRD applied."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubelab import Cluster
from kubelab.testing import Operator

HERE = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def operator(kubelab_cluster: Cluster) -> Iterator[Operator]:
    """The CRD applied and established, then ``kopf run`` for every namespace until the session ends."""
    (crd,) = kubelab_cluster.apply(HERE / "manifests")
    kubelab_cluster.wait_for(crd, "Established", timeout=30)
    with kubelab_cluster.operator(sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces",
                                  str(HERE / "operator.py"), cwd=HERE) as running:
        yield running
