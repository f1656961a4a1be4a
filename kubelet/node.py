"""The Node object and its heartbeats: registration, the Lease in ``kube-node-lease``, node status.

Registration (retried with back-off while the apiserver is not reachable yet, so a kubelet may start before it;
while nothing listens at its address, tried again as soon as something does) creates the Node (capacity and
allocatable from flags or the machine, labels, taints, addresses, ``daemonEndpoints`` for the apiserver's
log/exec proxy); an existing Node keeps its spec (labels and taints set with kubectl survive a kubelet restart)
and gets its status refreshed. The Lease is renewed every ``lease_interval`` seconds (the heartbeat the node
lifecycle controller watches); node conditions are posted on start and every ``status_interval`` seconds, and as
soon as the node's image store pulled an image, so ``status.images`` (what the scheduler's ImageLocality scores)
follows the pulls.
"""

from __future__ import annotations

import asyncio
import logging
import os
import platform
from collections.abc import Awaitable, Callable
from typing import Any

from apimachinery import errors
from apimachinery.meta import now_rfc3339, now_rfc3339_micro
from kubeclient import Clientset
from kubeclient.backoff import Backoff
from kubeclient.rest import Unreachable, until_listening

from .images import ImageStore
from .runtime.process import RUNTIME_NAME

log = logging.getLogger(__name__)
LEASE_NAMESPACE = "kube-node-lease"
REGISTER_FIRST_RETRY = 0.1  # seconds; doubling to REGISTER_MAX_RETRY (kubelet's registerWithAPIServer)
REGISTER_MAX_RETRY = 7.0
KUBELET_VERSION = "v1.32.4"

PROCESS_RUNTIME_VERSION = f"{RUNTIME_NAME}://0.1"  # nodeInfo.containerRuntimeVersion of the process runtime


def machine_capacity() -> dict[str, str]:
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return {"cpu": str(os.cpu_count() or 1), "memory": f"{pages // 1024}Ki", "pods": "110",
            "ephemeral-storage": "20Gi"}


