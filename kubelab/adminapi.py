"""The cluster as its administrator sees it from the launcher's commands (`kubelab user`, `kubelab token`).

One way for a command to reach the apiserver of a `kubelab up` data dir: ``admin_client(data_dir)`` opens an httpx
client on the HTTPS server of ``<data-dir>/kubeconfig`` (the ``kubernetes-admin`` certificate, the cluster CA), and
``answer(response)`` turns an answer into its JSON or an ``ApiError`` carrying the Status message, which the
commands print as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from kubeclient.config import ConfigError, load_kubeconfig

__all__ = ["ApiError", "admin_client", "answer"]


class ApiError(RuntimeError):
    """A request the apiserver refused, or a data dir without an admin kubeconfig (shown as is)."""


def admin_client(data_dir: Path, timeout: float = 10.0) -> httpx.Client:
    """An httpx client authenticated as ``kubernetes-admin`` on the cluster's HTTPS server."""
    admin = data_dir / "kubeconfig"
    try:
        config = load_kubeconfig(admin)
    except ConfigError as err:
        raise ApiError(str(err)) from None
    if not config.host.startswith("https://"):
        raise ApiError(f"{admin} is not an HTTPS kubeconfig of a kubelab cluster")
    return httpx.Client(base_url=config.host, verify=config.ssl_context() or True, timeout=timeout)


def answer(response: httpx.Response) -> Any:
    """The JSON of a successful answer; ``ApiError`` with the method, path, code and Status message otherwise."""
    if response.is_success:
        return response.json()
    try:
        message = response.json().get("message") or response.text
    except ValueError:
        message = response.text
    raise ApiError(f"{response.request.method} {response.request.url.path}: {response.status_code} {message}")
