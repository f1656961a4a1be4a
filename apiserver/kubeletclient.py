"""The apiserver as a client of the kubelets (kube-apiserver's ``KubeletClientConfig``): where a node's kubelet
serves, and the TLS it is reached with.

Every call to a kubelet — logs, exec, attach, port-forward, ``nodes/{name}/proxy``, the metrics scrapes — goes over
HTTPS (or WSS) presenting ``--kubelet-client-certificate``/``--kubelet-client-key`` (kubeadm's
``apiserver-kubelet-client.crt``), which the kubelet authenticates with its ``--client-ca-file`` and authorizes
with a SubjectAccessReview (kubeadm binds the identity to ``system:kubelet-api-admin``). The kubelet's serving
certificate is verified against ``--kubelet-certificate-authority`` when given; without it, as kube-apiserver, it
is not verified (kubelets' self-signed certificates).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

__all__ = ["KubeletClientConfig", "configure", "node_kubelet_url", "ssl_context", "ws_url"]


@dataclass(frozen=True)
class KubeletClientConfig:
    cert_file: str | None = None
    key_file: str | None = None
    ca_file: str | None = None

    def context(self) -> ssl.SSLContext:
        # Without a CA nothing is verified (kube's InsecureSkipVerify), so no roots are loaded: the system store
        # (create_default_context's) took 0.02-0.1 s of every apiserver's start for a context that never reads it.
        ctx = (ssl.create_default_context(cafile=self.ca_file) if self.ca_file
               else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
        ctx.check_hostname = False  # kubelets' certificates name their node's addresses; the CA is what counts
        if not self.ca_file:
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_file and self.key_file:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


_context: ssl.SSLContext | None = None


def configure(config: KubeletClientConfig) -> None:
    """Set the TLS the process's kubelet calls use (at start-up; files are read now, so errors show at once)."""
    global _context
    _context = config.context()


def ssl_context() -> ssl.SSLContext:
    """The context for a kubelet connection (the default configuration until ``configure`` is called)."""
    global _context
    if _context is None:
        _context = KubeletClientConfig().context()
    return _context


def node_kubelet_url(node: dict[str, Any]) -> str | None:
    """``https://<address>:<port>`` of a node's kubelet, or ``None`` when it has no endpoint (hollow nodes' port
    is 0). The address: ``status.addresses`` InternalIP, else Hostname; the port:
    ``status.daemonEndpoints.kubeletEndpoint.Port``."""
    status = node.get("status", {})
    port = (status.get("daemonEndpoints") or {}).get("kubeletEndpoint", {}).get("Port")
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    host = addresses.get("InternalIP") or addresses.get("Hostname")
    return f"https://{host}:{port}" if port and host else None


def ws_url(url: str) -> str:
    """The websocket form of a kubelet URL."""
    return "wss://" + url.removeprefix("https://") if url.startswith("https://") else url
