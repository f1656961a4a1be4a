"""Write the kubeconfig that points kubectl and the Python clients at a local kubelab.

The cluster has no authentication yet, so the user entry is empty; the file exists so that
`kubectl --kubeconfig .kubelab/kubeconfig` and `kubernetes.config.load_kube_config()` work on any port.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

__all__ = ["CONTEXT", "kubeconfig_dict", "write_kubeconfig"]

CONTEXT = "kubelab"


def kubeconfig_dict(server: str) -> dict[str, Any]:
    """A kubeconfig with one cluster, one user and one context, all named ``kubelab``."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server}}],
        "users": [{"name": CONTEXT, "user": {}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, server: str) -> Path:
    """Write (or overwrite) the kubeconfig at path; returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(yaml.safe_dump(kubeconfig_dict(server), sort_keys=False))
    p.chmod(0o600)
    return p
