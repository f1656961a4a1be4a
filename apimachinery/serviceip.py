"""Where a Service's ClusterIP is reached without a pod network: the loopback stand-in address.

With the process runtime (pods are host processes on loopback pod IPs) nothing routes 10.96.0.0/12, and kubelab
writes nothing into the host's routing tables. kube-proxy's userspace mode (``proxy/userspace.py``) listens for each
ClusterIP on a loopback address instead — the ClusterIP's last three bytes under 127.0.0.0/8 (10.96.0.1 →
127.96.0.1; the Service CIDR 10.96.0.0/12 maps into 127.96.0.0/12, clear of the pod CIDR 127.16.0.0/12) —
and the kubelet's Service variables name that address, so ``$WEB_SERVICE_HOST:$WEB_SERVICE_PORT`` works in a pod
of either runtime. Shared here because the kubelet and the proxy must agree on it.
"""

from __future__ import annotations

import ipaddress


def loopback_address(cluster_ip: str) -> str:
    """The loopback stand-in of an IPv4 ClusterIP (the IP itself where it is not IPv4)."""
    ip = ipaddress.ip_address(cluster_ip)
    if ip.version != 4:
        return cluster_ip
    return str(ipaddress.IPv4Address((127 << 24) | (int(ip) & 0xFFFFFF)))
