"""The kubelet: watches the pods bound to its node and keeps one worker per pod.

Only pods with ``spec.nodeName`` equal to this node are watched (a field-selected informer), so a slow pod
never blocks another and the apiserver's watch cache indexes the stream by node. Events are recorded through
kubeclient's EventRecorder with ``source.host`` set to the node.

On start the kubelet first asks its runtime for the containers it ran before (``ProcessRuntime.recover``): a pod
worker adopts its pod's containers (``PodWorker._adopt``) instead of starting new ones. Housekeeping (after the
first list, then every ``HOUSEKEEPING_SECONDS``, as kubelet's ``HandlePodCleanups``) kills and forgets the
containers of pods this node no longer has, so nothing is duplicated and nothing is orphaned. Each pod gets its
own IP from the Node's ``spec.podCIDR`` (``podips``), kept across restarts and released with the pod. The
kubelet is also the ``kubelab.io/local-path`` provisioner of its node (``provisioner``).

The runtime is a ``cri.Runtime``: the process runtime unless given another — ``linux.LinuxRuntime`` (Linux
containers: namespaces, the image's root file system, cgroups; ``__main__`` picks it where the host allows) or
``docker.DockerRuntime``, which runs real containers through a reachable Docker engine (its ``DockerImages`` pulls).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubeclient import Clientset
from kubeclient.events import EventRecorder
from kubeclient.informer import SharedInformer

from . import metrics
from .dnsconfig import ResolverSettings
from .images import ImageStore
from .pod_worker import PodWorker
from .podips import PodIPs
from .provisioner import LocalPathProvisioner
from .runtime.cri import Container, Runtime
from .runtime.process import ProcessRuntime
from .serviceenv import ServiceEnv
from .token import TokenManager

log = logging.getLogger(__name__)
HOUSEKEEPING_SECONDS = 2.0


def container_field_path(pod: dict[str, Any], container: str) -> str:
    """``spec.containers{web}``, ``spec.initContainers{setup}`` or ``spec.ephemeralContainers{debugger}``: the part
    of the pod an event is about (kubelet's ``GenerateContainerRef``)."""
    spec = pod.get("spec") or {}
    kind = next((kind for kind in ("initContainers", "ephemeralContainers")
                 if any(c.get("name") == container for c in spec.get(kind) or [])), "containers")
    return f"spec.{kind}{{{container}}}"


class Kubelet:
    def __init__(self, client: Clientset, node_name: str, root_dir: Path, host_ip: str = "127.0.0.1",
                 backoff_base: float = 10.0, backoff_max: float = 300.0, *, runtime: Runtime | None = None,
                 images: ImageStore | None = None, provisioner_client: Clientset | None = None,
                 dns: ResolverSettings | None = None) -> None:
        self.client = client
        self.node_name = node_name
        self.root_dir = root_dir
        self.host_ip = host_ip
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        # The process runtime and its image store unless given others (``docker.DockerRuntime``, ``DockerImages``).
        self.runtime: Runtime = runtime if runtime is not None else ProcessRuntime(root_dir / "containers")
        self.images = images if images is not None else ImageStore(root_dir / "images", backoff_base, backoff_max)
        # Containers found from the runtime's state at start, by (pod UID, container name), until adopted.
        self.recovered: dict[tuple[str, str], Container] = {
            (cp.meta.pod_uid, cp.name): cp for cp in self.runtime.recover()}
        if self.recovered:
            log.info("found %d containers from before the restart", len(self.recovered))
        # Pod IPs from the Node's podCIDR (the host IP without one, or with a runtime that has its own network).
        self.pod_ips = PodIPs(root_dir / "podips", client if self.runtime.pod_ips else None, node_name, host_ip)
        # This node's Node, watched as kube's kubelet watches it: its podCIDR reaches the pod IPs as it is set,
        # and a pod started before that needs no read of the Node to learn there is none yet.
        self.node_informer: SharedInformer | None = None
        if self.runtime.pod_ips:
            self.node_informer = SharedInformer(client.nodes, field_selector=f"metadata.name={node_name}")
            self.node_informer.add_event_handler(self.pod_ips.observe, lambda old, new: self.pod_ips.observe(new),
                                                 None)
            self.pod_ips.watching = self.node_informer.has_synced
        self.recorder = EventRecorder(client.events, "kubelet", node_name, event_time=True)  # µs for kubelab trace
        self.tokens = TokenManager(client)
        self.service_env = ServiceEnv(client)
        self.dns = dns if dns is not None else ResolverSettings()  # the pods' resolv.conf (``dnsconfig``)
        self.workers: dict[str, PodWorker] = {}  # by pod UID
        self._removals: set[asyncio.Task[None]] = set()  # force-deleted pods being removed (kept from the GC)
        self.informer = SharedInformer(client.pods, field_selector=f"spec.nodeName={node_name}")
        self.informer.add_event_handler(self._on_add, self._on_update, self._on_delete)
        # kubelab.io/local-path volumes, under an identity of their own where one is given: the provisioner lists
        # every claim and volume, which the Node authorizer rightly refuses a kubelet (kind runs it as a pod).
        self.provisioner = LocalPathProvisioner(provisioner_client or client, node_name, root_dir)
        metrics.register(self, node_name)

    def event(self, pod: dict[str, Any], kind: str, reason: str, message: str, container: str | None = None) -> None:
        """An event about the pod, or about one of its containers (``involvedObject.fieldPath``, as kubelet's
        container events carry it: ``kubectl describe`` and ``kubelab trace`` tell the containers apart)."""
        path = container_field_path(pod, container) if container is not None else None
        self.recorder.event(pod, kind, reason, message, field_path=path)  # type: ignore[arg-type]

    def pod_container_statuses(self) -> Iterator[list[dict[str, Any]]]:
        """The containerStatuses of each live pod worker (``kubelet_running_pods``, ``…_containers``)."""
        for worker in list(self.workers.values()):
            if not worker.task.done():
                yield [record.status for record in worker.containers.values() if record.status]

    def worker_for(self, namespace: str, name: str) -> PodWorker | None:
        for worker in self.workers.values():
            meta = worker.pod["metadata"]
            if meta["namespace"] == namespace and meta["name"] == name:
                return worker
        return None

    def _on_add(self, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        worker = self.workers.get(uid)
        if worker is None or worker.task.done():
            if pod.get("status", {}).get("phase") in ("Succeeded", "Failed") and \
                    not pod["metadata"].get("deletionTimestamp"):
                return  # finished before this kubelet started: nothing to run again
            self.workers[uid] = PodWorker(self, pod)
        else:
            worker.push(pod)

    def _on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._on_add(new)

    def _on_delete(self, pod: Any) -> None:
        obj = getattr(pod, "obj", pod)
        worker = self.workers.pop(obj["metadata"]["uid"], None)
        if worker is not None and not worker.task.done():
            worker.task.cancel()
            task = asyncio.create_task(worker.remove(), name=f"remove pod {worker.key}")
            self._removals.add(task)
            task.add_done_callback(self._removals.discard)

    def housekeeping(self) -> None:
        """Kill and forget the containers of pods this node no longer has (deleted while the kubelet was down):
        kept are those of pods with a live worker or still in the informer's cache."""
        live = {uid for uid, worker in self.workers.items() if not worker.task.done()}
        live |= {pod["metadata"]["uid"] for pod in self.informer.store.list()}
        self.pod_ips.release_others(live)
        for uid in set(self.runtime.remove_pods(live)):
            self.images.forget(uid)
            for key in [k for k in self.recovered if k[0] == uid]:
                del self.recovered[key]

    async def _housekeeping_loop(self, stop: asyncio.Event) -> None:
        await self.informer.wait_for_sync()
        while not stop.is_set():
            self.housekeeping()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), HOUSEKEEPING_SECONDS)

    async def run(self, stop: asyncio.Event) -> None:
        # Alongside the first list: the pods it brings wait for what the warm-up has not finished yet.
        warm_up = asyncio.create_task(self.runtime.warm_up(), name="runtime warm-up")
        informer = asyncio.create_task(self.informer.run(stop))
        services = asyncio.create_task(self.service_env.informer.run(stop))
        service_env = asyncio.create_task(self.service_env.warm_up(), name="service env warm-up")
        node = asyncio.create_task(self.node_informer.run(stop)) if self.node_informer is not None else None
        housekeeping = asyncio.create_task(self._housekeeping_loop(stop))
        provisioner = asyncio.create_task(self.provisioner.run(stop))
        await stop.wait()
        await asyncio.gather(warm_up, return_exceptions=True)  # a failure is the first start's to report
        await informer
        await services
        if node is not None:
            await node
        await provisioner
        housekeeping.cancel()
        service_env.cancel()
        for worker in list(self.workers.values()):
            worker.task.cancel()
        # At once: a Linux container's PID 1 may ignore SIGTERM and take the whole 2 s before its SIGKILL.
        await asyncio.gather(*(worker._kill_all(2) for worker in list(self.workers.values())))
        self.runtime.shutdown()
        await self.recorder.close()
