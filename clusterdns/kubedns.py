"""The ``kube-system/kube-dns`` Service and the EndpointSlice that points it at this server.

On kubeadm the Service (ClusterIP 10.96.0.10, ports ``dns`` 53/UDP, ``dns-tcp`` 53/TCP, ``metrics`` 9153/TCP, label
``k8s-app: kube-dns``) selects the CoreDNS pods and the EndpointSlice controller lists them. Here the server is a
process, not a pod, so the Service has no selector and this component keeps the slice itself, as kube-apiserver
keeps ``default/kubernetes``'s: named ``kube-dns``, labelled ``endpointslice.kubernetes.io/managed-by:
dns.kubelab.io``, one ready endpoint at the advertised address with the ports it really listens on (kube-proxy
routes ``10.96.0.10:53`` there).

``KubeDnsPublisher.ensure`` creates the Service when it is missing (an existing one is left alone: its ClusterIP is
immutable and a user may have labelled it) and creates or rewrites the slice when it differs; ``run`` calls it
again whenever either object changes or goes (``poke``, from the informers) and every ``RESYNC`` seconds.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from apimachinery import errors
from kubeclient import Clientset, DeletedFinalStateUnknown, Object

__all__ = ["MANAGED_BY", "NAME", "NAMESPACE", "KubeDnsPublisher", "endpoint_slice", "service"]

log = logging.getLogger("clusterdns.kubedns")
NAME, NAMESPACE = "kube-dns", "kube-system"
MANAGED_BY = "dns.kubelab.io"
RESYNC = 30.0
LABELS = {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"}


def service(cluster_ip: str) -> dict[str, Any]:
    """kubeadm's kube-dns Service, without a selector (no DNS pods: this component keeps its EndpointSlice)."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": dict(LABELS),
                         "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"}},
            "spec": {"clusterIP": cluster_ip, "type": "ClusterIP",
                     "ports": [{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                               {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                               {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153}]}}


def endpoint_slice(address: str, port: int) -> dict[str, Any]:
    """The slice that points kube-dns at ``address``:``port`` (UDP and TCP)."""
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": NAME, "namespace": NAMESPACE,
                         "labels": {"kubernetes.io/service-name": NAME, "k8s-app": "kube-dns",
                                    "endpointslice.kubernetes.io/managed-by": MANAGED_BY}},
            "addressType": "IPv6" if ":" in address else "IPv4",
            "endpoints": [{"addresses": [address], "conditions": {"ready": True, "serving": True,
                                                                  "terminating": False}}],
            "ports": [{"name": "dns", "port": port, "protocol": "UDP"},
                      {"name": "dns-tcp", "port": port, "protocol": "TCP"}]}


def _same(current: dict[str, Any], wanted: dict[str, Any]) -> bool:
    labels = (current.get("metadata") or {}).get("labels") or {}
    return (all(labels.get(k) == v for k, v in wanted["metadata"]["labels"].items())
            and all(current.get(k) == wanted[k] for k in ("addressType", "endpoints", "ports")))


class KubeDnsPublisher:
    def __init__(self, client: Clientset, *, cluster_ip: str, address: str, port: int) -> None:
        self.client = client
        self.cluster_ip = cluster_ip
        self.address = address
        self.port = port
        self._dirty = asyncio.Event()

    def poke(self, obj: Object | DeletedFinalStateUnknown) -> None:
        """An informer's handler: ``kube-system/kube-dns`` (Service or slice) may have changed or gone."""
        meta = (obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj).get("metadata") or {}
        if (meta.get("namespace"), meta.get("name")) == (NAMESPACE, NAME):
            self._dirty.set()

    async def ensure(self) -> None:
        try:
            await self.client.services.create(service(self.cluster_ip), NAMESPACE)
            log.info("created Service %s/%s (ClusterIP %s)", NAMESPACE, NAME, self.cluster_ip)
        except errors.AlreadyExists:
            pass
        wanted = endpoint_slice(self.address, self.port)
        try:
            current = await self.client.endpoint_slices.get(NAME, NAMESPACE)
        except errors.NotFound:
            await self.client.endpoint_slices.create(wanted, NAMESPACE)
            log.info("created EndpointSlice %s/%s → %s:%d", NAMESPACE, NAME, self.address, self.port)
            return
        if not _same(current, wanted):
            current.update({k: wanted[k] for k in ("addressType", "endpoints", "ports")})
            current["metadata"].setdefault("labels", {}).update(wanted["metadata"]["labels"])
            await self.client.endpoint_slices.update(current)
            log.info("updated EndpointSlice %s/%s → %s:%d", NAMESPACE, NAME, self.address, self.port)

    async def run(self, stop: asyncio.Event) -> None:
        """``ensure`` now, on every ``poke`` and every ``RESYNC`` seconds, until ``stop``; failures are retried."""
        while not stop.is_set():
            self._dirty.clear()
            try:
                await self.ensure()
                delay = RESYNC
            except errors.StatusError as err:
                log.warning("could not publish %s/%s: %s", NAMESPACE, NAME, err)
                delay = 1.0
            waiters = [asyncio.ensure_future(e.wait()) for e in (stop, self._dirty)]
            await asyncio.wait(waiters, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
            for w in waiters:
                w.cancel()
