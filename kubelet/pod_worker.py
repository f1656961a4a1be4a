"""One worker (an asyncio task) per pod: runs its containers and reports their truth.

The worker keeps only the latest version of its pod (``push``); its loop is a transaction script:
  1. start every container that is not running and is due to start (image changed: stop it first);
  2. wait for a container to exit, a restart to fall due, or a newer pod version;
  3. on exit, record ``terminated`` and apply ``restartPolicy`` with CrashLoopBackOff (10 s doubling to 5 min);
  4. on ``deletionTimestamp``, SIGTERM every container, SIGKILL after the grace period, then confirm the
     deletion with ``gracePeriodSeconds=0``;
  5. write ``pods/{name}/status`` when the computed status changed.
Any API error is logged and retried on the next pass.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apimachinery import errors
from apimachinery.meta import now_rfc3339

from . import status as st
from .runtime import IMAGES, ContainerProcess, image_name

if TYPE_CHECKING:
    from .kubelet import Kubelet

log = logging.getLogger(__name__)


@dataclass
class ContainerRecord:
    spec: dict[str, Any]
    process: ContainerProcess | None = None
    restarts: int = 0
    status: dict[str, Any] | None = None
    last: dict[str, Any] | None = None
    restart_at: float = 0.0
    done: bool = False  # exited and will not be restarted


class PodWorker:
    def __init__(self, kubelet: Kubelet, pod: dict[str, Any]) -> None:
        self.kubelet = kubelet
        self.pod = pod
        self.uid = pod["metadata"]["uid"]
        self.dir = kubelet.root_dir / "pods" / self.uid
        self.containers: dict[str, ContainerRecord] = {}
        self.start_time = now_rfc3339()
        self._changed = asyncio.Event()
        self.task = asyncio.create_task(self._run(), name=f"pod {self.key}")

    @property
    def key(self) -> str:
        meta = self.pod["metadata"]
        return f"{meta['namespace']}/{meta['name']}"

    def push(self, pod: dict[str, Any]) -> None:
        self.pod = pod
        self._changed.set()

    def log_path(self, container: str, previous: bool = False) -> Path:
        return self.dir / "logs" / (f"{container}.log.1" if previous else f"{container}.log")

    # --- the loop ---------------------------------------------------------------------------------------------
    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._changed.clear()
            if self.pod["metadata"].get("deletionTimestamp"):
                await self._terminate()
                return
            try:
                await self._start_due(loop.time())
                await self._write_status()
            except errors.NotFound:
                await self._kill_all(0)
                return
            except (errors.StatusError, OSError) as err:
                log.warning("pod %s: %s (retried)", self.key, err)
            await self._wait(loop)

    async def _wait(self, loop: asyncio.AbstractEventLoop) -> None:
        waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(self._changed.wait())]
        running = {asyncio.ensure_future(r.process.wait()): r for r in self.containers.values()
                   if r.process is not None and r.status and "running" in r.status["state"]}
        waits.extend(running)
        due = [r.restart_at for r in self.containers.values() if r.process is None and not r.done and r.restart_at]
        timeout = max(0.0, min(due) - loop.time()) if due else None
        done, pending = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        for fut in pending:
            fut.cancel()
        for fut in done:
            record = running.get(fut)
            if record is not None:
                self._exited(record, fut.result(), loop.time())

    # --- containers -------------------------------------------------------------------------------------------
    async def _start_due(self, now: float) -> None:
        for spec in self.pod["spec"].get("containers", []):
            record = self.containers.get(spec["name"])
            if record is None:
                record = self.containers[spec["name"]] = ContainerRecord(spec)
                record.status = st.waiting(spec, "ContainerCreating", 0)
            if record.process is not None and record.spec.get("image") != spec.get("image"):
                self.kubelet.event(self.pod, "Normal", "Killing",
                                   f"Container {spec['name']} definition changed, will be restarted")
                await self.kubelet.runtime.stop(record.process, self._grace())
                record.process, record.done, record.restart_at = None, False, 0.0
            record.spec = spec
            if record.process is None and not record.done and record.restart_at <= now:
                await self._start(record)

    async def _start(self, record: ContainerRecord) -> None:
        spec = record.spec
        image = spec.get("image", "")
        if image_name(image) not in IMAGES:
            record.status = st.waiting(spec, "ErrImagePull", record.restarts, record.last,
                                       f'image "{image}" is not in the local image store')
            self.kubelet.event(self.pod, "Warning", "Failed", f'Failed to pull image "{image}": not found')
            record.done = True
            return
        self.kubelet.event(self.pod, "Normal", "Pulled",
                           f'Container image "{image}" already present on machine')
        current = self.log_path(spec["name"])
        if record.restarts and current.exists():
            current.replace(self.log_path(spec["name"], previous=True))
        try:
            record.process = await self.kubelet.runtime.start(spec, self.dir / "containers" / spec["name"],
                                                              self._env(spec), current)
        except (OSError, RuntimeError) as err:
            record.status = st.waiting(spec, "CreateContainerError", record.restarts, record.last, str(err))
            self.kubelet.event(self.pod, "Warning", "Failed", f"Error: {err}")
            record.done = True
            return
        self.kubelet.event(self.pod, "Normal", "Created", f"Created container {spec['name']}")
        self.kubelet.event(self.pod, "Normal", "Started", f"Started container {spec['name']}")
        record.status = st.running(spec, record.process.started_at, record.restarts, record.last)

    def _exited(self, record: ContainerRecord, code: int, now: float) -> None:
        assert record.process is not None
        started = record.process.started_at
        record.process = None
        spec = record.spec
        record.status = st.terminated(spec, code, started, now_rfc3339(), record.restarts, record.last)
        policy = self.pod["spec"].get("restartPolicy", "Always")
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            record.last = {"terminated": record.status["state"]["terminated"]}
            delay = min(self.kubelet.backoff_base * (2 ** record.restarts), self.kubelet.backoff_max)
            record.restarts += 1
            record.restart_at = now + delay
            record.status = st.waiting(spec, "CrashLoopBackOff", record.restarts, record.last,
                                       f"back-off {int(delay)}s restarting failed container={spec['name']} "
                                       f"pod={self.pod['metadata']['name']}_{self.pod['metadata']['namespace']}"
                                       f"({self.uid})")
            self.kubelet.event(self.pod, "Warning", "BackOff", "Back-off restarting failed container "
                                                               f"{spec['name']} in pod {self.pod['metadata']['name']}")
        else:
            record.done = True

    def _env(self, spec: dict[str, Any]) -> dict[str, str]:
        meta = self.pod["metadata"]
        env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOSTNAME": meta["name"],
               "HOME": "/root"}
        fields = {"metadata.name": meta["name"], "metadata.namespace": meta["namespace"],
                  "metadata.uid": meta["uid"], "spec.nodeName": self.kubelet.node_name,
                  "status.podIP": self.kubelet.host_ip, "status.hostIP": self.kubelet.host_ip}
        for var in spec.get("env") or []:
            if "value" in var:
                env[var["name"]] = str(var["value"])
            elif (var.get("valueFrom") or {}).get("fieldRef"):
                env[var["name"]] = fields.get(var["valueFrom"]["fieldRef"].get("fieldPath", ""), "")
        return env

    def _grace(self) -> float:
        meta = self.pod["metadata"]
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = self.pod["spec"].get("terminationGracePeriodSeconds", 30)
        return float(grace)

    async def _kill_all(self, grace: float) -> None:
        procs = [r for r in self.containers.values() if r.process is not None]
        for record in procs:
            self.kubelet.event(self.pod, "Normal", "Killing", f"Stopping container {record.spec['name']}")
        await asyncio.gather(*(self.kubelet.runtime.stop(r.process, grace) for r in procs if r.process))

    async def _terminate(self) -> None:
        await self._kill_all(self._grace())
        meta = self.pod["metadata"]
        try:
            await self.kubelet.client.pods.delete(meta["name"], meta["namespace"], grace_period_seconds=0,
                                                  preconditions={"uid": self.uid})
        except (errors.NotFound, errors.Conflict):
            pass
        except errors.StatusError as err:
            log.warning("pod %s: confirming deletion failed: %s", self.key, err)

    # --- status -----------------------------------------------------------------------------------------------
    async def _write_status(self) -> None:
        statuses = [r.status for r in self.containers.values() if r.status is not None]
        new = st.build_status(self.pod, statuses, self.kubelet.host_ip, self.start_time)
        old = self.pod.get("status") or {}
        if _comparable(new) == _comparable(old):
            return
        meta = self.pod["metadata"]
        updated = await self.kubelet.client.pods.patch(meta["name"], {"status": new}, "merge", meta["namespace"],
                                                       subresource="status")
        self.pod = updated


def _comparable(status: dict[str, Any]) -> Any:
    return {k: v for k, v in status.items() if k != "conditions"}, \
        [(c.get("type"), c.get("status")) for c in status.get("conditions") or []]
