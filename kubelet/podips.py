"""The node's pod IPs: one address per pod from the Node's ``spec.podCIDR``, as CNI's host-local IPAM hands them out.

The node IPAM controller gives the Node its CIDR; this pool gives each pod (sandbox) one address of it. As
host-local with the bridge plugin: the network address, the first address (the bridge's gateway) and the
broadcast address are never handed out, and addresses go round-robin from the last one reserved, so a freed IP
is not reused at once. Each reservation is a file ``<dir>/<ip>`` holding the pod UID (host-local's
``/var/lib/cni/networks/<net>/<ip>``), so a restarted kubelet finds its pods' IPs again and adopted pods keep them.

Every address of 127.0.0.0/8 is routed to ``lo`` on Linux and can be bound without set-up, so kubelab's default
cluster CIDR lies there and a pod's process can listen on its own IP. A Node without a podCIDR (no
controller-manager, ``--allocate-node-cidrs=false``) gives its pods the host IP, as before: node readiness never
waits on a CIDR. Once seen, a Node's CIDR is kept (the apiserver keeps it immutable). Until then the Node is read
afresh for every pod: only a read made after the pod arrived tells whether the Node had a CIDR when the pod was
bound (a cached "none", or the Node's own watch, may lag the pod's and give a pod bound after the CIDR the host IP).
"""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kubeclient import Clientset

log = logging.getLogger(__name__)

LAST_RESERVED = "last_reserved_ip.0"


class PoolExhausted(Exception):
    """Every address of the node's CIDR is taken (host-local: ``no IP addresses available in range set``)."""


class NoPodCIDR(PoolExhausted):
    """The pod network needs the Node's podCIDR and the Node has none yet (the pod waits, as kube's kubelet's
    network plugin does until the CIDR arrives)."""


class PodIPs:
    """The reservations of one node: pod UID → IP, on disk under ``dir``."""

    def __init__(self, dir: Path, client: Clientset | None, node_name: str, host_ip: str) -> None:
        self.dir = dir
        self.client = client
        self.node_name = node_name
        self.host_ip = host_ip
        self.cidr: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
        self.require_cidr = False  # a pod network of namespaces: no host IP for pods while the Node has no CIDR
        # Whether a watch of the Node keeps ``cidr`` current (the kubelet's node informer, once synced): then a pod
        # needs no read of the Node to learn there is no CIDR yet.
        self.watching: Callable[[], bool] = lambda: False
        self.dir.mkdir(parents=True, exist_ok=True)
        self.by_uid: dict[str, str] = {}
        for path in self.dir.iterdir():
            if path.name != LAST_RESERVED and not path.name.startswith("."):
                try:
                    self.by_uid[path.read_text().strip()] = path.name
                except OSError:
                    continue

    def set_cidr(self, cidr: str) -> None:
        self.cidr = ipaddress.ip_network(cidr, strict=False)

    def observe(self, node: Mapping[str, Any]) -> None:
        """Take the Node's ``spec.podCIDR`` once it has one (from a read of the Node or from its watch)."""
        cidr = (node.get("spec") or {}).get("podCIDR")
        if cidr and self.cidr is None:
            self.set_cidr(cidr)
            log.info("pod CIDR of node %s: %s", self.node_name, cidr)

    async def node_cidr(self) -> str | None:
        """The Node's ``spec.podCIDR``: as the Node's watch has it, else read from the API at each call until it
        is set; raises ``StatusError`` when the Node cannot be read, so a pod is not given the host IP for a
        passing error."""
        if self.cidr is None and self.client is not None and not self.watching():
            self.observe(await self.client.nodes.get(self.node_name))  # an error: the pod worker tries again
            if self.cidr is None:
                log.info("node %s has no podCIDR (yet): its pods get the host IP %s", self.node_name, self.host_ip)
        return str(self.cidr) if self.cidr is not None else None

    async def assign(self, uid: str) -> str:
        """The pod's IP: the one it has, else a new one from the Node's CIDR, else the host IP (no CIDR)."""
        if uid in self.by_uid:
            return self.by_uid[uid]
        if await self.node_cidr() is None:
            if self.require_cidr:
                raise NoPodCIDR(f"node {self.node_name} has no podCIDR yet")
            return self.host_ip
        return self.reserve(uid)

    def reserve(self, uid: str) -> str:
        """Reserve the next free address after the last reserved one (raises ``PoolExhausted``)."""
        assert self.cidr is not None
        first, last = int(self.cidr.network_address) + 2, int(self.cidr.broadcast_address) - 1
        if last < first:
            raise PoolExhausted(f"no IP addresses available in range set: {self.cidr}")
        try:
            start = int(ipaddress.ip_address((self.dir / LAST_RESERVED).read_text().strip())) + 1
        except (OSError, ValueError):
            start = first
        size = last - first + 1
        for i in range(size):
            ip = str(ipaddress.ip_address(first + (start - first + i) % size))
            try:
                fd = os.open(self.dir / ip, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                continue
            with os.fdopen(fd, "w") as f:
                f.write(uid)
            (self.dir / LAST_RESERVED).write_text(ip)
            self.by_uid[uid] = ip
            return ip
        raise PoolExhausted(f"no IP addresses available in range set: {self.cidr}")

    def release(self, uid: str) -> None:
        ip = self.by_uid.pop(uid, None)
        if ip is not None:
            (self.dir / ip).unlink(missing_ok=True)

    def release_others(self, keep: set[str]) -> None:
        """Release the IPs of the pods not in ``keep`` (gone while the kubelet was down)."""
        for uid in [u for u in self.by_uid if u not in keep]:
            self.release(uid)
