"""Write the kubeconfigs that point kubectl, the Python clients and each component at a local kubelab.

One cluster, one user and one context, all named ``kubelab``, as kubeadm's ``admin.conf`` and its component
kubeconfigs: for an ``https`` server the CA and the user's client certificate are embedded (``*-data``), so the
file alone is a credential (written 0600) and keeps working wherever it is copied. Without TLS material the user
entry is empty (a plain-HTTP server, which asks for no credentials).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from kubelab.pki import KeyPair, write_private

__all__ = ["CONTEXT", "kubeconfig_dict", "write_kubeconfig"]

CONTEXT = "kubelab"


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def kubeconfig_dict(server: str, *, ca: Path | None = None, client: KeyPair | None = None,
                    token: str | None = None) -> dict[str, Any]:
    """A kubeconfig with one cluster, one user and one context, all named ``kubelab``; the user has the client
    certificate, or else the bearer ``token`` (a bootstrap token)."""
    cluster: dict[str, Any] = {"server": server}
    if ca is not None:
        cluster["certificate-authority-data"] = _b64(ca)
    user: dict[str, Any] = {}
    if client is not None:
        user = {"client-certificate-data": _b64(client.cert), "client-key-data": _b64(client.key)}
    elif token is not None:
        user = {"token": token}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": user}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, server: str, *, ca: Path | None = None, client: KeyPair | None = None,
                     token: str | None = None) -> Path:
    """Write (or overwrite) the kubeconfig at path, 0600 and atomically; returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    write_private(p, yaml.safe_dump(kubeconfig_dict(server, ca=ca, client=client, token=token),
                                    sort_keys=False).encode())
    return p