def node_conditions(previous: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    now = now_rfc3339()
    old = {c["type"]: c for c in previous or []}
    specs = [("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
             ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
             ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
             ("Ready", "True", "KubeletReady", "kubelet is posting ready status")]
    out = []
    for kind, status, reason, message in specs:
        prev = old.get(kind)
        since = prev["lastTransitionTime"] if prev and prev.get("status") == status else now
        out.append({"type": kind, "status": status, "reason": reason, "message": message,
                    "lastHeartbeatTime": now, "lastTransitionTime": since})
    return out


async def register_with_retry(name: str, attempt: Callable[[], Awaitable[None]],
                              stop: asyncio.Event | None = None) -> bool:
    """Run ``attempt`` (register Node ``name``) until it works; after an error (an apiserver refusing, or not
    answering) try again after 100 ms doubling to 7 s, as the kubelet's ``registerWithAPIServer``. While nothing
    listens at the apiserver's address (it starts beside its kubelets), the next attempt is made once something
    does rather than after the back-off, which held a new cluster's nodes up to 0.2 s after it served. False if
    ``stop`` was set first."""
    backoff = Backoff(initial=REGISTER_FIRST_RETRY, cap=REGISTER_MAX_RETRY, jitter=0.0)
    stop = stop or asyncio.Event()
    while not stop.is_set():
        log.info("Attempting to register node %s", name)
        try:
            await attempt()
        except errors.StatusError as err:
            if isinstance(err, Unreachable) and err.address is not None:
                log.warning("Unable to register node %s with API server (retrying once it listens): %s", name, err)
                if not await _until_listening(err.address, stop):
                    return False
                continue
            delay = backoff.next()
            log.warning("Unable to register node %s with API server (retrying in %.1fs): %s", name, delay, err)
            try:
                async with asyncio.timeout(delay):
                    await stop.wait()
            except TimeoutError:
                pass
            continue
        return True
    return False


async def _until_listening(address: tuple[str, int], stop: asyncio.Event) -> bool:
    """True once something accepts a connection at ``address``, False if ``stop`` was set first."""
    listening = asyncio.ensure_future(until_listening(address))
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait((listening, stopped), return_when=asyncio.FIRST_COMPLETED)
    for waiter in (listening, stopped):
        waiter.cancel()
    return not stop.is_set()


class NodeAgent:
    def __init__(self, client: Clientset, name: str, *, port: int, host_ip: str, capacity: dict[str, str],
                 labels: dict[str, str], taints: list[dict[str, str]], lease_interval: float = 10.0,
                 status_interval: float = 60.0, lease_duration: int = 40, images: ImageStore | None = None,
                 runtime_version: str = PROCESS_RUNTIME_VERSION) -> None:
        self.client = client
        self.name = name
        self.port = port
        self.host_ip = host_ip
        self.capacity = capacity
        self.labels = labels
        self.taints = taints
        self.lease_interval = lease_interval
        self.status_interval = status_interval
        self.lease_duration = lease_duration
        self.images = images
        self.runtime_version = runtime_version  # nodeInfo.containerRuntimeVersion (``docker://24.0.7``)
        self.registered = asyncio.Event()  # set once the Node exists in the API (the kubelet's /healthz waits on it)

    def _status(self, previous: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "allocatable": self.capacity,
            "conditions": node_conditions((previous or {}).get("conditions")),
            "addresses": [{"type": "InternalIP", "address": self.host_ip}, {"type": "Hostname", "address": self.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port}},
            "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": platform.release(),
                         "osImage": platform.platform(), "containerRuntimeVersion": self.runtime_version,
                         "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "", "operatingSystem": "linux",
                         "architecture": "amd64" if platform.machine() == "x86_64" else platform.machine()},
            "images": self.images.images() if self.images is not None else [],
        }

    async def register(self, stop: asyncio.Event | None = None) -> bool:
        """``registerWithAPIServer``: create the Node, or refresh the status of the one already there, retried
        (``register_with_retry``). False if ``stop`` was set first."""
        if not await register_with_retry(self.name, self._register_once, stop):
            return False
        self.registered.set()
        return True

    async def _register_once(self) -> None:
        labels = {"kubernetes.io/hostname": self.name, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64" if platform.machine() == "x86_64" else platform.machine(),
                  **self.labels}
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.name, "labels": labels},
                "spec": {"taints": self.taints} if self.taints else {}, "status": self._status()}
        try:
            await self.client.nodes.create(node)
            log.info("Successfully registered node %s", self.name)
        except errors.AlreadyExists:
            await self.post_status()
            log.info("node %s already registered: status refreshed", self.name)

    async def post_status(self) -> None:
        current = await self.client.nodes.get(self.name)
        await self.client.nodes.patch(self.name, {"status": self._status(current.get("status"))}, "merge",
                                      subresource="status")

    async def renew_lease(self) -> None:
        now = now_rfc3339_micro()
        try:
            lease = await self.client.leases.get(self.name, LEASE_NAMESPACE)
        except errors.NotFound:
            await self.client.leases.create({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.name, "namespace": LEASE_NAMESPACE},
                "spec": {"holderIdentity": self.name, "leaseDurationSeconds": self.lease_duration,
                         "renewTime": now}}, LEASE_NAMESPACE)
            return
        lease["spec"]["renewTime"] = now
        await self.client.leases.update(lease)

    async def run(self, stop: asyncio.Event) -> None:
        """Register (retrying until the apiserver answers), then heartbeat until ``stop``."""
        if not self.registered.is_set() and not await self.register(stop):
            return
        loop = asyncio.get_running_loop()
        next_status = loop.time() + self.status_interval
        next_lease = loop.time()
        while not stop.is_set():
            if self.images is not None:
                self.images.refresh()  # an image loaded from outside (``kubelab image load``)
            pulled = self.images is not None and self.images.changed.is_set()
            try:
                if loop.time() >= next_lease:
                    await self.renew_lease()
                    next_lease = loop.time() + self.lease_interval
                if loop.time() >= next_status or pulled:
                    if self.images is not None:
                        self.images.changed.clear()
                    await self.post_status()
                    next_status = loop.time() + self.status_interval
            except errors.StatusError as err:
                log.warning("heartbeat failed: %s", err)
            await self._sleep(stop, max(0.0, min(next_lease, next_status) - loop.time()))

    async def _sleep(self, stop: asyncio.Event, seconds: float) -> None:
        """Until ``stop``, an image pull or ``seconds`` passed."""
        waits = [asyncio.ensure_future(stop.wait())]
        if self.images is not None:
            waits.append(asyncio.ensure_future(self.images.changed.wait()))
        _, pending = await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        for fut in pending:
            fut.cancel()
