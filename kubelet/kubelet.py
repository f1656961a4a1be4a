"""The kubelet: watches the pods bound to its node and keeps one worker per pod.

Only pods with ``spec.nodeName`` equal to this node are watched (a field-selected informer), so a slow pod
never blocks another and the apiserver's watch cache indexes the stream by node. Events are recorded through
kubeclient's EventRecorder with ``source.host`` set to the node.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from kubeclient import Clientset
from kubeclient.events import EventRecorder
from kubeclient.informer import SharedInformer

from .pod_worker import PodWorker
from .runtime import ProcessRuntime

log = logging.getLogger(__name__)


class Kubelet:
    def __init__(self, client: Clientset, node_name: str, root_dir: Path, host_ip: str = "127.0.0.1",
                 backoff_base: float = 10.0, backoff_max: float = 300.0) -> None:
        self.client = client
        self.node_name = node_name
        self.root_dir = root_dir
        self.host_ip = host_ip
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.runtime = ProcessRuntime()
        self.recorder = EventRecorder(client.events, "kubelet", node_name)
        self.workers: dict[str, PodWorker] = {}  # by pod UID
        self.informer = SharedInformer(client.pods, field_selector=f"spec.nodeName={node_name}")
        self.informer.add_event_handler(self._on_add, self._on_update, self._on_delete)

    def event(self, pod: dict[str, Any], kind: str, reason: str, message: str) -> None:
        self.recorder.event(pod, kind, reason, message)  # type: ignore[arg-type]

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
            asyncio.create_task(worker._kill_all(0))

    async def run(self, stop: asyncio.Event) -> None:
        informer = asyncio.create_task(self.informer.run(stop))
        await stop.wait()
        await informer
        for worker in list(self.workers.values()):
            worker.task.cancel()
            await worker._kill_all(2)
        await self.recorder.close()
