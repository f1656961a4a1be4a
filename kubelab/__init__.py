"""kubelab: a real Kubernetes control plane in Python; ``from kubelab import Cluster`` runs one (``api.py``).

``Cluster`` is imported on first use, so ``python -m kubelab`` and the pytest plugin stay as quick to load as the
launcher modules they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubelab.api import Cluster

__all__ = ["Cluster"]


def __getattr__(name: str) -> Any:
    if name == "Cluster":
        from kubelab.api import Cluster

        return Cluster
    raise AttributeError(f"module 'kubelab' has no attribute {name!r}")
