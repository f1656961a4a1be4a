"""Hollow nodes: a SIMULATION of many kubelets in one process, for scale benchmarks only (as Kubernetes' kubemark).

``kubelab kubelet --hollow --count N [--node-name-prefix hollow-node-]`` registers N Nodes (``hollow-node-0`` ...,
labelled ``kubelab.io/hollow=true``, runtime ``hollow://``), renews each of their N Leases every ``lease_interval``
seconds, posts their node status every ``status_interval`` seconds, and marks the pods bound
to them Running — **no process is started**, no image pulled, no probe run; their logs and exec do not exist.
Deleting such a pod is confirmed at once (grace period 0), as if its containers stopped immediately.

One pod informer serves all N nodes (not N watches): the control plane sees the load N nodes put on the list/watch
path for nodes and leases, and one watcher for pods. Each node renews its Lease at its own offset within the
interval, as N kubelets on their own clocks do (not N PUTs in one burst every interval). Pod status writes go
through a pool of in-flight requests that grows with N (N kubelets would each have theirs in flight) up to a
bound, so a burst of pods does not open thousands of connections, nor wait behind 20 in flight while the
apiserver serves a controller's hundreds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import platform
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from apimachinery import errors
from apimachinery.meta import now_rfc3339, now_rfc3339_micro
from kubeclient import Clientset
from kubeclient.informer import SharedInformer

from . import status as st
from .node import KUBELET_VERSION, LEASE_NAMESPACE, node_conditions, register_with_retry

log = logging.getLogger(__name__)

HOLLOW_LABEL = "kubelab.io/hollow"
IN_FLIGHT = 20  # API requests in flight at once for bulk work (registration, node statuses)
POD_IN_FLIGHT = 120  # at most this many pod status writes or deletions in flight (one per node below that)
LEASE_IN_FLIGHT = 50  # Lease renewals in flight at once (each is due at its own time: rarely more than a few)
RENEW_TICK = 0.05  # renewals due within this many seconds go out together


async def bounded(jobs: Iterable[Callable[[], Awaitable[None]]], limit: int = IN_FLIGHT) -> None:
    """Run the jobs with at most ``limit`` in flight; one job's API error is logged, never stops the others."""
    gate = asyncio.Semaphore(limit)

    async def run(job: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            try:
                await job()
            except errors.StatusError as err:
                log.warning("hollow node request failed: %s", err)

    await asyncio.gather(*(run(job) for job in jobs))


class HollowNodes:
    def __init__(self, client: Clientset, *, prefix: str = "hollow-node-", count: int = 1,
                 capacity: dict[str, str], labels: dict[str, str] | None = None, lease_interval: float = 10.0,
                 status_interval: float = 60.0, lease_duration: int = 40) -> None:
        self.client = client
        self.names = [f"{prefix}{i}" for i in range(count)]
        self._index = {name: i for i, name in enumerate(self.names)}
        self.capacity = capacity
        self.labels = labels or {}
        self.lease_interval = lease_interval
        self.status_interval = status_interval
        self.lease_duration = lease_duration
        self._leases: dict[str, dict[str, Any]] = {}  # the last Lease written per node (for its resourceVersion)
        self._pending: set[str] = set()  # pod keys with a status write or deletion in flight
        self._gate = asyncio.Semaphore(min(max(count, IN_FLIGHT), POD_IN_FLIGHT))
        self.informer = SharedInformer(client.pods)
        self.informer.add_event_handler(self._on_pod, lambda old, new: self._on_pod(new), None)

    # --- nodes ----------------------------------------------------------------------------------------------
    def ip(self, name: str) -> str:
        i = self._index[name]
        return f"10.{64 + i // 65536 % 64}.{i // 256 % 256}.{i % 256}"

    def _status(self, name: str, previous: dict[str, Any] | None = None) -> dict[str, Any]:
        arch = "amd64" if platform.machine() == "x86_64" else platform.machine()
        return {
            "capacity": self.capacity, "allocatable": self.capacity,
            "conditions": node_conditions((previous or {}).get("conditions")),
            "addresses": [{"type": "InternalIP", "address": self.ip(name)}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "hollow",
                         "osImage": "kubelab hollow node (simulated)", "containerRuntimeVersion": "hollow://0.1",
                         "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "", "operatingSystem": "linux",
                         "architecture": arch},
            "images": [],
        }

    async def register(self, stop: asyncio.Event | None = None) -> bool:
        """Register every node, each retried as a kubelet retries (``register_with_retry``); False if ``stop``
        was set first."""
        async def once(name: str) -> None:
            labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                      HOLLOW_LABEL: "true", **self.labels}
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                    "spec": {}, "status": self._status(name)}
            try:
                await self.client.nodes.create(node)
            except errors.AlreadyExists:
                await self._post_status(name)

        results: list[bool] = []

        async def one(name: str) -> None:
            results.append(await register_with_retry(name, lambda: once(name), stop))

        await bounded(lambda name=name: one(name) for name in self.names)  # type: ignore[misc]
        if not all(results):
            return False
        log.info("registered %d hollow nodes (%s...)", len(self.names), self.names[0] if self.names else "")
        return True

    async def _post_status(self, name: str) -> None:
        current = await self.client.nodes.get(name)
        await self.client.nodes.patch(name, {"status": self._status(name, current.get("status"))}, "merge",
                                      subresource="status")

    async def _renew(self, name: str) -> None:
        lease = self._leases.get(name)
        now = now_rfc3339_micro()
        if lease is not None:
            lease["spec"]["renewTime"] = now
            try:
                self._leases[name] = await self.client.leases.update(lease)
                return
            except (errors.Conflict, errors.NotFound):
                pass
        try:
            lease = await self.client.leases.get(name, LEASE_NAMESPACE)
        except errors.NotFound:
            self._leases[name] = await self.client.leases.create({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": self.lease_duration, "renewTime": now}},
                LEASE_NAMESPACE)
            return
        lease["spec"]["renewTime"] = now
        self._leases[name] = await self.client.leases.update(lease)

    async def heartbeat(self, stop: asyncio.Event) -> None:
        """Each Lease renewed once per interval at its node's own offset within it; every node status posted
        per status interval, in a loop of its own (as a kubelet's node status and lease loops are separate: a
        round of 1,000 status posts must not hold the Leases back)."""
        await asyncio.gather(self._lease_loop(stop), self._status_loop(stop))

    async def _lease_loop(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        spread = False  # the first round at once: every node gets its Lease as it comes up
        while not stop.is_set():
            began = loop.time()
            await self._renew_spread(began, stop, self.lease_interval if spread else 0.0)
            spread = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), max(0.0, self.lease_interval - (loop.time() - began)))

    async def _status_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.status_interval)
            if stop.is_set():
                return
            await bounded(lambda name=name: self._post_status(name) for name in self.names)  # type: ignore[misc]

    async def _renew_spread(self, began: float, stop: asyncio.Event, over: float) -> None:
        """Renew node i's Lease at ``began + over * i / N`` (renewals due within a tick go together, at most
        ``LEASE_IN_FLIGHT`` in flight); returns once every renewal of this round ended, or at ``stop``."""
        loop = asyncio.get_running_loop()
        gate = asyncio.Semaphore(LEASE_IN_FLIGHT)
        step = over / max(1, len(self.names))

        async def renew(name: str) -> None:
            async with gate:
                try:
                    await self._renew(name)
                except errors.StatusError as err:
                    log.warning("hollow node %s: lease renewal failed: %s", name, err)

        tasks = []
        for i, name in enumerate(self.names):
            delay = began + i * step - loop.time()
            if delay > RENEW_TICK:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
                if stop.is_set():
                    break
            tasks.append(asyncio.create_task(renew(name)))
        await asyncio.gather(*tasks)

    # --- pods -----------------------------------------------------------------------------------------------
    def _on_pod(self, pod: dict[str, Any]) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if node not in self._index:
            return
        meta = pod["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if key in self._pending:
            return
        if meta.get("deletionTimestamp"):
            self._pending.add(key)
            asyncio.create_task(self._confirm_deletion(pod, key))
        elif (pod.get("status") or {}).get("phase") not in ("Running", "Succeeded", "Failed"):
            self._pending.add(key)
            asyncio.create_task(self._mark_running(pod, key))

    def running_status(self, pod: dict[str, Any]) -> dict[str, Any]:
        """What a kubelet would report once every container started (init containers completed)."""
        spec = pod["spec"]
        now = now_rfc3339()
        inits = [st.terminated(c, 0, now, now, 0, init=True) for c in spec.get("initContainers") or []]
        apps = [st.running(c, now, 0) for c in spec.get("containers") or []]
        status = st.build_status(pod, apps, self.ip(spec["nodeName"]), now, inits)
        status["podIP"], status["podIPs"] = status["hostIP"], status["hostIPs"]
        return status

    async def _mark_running(self, pod: dict[str, Any], key: str) -> None:
        meta = pod["metadata"]
        try:
            async with self._gate:
                await self.client.pods.patch(meta["name"], {"status": self.running_status(pod)}, "merge",
                                             meta["namespace"], subresource="status")
        except errors.NotFound:
            pass
        except errors.StatusError as err:
            log.warning("hollow pod %s: %s", key, err)
        finally:
            self._pending.discard(key)

    async def _confirm_deletion(self, pod: dict[str, Any], key: str) -> None:
        meta = pod["metadata"]
        try:
            async with self._gate:
                await self.client.pods.delete(meta["name"], meta["namespace"], grace_period_seconds=0,
                                              preconditions={"uid": meta["uid"]})
        except (errors.NotFound, errors.Conflict):
            pass
        except errors.StatusError as err:
            log.warning("hollow pod %s: %s", key, err)
        finally:
            self._pending.discard(key)

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(self.heartbeat(stop), self.informer.run(stop))
