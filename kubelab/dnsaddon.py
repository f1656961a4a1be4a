"""Cluster DNS as `kubelab up` runs it: what kubeadm's CoreDNS add-on sets up, for a DNS server that is a
process rather than a Deployment.

* The identity: a client certificate for ``system:coredns`` (kubeadm's ``coredns`` service account, whose token
  the pods would mount), bound to kubeadm's ``system:coredns`` ClusterRole (list and watch endpoints, services,
  pods, namespaces, EndpointSlices) plus a Role in kube-system to create ``kube-dns`` and keep its EndpointSlice,
  which on kubeadm the EndpointSlice controller keeps for the CoreDNS pods. Created through the plain port (full
  rights, as kubeadm's ``admin.conf``) once the apiserver is healthy, before the server starts asking.
* The address: 127.0.0.1, port 53 when this process may bind it and nobody has, else a free port (the
  EndpointSlice says which; kube-proxy routes ``10.96.0.10:53`` there).
* The kubelets' flags: ``--cluster-dns 10.96.0.10 --cluster-domain cluster.local``, kubeadm's defaults.
"""

from __future__ import annotations

import contextlib
import socket

import httpx

from kubelab.clusterpki import Identity
from kubelab.etcd import free_port

__all__ = ["CLUSTER_DNS_IP", "CLUSTER_DOMAIN", "DNS", "create_rbac", "dns_port", "kubelet_flags"]

CLUSTER_DNS_IP = "10.96.0.10"  # kubeadm's: the tenth address of the service range
CLUSTER_DOMAIN = "cluster.local"
DNS = Identity("dns", "system:coredns")

_RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLE = {"apiVersion": f"{_RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": "system:coredns"},
                "rules": [{"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
                           "verbs": ["list", "watch"]},
                          {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                           "verbs": ["list", "watch"]}]}
ROLE = {"apiVersion": f"{_RBAC}/v1", "kind": "Role", "metadata": {"name": "kubelab:dns", "namespace": "kube-system"},
        "rules": [{"apiGroups": [""], "resources": ["services"], "verbs": ["get", "create"]},
                  {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                   "verbs": ["get", "create", "update"]}]}


def _binding(kind: str, name: str, namespace: str | None = None) -> dict[str, object]:
    meta: dict[str, str] = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": f"{_RBAC}/v1", "kind": f"{kind}Binding", "metadata": meta,
            "roleRef": {"apiGroup": _RBAC, "kind": kind, "name": name},
            "subjects": [{"apiGroup": _RBAC, "kind": "User", "name": DNS.user}]}


def create_rbac(api_url: str) -> None:
    """The roles and bindings above, unless they exist (an apiserver without RBAC just says no)."""
    objects = [("clusterroles", CLUSTER_ROLE), ("clusterrolebindings", _binding("ClusterRole", "system:coredns")),
               ("namespaces/kube-system/roles", ROLE),
               ("namespaces/kube-system/rolebindings", _binding("Role", "kubelab:dns", "kube-system"))]
    with httpx.Client(timeout=5.0) as client, contextlib.suppress(httpx.HTTPError):
        for path, obj in objects:
            client.post(f"{api_url}/apis/{_RBAC}/v1/{path}", json=obj)


def dns_port(preferred: int = 53, host: str = "127.0.0.1") -> int:
    """``preferred`` when both its UDP and TCP ports can be bound on ``host`` now, else a free port."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, socket.socket() as tcp:
            udp.bind((host, preferred))
            tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            tcp.bind((host, preferred))
        return preferred
    except OSError:
        return free_port()


def kubelet_flags() -> list[str]:
    return ["--cluster-dns", CLUSTER_DNS_IP, "--cluster-domain", CLUSTER_DOMAIN]
