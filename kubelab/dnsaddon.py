"""Where `kubelab up` runs the cluster DNS and what it tells the kubelets (kubeadm's CoreDNS add-on, for a DNS
server that is a process rather than a Deployment; its identity is ``clusterpki.DNS`` and its rights are in
``addons``).

* The address: 127.0.0.1, port 53 when this process may bind it and nobody has, else a free port (the
  ``kube-system/kube-dns`` EndpointSlice says which; kube-proxy routes ``10.96.0.10:53`` there).
* The kubelets' flags: ``--cluster-dns 10.96.0.10 --cluster-domain cluster.local``, kubeadm's defaults.
"""

from __future__ import annotations

import socket

from kubelab.etcd import free_port

__all__ = ["CLUSTER_DNS_IP", "CLUSTER_DOMAIN", "dns_port", "kubelet_flags"]

CLUSTER_DNS_IP = "10.96.0.10"  # kubeadm's: the tenth address of the service range
CLUSTER_DOMAIN = "cluster.local"


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
    """What a kubelet is told of the cluster DNS."""
    return ["--cluster-dns", CLUSTER_DNS_IP, "--cluster-domain", CLUSTER_DOMAIN]
