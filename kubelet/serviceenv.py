"""``KUBERNETES_SERVICE_HOST`` and friends: where in-cluster clients find the apiserver and the pod's Services.

``ServiceEnv`` gives a container the variables of every Service of its namespace (``enableServiceLinks``, default
true) and of the master Service, as the kubelet's ``getServiceEnvVarMap`` does, from an informer over Services.
With a pod network whose ClusterIPs are routed (``--cluster-network``: kube-proxy's rules) they name the
ClusterIPs, as on Kubernetes. Without one (the process runtime: pods are host processes), a Service's variables
name its ClusterIP's loopback stand-in (10.96.0.1 → 127.96.0.1, ``apimachinery.serviceip``), where kube-proxy's
userspace mode relays, and the master Service's name the apiserver's own address, as follows.

The kubelet gives every container the variables of the ``kubernetes`` Service (``getServiceEnvVarMap`` adds the
master service in every namespace). On a real cluster they name the Service's ClusterIP and port, which kube-proxy
routes to the apiserver. kubelab's process runtime has no proxy in front of ClusterIPs, so the variables name
where the ClusterIP would lead: the first address and port of the ``default/kubernetes`` Endpoints, which the
apiserver keeps pointed at its own advertised address and serving port, reachable from a host process. Read once
per kubelet (the apiserver's address does not move while it runs) and again after a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from apimachinery import errors
from apimachinery.serviceip import loopback_address
from kubeclient import Clientset, SharedInformer

log = logging.getLogger(__name__)


def service_env(name: str, host: str, port: int, port_name: str = "", protocol: str = "TCP") -> dict[str, str]:
    """The Docker-links style variables of one Service port, as the kubelet writes them (``envvars.FromServices``)."""
    prefix = name.upper().replace("-", "_")
    proto = protocol.lower()
    env = {f"{prefix}_SERVICE_HOST": host, f"{prefix}_SERVICE_PORT": str(port)}
    if port_name:
        env[f"{prefix}_SERVICE_PORT_{port_name.upper().replace('-', '_')}"] = str(port)
    url = f"{proto}://{host}:{port}"
    env[f"{prefix}_PORT"] = url
    base = f"{prefix}_PORT_{port}_{protocol.upper()}"
    env.update({base: url, f"{base}_PROTO": proto, f"{base}_PORT": str(port), f"{base}_ADDR": host})
    return env


def service_vars(service: dict[str, Any], routed: bool = True) -> dict[str, str]:
    """One Service's variables (``envvars.FromServices``): ``_SERVICE_HOST``, ``_SERVICE_PORT`` (the first port),
    one ``_SERVICE_PORT_<NAME>`` per named port, and the Docker-link ones (``_PORT`` for the first port). Not
    ``routed`` (no pod network): the ClusterIP's loopback stand-in, where ``kubelab proxy --proxy-mode userspace``
    relays (``apimachinery.serviceip``)."""
    spec = service.get("spec") or {}
    ip, ports = spec.get("clusterIP"), spec.get("ports") or []
    if not ip or ip == "None" or not ports:
        return {}
    if not routed:
        ip = loopback_address(ip)
    env: dict[str, str] = {}
    for port in reversed(ports):  # the first port's values win where names coincide
        env.update(service_env(service["metadata"]["name"], ip, int(port["port"]), port.get("name") or "",
                               port.get("protocol") or "TCP"))
    return env


class ServiceEnv:
    """The variables of the pod's namespace's Services and the master Service; run ``informer`` beside it."""

    def __init__(self, client: Clientset) -> None:
        self.informer = SharedInformer(client.services)
        self.master = MasterServiceEnv(client)
        self.cluster_ips_routed = False  # True on a pod network with kube-proxy: the master Service's ClusterIP

    async def warm_up(self) -> None:
        """Read the master Service's variables as soon as the Services are listed (the apiserver serves), before
        the first pod needs them: a kubelet handed a burst of pods at once held each of them on that read."""
        if not self.cluster_ips_routed and await self.informer.wait_for_sync():
            await self.master.warm_up()

    async def get(self, namespace: str, enable_links: bool = True) -> dict[str, str]:
        if not self.informer.has_synced():
            await self.informer.wait_for_sync(timeout=5.0)
        env: dict[str, str] = {}
        if enable_links:
            for service in sorted(self.informer.store.list(), key=lambda s: s["metadata"]["name"]):
                if service["metadata"].get("namespace") == namespace:
                    env.update(service_vars(service, self.cluster_ips_routed))
        master = None
        if self.cluster_ips_routed:
            master = next((s for s in self.informer.store.list() if s["metadata"]["name"] == "kubernetes"
                           and s["metadata"].get("namespace") == "default"), None)
        env.update(service_vars(master) if master is not None else await self.master.get())
        return env


class MasterServiceEnv:
    """The ``kubernetes`` Service's variables, from its Endpoints."""

    def __init__(self, client: Clientset) -> None:
        self.client = client
        self.env: dict[str, str] | None = None
        self._reading: asyncio.Future[None] | None = None  # the read in flight, shared by every caller

    async def get(self) -> dict[str, str]:
        if self.env is None:
            try:
                await self._shared_read()
            except errors.StatusError as err:
                log.warning("no default/kubernetes Endpoints, containers get no KUBERNETES_SERVICE_*: %s", err)
                return {}
        return dict(self.env or {})

    async def warm_up(self) -> None:
        """Read them ahead of the first container; a failure is left to that container's own read to report."""
        with contextlib.suppress(errors.StatusError):
            await self._shared_read()

    async def _shared_read(self) -> None:
        """One GET for all the containers that start while it is in flight, not one each."""
        if self._reading is None or self._reading.done():
            self._reading = asyncio.ensure_future(self._read())
        await asyncio.shield(self._reading)

    async def _read(self) -> None:
        endpoints = await self.client.endpoints.get("kubernetes", "default")
        for subset in endpoints.get("subsets") or []:
            addresses, ports = subset.get("addresses") or [], subset.get("ports") or []
            if addresses and ports:
                port = next((p for p in ports if p.get("name") == "https"), ports[0])
                self.env = service_env("kubernetes", addresses[0]["ip"], int(port["port"]), "https",
                                       port.get("protocol") or "TCP")
                return
