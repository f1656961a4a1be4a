"""One worker (an asyncio task) per pod: runs its containers and reports their truth.

The worker keeps only the latest version of its pod (``push``); its loop is a transaction script:
  0. give the pod its IP (``podips``: one of the Node's podCIDR, the host IP with ``hostNetwork`` or without a
     CIDR; none left is a ``FailedCreatePodSandBox`` event, retried);
  1. set up the pod's volumes (``volumes``; claims resolved to their bound volumes by ``claims``; a failure is a
     ``FailedMount`` event, retried: the pod waits in ContainerCreating);
  2. kill the containers whose liveness or startup probe failed (``Killing``), then restart them as below;
  3. run the init containers one at a time, in spec order, each to exit 0 (a failed one is restarted unless
     ``restartPolicy: Never``, which fails the pod); only then the app containers;
  4. start every app container that is not running and is due to start, with its environment (``env``), its
     mounts, its postStart hook and its probes (``probes``); a changed image kills the container and starts the
     new one at once (restartCount + 1); start each ephemeral container (``pods/ephemeralcontainers``, ``kubectl
     debug``) once, as soon as the sandbox is up: never restarted, never probed, reported apart;
  5. wait for a container to exit, a restart to fall due, a probe result, or a newer pod version;
  6. on exit, record ``terminated`` and apply ``restartPolicy``: the first exit is restarted at once, later ones
     wait in CrashLoopBackOff (10 s doubling to 5 min, ``backoff``); ``restartCount`` grows when a restart starts;
  7. on ``deletionTimestamp``, run preStop hooks, SIGTERM every container, SIGKILL after the grace period,
     remove the pod's volumes, release its IP, then confirm the deletion with ``gracePeriodSeconds=0`` (retried
     until the API takes it or the pod is gone);
  8. write ``pods/{name}/status`` when the computed status changed.
Any API error is logged and the pass retried (0.5 s, doubling to 10 s, as kube's status manager keeps a status
it could not write until it can): nothing else may come to wake the worker, and a status PATCH lost to an
apiserver restart must not leave the pod Pending while its container runs. Probe tasks belong to the container
instance that started them and are cancelled when it stops or when this worker ends.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from apimachinery import errors
from apimachinery.meta import format_duration, now_rfc3339, parse_time
from kubeclient.backoff import Backoff

from . import images, metrics
from . import status as st
from .backoff import CrashBackoff
from .claims import resolve_claims
from .dnsconfig import ResolverSettings, pod_dns
from .env import EnvError, expand_command, pod_env, runtime_env
from .logs import select
from .node import machine_capacity
from .podips import PoolExhausted
from .probes import PROBE_KINDS, ProbeKind, ProbeWorker, Result, run_hook
from .projected import projected_references, token_keys
from .runtime.cri import Container, ContainerMeta, ExecTarget, SandboxConfig
from .sources import SourceKind, env_references, volume_references
from .token import TokenKey
from .volumes import VolumeError, mount_container, refresh_written_volumes, remove_pod_volumes, setup_volumes

if TYPE_CHECKING:
    from kubeclient import Clientset

    from .images import ImageStore
    from .podips import PodIPs
    from .runtime.cri import Runtime
    from .serviceenv import ServiceEnv
    from .token import TokenManager

log = logging.getLogger(__name__)


class PodHost(Protocol):
    """What a pod worker needs from its kubelet (``Kubelet`` is one), so the worker depends on this small seam and
    not on the kubelet's module, as kube's pod workers see only a ``podSyncer``."""

    client: Clientset
    root_dir: Path
    host_ip: str  # the pod's IP with hostNetwork or without a podCIDR
    backoff_base: float  # the first CrashLoopBackOff wait; doubles up to backoff_max
    backoff_max: float
    runtime: Runtime
    images: ImageStore
    pod_ips: PodIPs
    recovered: dict[tuple[str, str], Container]  # containers found after a kubelet restart, until adopted
    tokens: TokenManager  # service-account tokens of projected volumes
    service_env: ServiceEnv  # KUBERNETES_SERVICE_HOST, <SVC>_SERVICE_HOST … for every container
    dns: ResolverSettings  # --cluster-dns, --cluster-domain, --resolv-conf: the pods' resolv.conf

    def event(self, pod: dict[str, Any], kind: str, reason: str, message: str,
              container: str | None = None) -> None:
        """Record an event about the pod (or one of its containers)."""
        ...

RETRY_SECONDS = 2.0  # a failed mount or container config is tried again after this long
API_RETRY_FIRST, API_RETRY_MAX = 0.5, 10.0  # a pass that failed on an API error is run again after this (doubling)
FALLBACK_LOG_LINES, FALLBACK_LOG_BYTES = 80, 2048  # MaxContainerTerminationMessageLog{Lines,Length}
VOLUME_RESYNC_SECONDS = 60.0  # projected and downwardAPI volumes are rewritten this often (tokens, ConfigMaps)
MIN_GRACE_SECONDS = 2.0  # after a preStop hook, a container still gets this long before SIGKILL (as kubelet)


@dataclass
class ContainerRecord:
    spec: dict[str, Any]
    init: bool = False
    ephemeral: bool = False  # a debugging container added through pods/ephemeralcontainers: run once, never probed
    process: Container | None = None
    restarts: int = 0
    status: dict[str, Any] | None = None
    last: dict[str, Any] | None = None
    restart_at: float = 0.0
    restart_pending: bool = False  # exited and to be started again: the next start counts as a restart
    backoff: CrashBackoff | None = None
    done: bool = False  # exited and will not be restarted
    ready: bool = False  # the readiness probe's result (True without a readiness probe)
    started: bool = False  # the startup probe's result (True without a startup probe)
    kill: tuple[str, float] | None = None  # (message, grace) from a failed liveness/startup probe: kill, restart
    target: ExecTarget | None = None
    probes: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def succeeded(self) -> bool:
        state = (self.status or {}).get("state") or {}
        return self.process is None and state.get("terminated", {}).get("exitCode") == 0

    @property
    def has_started(self) -> bool:
        state = (self.status or {}).get("state") or {}
        return self.process is not None or bool(self.restarts) or "terminated" in state

    def cancel_probes(self) -> None:
        for task in self.probes:
            task.cancel()
        self.probes.clear()


def _api_backoff() -> Backoff:
    """The retries of a worker's API calls (its passes, its deletion's confirmation): 0.5 s doubling to 10 s."""
    return Backoff(initial=API_RETRY_FIRST, cap=API_RETRY_MAX, jitter=0.0)


class PodWorker:
    def __init__(self, host: PodHost, pod: dict[str, Any]) -> None:
        self.host = host
        self.pod = pod
        self.uid = pod["metadata"]["uid"]
        self.dir: Path = host.root_dir / "pods" / self.uid
        self.containers: dict[str, ContainerRecord] = {}  # init and app containers (their names are unique)
        self.volumes: dict[str, Path] | None = None  # volume name → host path, once set up
        self.pod_ip: str | None = None  # once the sandbox has it (``_setup_network``)
        self.start_time = now_rfc3339()
        self._retry_at = 0.0  # when a failed volume set-up is tried again
        self._resync_at = 0.0  # when the projected volumes are next rewritten (0: none to rewrite)
        self._api_retry_at = 0.0  # when a pass that failed on an API error runs again (0: the last one did not)
        self._api_backoff = _api_backoff()
        self._changed = asyncio.Event()
        self._seen = time.monotonic()  # kubelet_pod_start_duration_seconds counts from here
        self._pulling = 0.0  # seconds spent pulling images: not part of kubelet_pod_start_sli_duration_seconds
        # Started before (a kubelet restart adopts it) or being deleted: not a start to count.
        self._start_observed = bool(pod["metadata"].get("deletionTimestamp")) or \
            (pod.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed")
        if not self._start_observed:
            metrics.STARTED_PODS.inc()
        self._sandbox: SandboxConfig | None = None  # formed once, for the first container (``_sandbox_config``)
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
        operation = "create"
        try:
            while True:
                self._changed.clear()
                if self.pod["metadata"].get("deletionTimestamp"):
                    await self._terminate()
                    return
                began = time.monotonic()
                try:
                    await self._kill_unhealthy(loop.time())
                    await self._start_due(loop.time())
                    await self._write_status()
                except errors.NotFound:
                    await self.remove()
                    return
                except (errors.StatusError, OSError) as err:
                    delay = self._api_backoff.next()
                    self._api_retry_at = loop.time() + delay
                    log.warning("pod %s: %s (retried in %.1f s)", self.key, err, delay)
                else:
                    self._api_backoff.reset()
                    self._api_retry_at = 0.0
                metrics.POD_WORKER_DURATION.labels(operation).observe(time.monotonic() - began)
                operation = "update"
                await self._wait(loop)
        finally:
            for record in self.containers.values():
                record.cancel_probes()

    async def _wait(self, loop: asyncio.AbstractEventLoop) -> None:
        waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(self._changed.wait())]
        running: dict[asyncio.Future[Any], ContainerRecord] = {
            asyncio.ensure_future(r.process.wait()): r for r in self.containers.values()
                   if r.process is not None and r.status and "running" in r.status["state"]}
        waits.extend(running)
        due = [r.restart_at for r in self.containers.values() if r.process is None and not r.done and r.restart_at]
        due += [self._retry_at] if self._retry_at else []
        due += [self._resync_at] if self._resync_at else []
        due += [self._api_retry_at] if self._api_retry_at else []
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
        spec = self.pod["spec"]
        inits, apps = spec.get("initContainers") or [], spec.get("containers") or []
        ephemeral = spec.get("ephemeralContainers") or []
        for container, init in [(c, True) for c in inits] + [(c, False) for c in apps]:
            if container["name"] not in self.containers:
                record = self.containers[container["name"]] = ContainerRecord(container, init=init)
                record.status = st.waiting(container, "PodInitializing" if inits else "ContainerCreating", 0)
        for container in ephemeral:
            if container["name"] not in self.containers:
                record = self.containers[container["name"]] = ContainerRecord(container, ephemeral=True)
                record.status = st.waiting(container, "ContainerCreating", 0)
        if self.pod_ip is None and not await self._setup_network(now):
            return
        if self.volumes is None and not await self._setup_volumes(now):
            return
        if self._resync_at and now >= self._resync_at:
            await self._resync_volumes(now)
        await self._start_ephemeral(ephemeral, now)
        if not self._initialized():
            for container in inits:
                record = self.containers[container["name"]]
                if record.succeeded:
                    continue
                record.spec = container
                if record.process is None and not record.done and record.restart_at <= now:
                    await self._start(record)
                return  # one init container at a time, in order
        for container in apps:
            record = self.containers[container["name"]]
            if record.process is not None and record.spec.get("image") != container.get("image"):
                await self._restart_changed(record, container)
            record.spec = container
            if record.process is None and not record.done and record.restart_at <= now:
                await self._start(record)

    async def _start_ephemeral(self, containers: list[dict[str, Any]], now: float) -> None:
        """Start each ephemeral container once (``computePodActions``: one without a status of its own is started,
        even before the init containers are done); one that ran is never started again. A pod that finished
        starts none: its sandbox is gone, as the kubelet's is.

        ``targetContainerName`` asks the runtime to put the debugger in the target's process namespace: the linux
        runtime does (``kubectl debug --target`` then shows the target's processes). The process
        runtime has no namespaces at all: every container, ephemeral or not, already sees every process of the node
        (``ps``, ``/proc/<pid>/cwd`` is the target's container directory, ``/proc/<pid>/environ`` its environment),
        so there is nothing to join and nothing is done. The docker runtime does not join it either: the debugger
        gets its own PID namespace, so ``--target`` does not show the target's processes there."""
        if (self.pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        for container in containers:
            record = self.containers[container["name"]]
            if record.process is None and not record.done and not record.has_started and record.restart_at <= now:
                await self._start(record)

    @property
    def ip(self) -> str:
        """The pod's IP for its environment and probes (the host's until the sandbox has one)."""
        return self.pod_ip or self.host.host_ip

    async def _setup_network(self, now: float) -> bool:
        """The pod's IP: the host's with ``hostNetwork`` (or for containers adopted from a kubelet that ran them
        with it), else one of the Node's podCIDR from the pool (the host IP while the Node has none)."""
        if self.pod["spec"].get("hostNetwork"):
            self.pod_ip = self.host.host_ip
            return True
        pool = self.host.pod_ips
        adopted = any(uid == self.uid for uid, _ in self.host.recovered)
        if adopted and self.uid not in pool.by_uid and (self.pod.get("status") or {}).get("podIP"):
            self.pod_ip = self.pod["status"]["podIP"]  # started before the node had a CIDR: keeps what it binds
            return True
        if self._retry_at > now:
            return False
        try:
            self.pod_ip = await pool.assign(self.uid)
        except PoolExhausted as err:
            self.host.event(self.pod, "Warning", "FailedCreatePodSandBox", "Failed to create pod sandbox: "
                               f"failed to allocate for range 0: {err}")
            self._retry_at = now + RETRY_SECONDS
            return False
        except errors.StatusError as err:  # the Node could not be read: its podCIDR is not known yet
            log.warning("pod %s: reading the node's podCIDR: %s (retried)", self.key, err)
            self._retry_at = now + RETRY_SECONDS
            return False
        self._retry_at = 0.0
        return True

    def _initialized(self) -> bool:
        """Every init container exited 0, or an app container has already run (``HasAnyRegularContainerStarted``;
        one found again after a kubelet restart counts, so init containers are not run twice)."""
        apps = [r for r in self.containers.values() if not r.init and not r.ephemeral]
        return all(r.succeeded for r in self.containers.values() if r.init) or \
            any(r.has_started or (self.uid, r.spec["name"]) in self.host.recovered for r in apps)

    async def _setup_volumes(self, now: float) -> bool:
        sources = await self._sources(volume_references(self.pod["spec"].get("volumes") or []) |
                                      projected_references(self.pod))
        try:
            claims = await resolve_claims(self.host.client, self.pod)
            tokens = await self._tokens()
            self.volumes = setup_volumes(self.pod, self.dir, sources, claims, tokens=tokens, pod_ip=self.ip,
                                         host_ip=self.host.host_ip, allocatable=machine_capacity())
        except (VolumeError, errors.StatusError) as err:
            self.host.event(self.pod, "Warning", "FailedMount", str(err))
            self._retry_at = now + RETRY_SECONDS
            return False
        self._retry_at = 0.0
        if any(v.get("projected") is not None or v.get("downwardAPI") is not None
               for v in self.pod["spec"].get("volumes") or []):
            self._resync_at = now + VOLUME_RESYNC_SECONDS
        return True

    async def _tokens(self) -> dict[TokenKey, str]:
        """The service-account tokens of the pod's projected volumes (cached by the kubelet until due a refresh);
        a failed TokenRequest is the mount's failure (``FailedMount``, retried)."""
        tokens: dict[TokenKey, str] = {}
        for volume, key in token_keys(self.pod):
            if key not in tokens:
                try:
                    tokens[key] = await self.host.tokens.token(key)
                except errors.StatusError as err:
                    raise VolumeError(f'MountVolume.SetUp failed for volume "{volume}" : failed to fetch token: '
                                      f"{err}") from None
        return tokens

    async def _resync_volumes(self, now: float) -> None:
        """The kubelet's periodic remount: projected and downwardAPI volumes rewritten with fresh tokens and data."""
        self._resync_at = now + VOLUME_RESYNC_SECONDS
        try:
            sources = await self._sources(projected_references(self.pod))
            refresh_written_volumes(self.pod, self.dir, sources, await self._tokens(), pod_ip=self.ip,
                                    host_ip=self.host.host_ip, allocatable=machine_capacity())
        except (VolumeError, errors.StatusError) as err:
            log.warning("pod %s: volumes not refreshed: %s (retried)", self.key, err)

    async def _sources(self, refs: Iterable[tuple[SourceKind, str]]) -> dict[tuple[SourceKind, str], Any]:
        """The named ConfigMaps and Secrets of the pod's namespace (``None`` for one that does not exist)."""
        found: dict[tuple[SourceKind, str], Any] = {}
        for kind, name in set(refs):
            try:
                found[kind, name] = await self.host.client.resource(kind.resource).get(
                    name, self.pod["metadata"]["namespace"])
            except errors.NotFound:
                found[kind, name] = None
        return found

    async def _restart_changed(self, record: ContainerRecord, spec: dict[str, Any]) -> None:
        """A new image: kill the container and start the new one at once, as a restart (``computePodActions``)."""
        assert record.process is not None
        self.host.event(self.pod, "Normal", "Killing",
                           f"Container {spec['name']} definition changed, will be restarted", spec["name"])
        started, cid = record.process.started_at, record.process.container_id
        code = await self._stop(record, self._grace())
        record.process = None
        killed = st.terminated(record.spec, code, started, now_rfc3339(), record.restarts, record.last,
                               container_id=cid)
        record.last = {"terminated": killed["state"]["terminated"]}
        record.restart_pending = True
        record.done, record.restart_at = False, 0.0

    async def _kill_unhealthy(self, now: float) -> None:
        """Kill the containers a liveness or startup probe failed; ``_exited`` applies the restart policy."""
        for record in list(self.containers.values()):
            kill, record.kill = record.kill, None
            if kill is not None and record.process is not None:
                self.host.event(self.pod, "Normal", "Killing", kill[0], record.spec["name"])
                code = await self._stop(record, kill[1])
                self._exited(record, code, now)

    async def _start(self, record: ContainerRecord) -> None:
        spec = record.spec
        if await self._adopt(record):
            return
        began = time.monotonic()
        pull = await self.host.images.ensure(self.pod, spec, self.host.event)  # Pulling/Pulled events
        self._pulling += time.monotonic() - began
        if pull is not None:  # ErrImagePull, ImagePullBackOff or ErrImageNeverPull: tried again after retry_in
            record.status = st.waiting(spec, pull.reason, record.restarts, record.last, pull.message)
            record.restart_at = asyncio.get_running_loop().time() + pull.retry_in
            return
        current = self.log_path(spec["name"])
        try:
            run_spec, env, target = await self._prepare(spec)
        except (EnvError, VolumeError) as err:
            # Kubernetes retries these: the ConfigMap or Secret may be created later.
            record.status = st.waiting(spec, "CreateContainerConfigError", record.restarts, record.last, str(err))
            self.host.event(self.pod, "Warning", "Failed", f"Error: {err}", spec["name"])
            record.restart_at = asyncio.get_running_loop().time() + RETRY_SECONDS
            return
        if record.restart_pending:
            record.restarts += 1  # restartCount counts instances started again, as the runtime's annotation does
            record.restart_pending = False
            if record.backoff is not None:
                record.backoff.next(asyncio.get_running_loop().time())
            if current.exists():
                current.replace(self.log_path(spec["name"], previous=True))
        try:
            meta = ContainerMeta(self.uid, self.pod["metadata"]["namespace"], self.pod["metadata"]["name"],
                                 record.restarts, record.last, self._sandbox_config())
            began = time.monotonic()
            record.process = await self.host.runtime.start(run_spec, self._container_dir(spec), env, current, meta)
            metrics.runtime_operation("start_container", time.monotonic() - began)
        except (OSError, RuntimeError) as err:
            record.status = st.waiting(spec, "CreateContainerError", record.restarts, record.last, str(err))
            self.host.event(self.pod, "Warning", "Failed", f"Error: {err}", spec["name"])
            record.done = True
            return
        self.host.event(self.pod, "Normal", "Created", f"Created container {spec['name']}", spec["name"])
        self.host.event(self.pod, "Normal", "Started", f"Started container {spec['name']}", spec["name"])
        self._explain_mounts(spec)
        record.target = self.host.runtime.exec_target(record.process, target)
        record.ready = spec.get("readinessProbe") is None
        record.started = spec.get("startupProbe") is None
        record.kill = None
        record.status = self._running_status(record)
        if not await self._post_start(record):
            return
        if not record.init and not record.ephemeral:
            self._start_probes(record)

    def _sandbox_config(self) -> SandboxConfig:
        """RunPodSandbox's configuration, formed once per pod (so a cut search line is reported once): hosts,
        hostname and, for a runtime that writes them into its sandboxes, the pod's resolv.conf (so the process
        runtime's pods, which read the host's, get no MissingClusterDNS warning about a file they never see)."""
        if self._sandbox is None:
            resolv = None
            if self.host.runtime.sandbox_files:
                warn = partial(self.host.event, self.pod, "Warning")
                resolv = pod_dns(self.host.dns, self.pod, warn).render()
            self._sandbox = SandboxConfig.from_pod(self.pod, self.ip, resolv_conf=resolv,
                                                   cluster_domain=self.host.dns.cluster_domain)
        return self._sandbox

    def _explain_mounts(self, spec: dict[str, Any]) -> None:
        """Tell the user of an interactive container where its volumes are: the process runtime has no mount
        namespace, so a path typed into its shell is the node's own (``/host`` of ``kubectl debug node/…`` does not
        exist; ``/`` already is the node's filesystem) and only the paths in command, args and env are rewritten
        to the links in the container directory (``volumes``)."""
        mounts = [m["mountPath"] for m in spec.get("volumeMounts") or [] if m.get("mountPath", "/").strip("/")]
        if self.host.runtime.bind_mounts or not spec.get("stdin") or not mounts:
            return
        where = ", ".join(f"{path} at {self._container_dir(spec) / path.strip('/')}" for path in mounts)
        self.host.event(self.pod, "Normal", "VolumeMountsRelative",
                           f"the process runtime cannot mount volumes at their mountPath (it has no mount "
                           f"namespace): typed paths reach them under the container's directory ({where})",
                           spec["name"])

    async def _adopt(self, record: ContainerRecord) -> bool:
        """A container of this pod that outlived a kubelet restart (``Kubelet.recovered``): a running one is kept
        (same process, same restartCount) instead of starting another; one that exited meanwhile is handled as any
        exit, with its recorded exit code (none recorded: 137 and ``ContainerStatusUnknown``, as kubelet)."""
        found = self.host.recovered.pop((self.uid, record.spec["name"]), None)
        if found is None:
            return False
        record.restarts, record.last, record.process = found.meta.restart_count, found.meta.last_state, found
        if found.returncode is not None:
            self._exited(record, found.returncode, asyncio.get_running_loop().time())
            if not found.exit_known:
                state = (record.status or {}).get("state", {}).get("terminated") or \
                    (record.last or {}).get("terminated") or {}
                state.update(reason="ContainerStatusUnknown",
                             message="The container could not be located when the pod was terminated")
            self._changed.set()
            return True
        try:
            _, _, record.target = await self._prepare(record.spec)
        except (EnvError, VolumeError):
            record.target = ExecTarget(found.env, found.cwd or self._container_dir(record.spec),
                                       self.ip, list(record.spec.get("ports") or []))
        record.target = self.host.runtime.exec_target(found, record.target)
        record.ready = record.spec.get("readinessProbe") is None
        record.started = record.spec.get("startupProbe") is None
        record.status = self._running_status(record)
        if not record.init and not record.ephemeral:
            self._start_probes(record)
        return True

    def _running_status(self, record: ContainerRecord) -> dict[str, Any]:
        assert record.process is not None
        return st.running(record.spec, record.process.started_at, record.restarts, record.last,
                          ready=record.ready and not record.init and not record.ephemeral, started=record.started,
                          container_id=record.process.container_id)

    def _container_dir(self, spec: dict[str, Any]) -> Path:
        return self.dir / "containers" / str(spec["name"])

    async def _prepare(self, spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str], ExecTarget]:
        """What a container runs with: its spec with ``$(VAR)`` and mount paths rewritten, its environment, and
        the target its probes and hooks run against (raises ``EnvError``/``VolumeError``)."""
        container_dir = self._container_dir(spec)
        defined = await self._container_env(spec)
        mounts = mount_container(spec, self.volumes or {}, container_dir)
        cwd = container_dir / spec["workingDir"].lstrip("/") if spec.get("workingDir") else container_dir
        if self.host.runtime.bind_mounts:  # real containers: the runtime mounts the volumes, the image has PATH
            env = dict(defined)
            run_spec = expand_command(spec, defined)
            if self.host.runtime.pod_ips:  # the nginx stand-in told where to listen (``_listen_address``)
                run_spec = images.listen_command(run_spec, self._listen_address())
            return run_spec, env, ExecTarget(env, cwd, self.ip, list(spec.get("ports") or []))
        env = runtime_env(self.pod, {name: mounts.rewrite(value) for name, value in defined.items()})
        target = ExecTarget(env, cwd, self.ip, list(spec.get("ports") or []), mounts.rewrite)
        run_spec = images.listen_command(mounts.rewrite_container(expand_command(spec, defined)),
                                         self._listen_address())
        return run_spec, env, target

    def _listen_address(self) -> str:
        """Where an image that serves listens: every address of a pod with a network namespace of its own (so
        ``localhost`` reaches it from its own containers, as nginx's ``listen 80``), else — on the node's network,
        shared with every other pod — only the pod's IP."""
        if self.host.runtime.isolated_network and not self.pod["spec"].get("hostNetwork"):
            return "0.0.0.0"
        return self.ip

    async def _container_env(self, spec: dict[str, Any]) -> dict[str, str]:
        """The variables the pod spec defines for this container (``env.pod_env``), ConfigMaps and Secrets fetched
        first."""
        sources = await self._sources(env_references(spec))
        defined = pod_env(self.pod, spec, pod_ip=self.ip, host_ip=self.host.host_ip,
                          sources=sources, allocatable=machine_capacity())
        links = self.pod["spec"].get("enableServiceLinks", True) is not False
        services = await self.host.service_env.get(self.pod["metadata"]["namespace"], links)
        return {**services, **defined}  # the pod's own variables win

    async def _post_start(self, record: ContainerRecord) -> bool:
        """Run the postStart hook (bounded by the grace period); on failure kill the container, as kubelet does."""
        hook = (record.spec.get("lifecycle") or {}).get("postStart")
        if not hook or record.target is None:
            return True
        failure = await run_hook(hook, record.target, self._grace())
        if failure is None or record.process is None:
            return True
        log.info("pod %s: postStart hook of %s failed: %s", self.key, record.spec["name"], failure)
        self.host.event(self.pod, "Warning", "FailedPostStartHook", "PostStartHook failed", record.spec["name"])
        self.host.event(self.pod, "Normal", "Killing", "FailedPostStartHook", record.spec["name"])
        code = await self._stop(record, self._grace())
        self._exited(record, code, asyncio.get_running_loop().time())
        return False

    # --- probes -----------------------------------------------------------------------------------------------
    def _start_probes(self, record: ContainerRecord) -> None:
        assert record.target is not None
        for kind in PROBE_KINDS:
            probe = record.spec.get(f"{kind}Probe")
            if probe:
                worker = ProbeWorker(kind, probe, record.target, started=lambda: record.started,
                                     on_result=partial(self._probe_result, record),
                                     on_failure=partial(self._probe_failed, record))
                record.probes.append(asyncio.create_task(worker.run(), name=f"{kind} probe {self.key}"))

    def _probe_failed(self, record: ContainerRecord, kind: ProbeKind, output: str) -> None:
        self.host.event(self.pod, "Warning", "Unhealthy", f"{kind.capitalize()} probe failed: {output}",
                           record.spec["name"])

    def _probe_result(self, record: ContainerRecord, kind: ProbeKind, result: Result) -> None:
        if record.process is None:
            return
        ok = result is Result.SUCCESS
        before = (record.ready, record.started)
        if kind == "readiness":
            record.ready = ok
        elif kind == "startup" and ok:
            record.started = True
        elif not ok:  # liveness or startup failed: the loop kills the container
            grace = record.spec[f"{kind}Probe"].get("terminationGracePeriodSeconds")
            record.kill = (f"Container {record.spec['name']} failed {kind} probe, will be restarted",
                           self._grace() if grace is None else float(grace))
        if before != (record.ready, record.started) or record.kill:
            record.status = self._running_status(record)
            self._changed.set()

    def _exited(self, record: ContainerRecord, code: int, now: float) -> None:
        assert record.process is not None
        record.cancel_probes()
        code = 128 - code if code < 0 else code  # killed by signal N: exit code 128 + N, as runtimes report it
        started, cid, reason = record.process.started_at, record.process.container_id, record.process.reason
        message = record.process.message or self._fallback_message(record.spec, code)
        record.process = None
        record.ready = False
        spec = record.spec
        record.status = st.terminated(spec, code, started, now_rfc3339(), record.restarts, record.last,
                                      init=record.init, container_id=cid, reason=reason, message=message)
        policy = self.pod["spec"].get("restartPolicy", "Always")
        if record.ephemeral:
            restart = False  # ephemeral containers are never restarted
        elif record.init:
            restart = code != 0 and policy != "Never"  # an init container that succeeded is never run again
        else:
            restart = policy == "Always" or (policy == "OnFailure" and code != 0)
        if restart:
            record.last = {"terminated": record.status["state"]["terminated"]}
            record.restart_pending = True
            if record.backoff is None:
                record.backoff = CrashBackoff(self.host.backoff_base, self.host.backoff_max)
            delay = record.backoff.delay(now)
            record.restart_at = now + delay
            if delay:
                record.status = st.waiting(spec, "CrashLoopBackOff", record.restarts, record.last,
                                           f"back-off {format_duration(delay)} restarting failed container="
                                           f"{spec['name']} pod={self.pod['metadata']['name']}_"
                                           f"{self.pod['metadata']['namespace']}({self.uid})")
                self.host.event(self.pod, "Warning", "BackOff", "Back-off restarting failed container "
                                   f"{spec['name']} in pod {self.pod['metadata']['name']}", spec["name"])
        else:
            record.done = True

    def _fallback_message(self, spec: dict[str, Any], code: int) -> str | None:
        """``terminationMessagePolicy: FallbackToLogsOnError``: a failed container without a termination message
        gets the end of its log (the last 80 lines, at most 2 KiB, as the kubelet's)."""
        if code == 0 or spec.get("terminationMessagePolicy") != "FallbackToLogsOnError":
            return None
        try:
            lines = self.log_path(spec["name"]).read_text(errors="replace").splitlines()
        except OSError:
            return None
        return select(lines, {"tailLines": str(FALLBACK_LOG_LINES)})[-FALLBACK_LOG_BYTES:] or None

    def _grace(self) -> float:
        meta = self.pod["metadata"]
        grace = meta.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = self.pod["spec"].get("terminationGracePeriodSeconds", 30)
        return float(grace)

    async def _stop(self, record: ContainerRecord, grace: float) -> int:
        """``killContainer``: stop probing, run the preStop hook (grace > 0), SIGTERM, SIGKILL after the rest."""
        assert record.process is not None
        record.cancel_probes()
        hook = (record.spec.get("lifecycle") or {}).get("preStop")
        if hook and grace > 0 and record.target is not None:
            loop = asyncio.get_running_loop()
            began = loop.time()
            failure = await run_hook(hook, record.target, grace)
            if failure is not None:
                log.info("pod %s: preStop hook of %s failed: %s", self.key, record.spec["name"], failure)
                self.host.event(self.pod, "Warning", "FailedPreStopHook", "PreStopHook failed", record.spec["name"])
            grace = max(grace - (loop.time() - began), MIN_GRACE_SECONDS)
        began = time.monotonic()
        code = await self.host.runtime.stop(record.process, grace)
        metrics.runtime_operation("stop_container", time.monotonic() - began)
        return 128 - code if code < 0 else code

    async def _kill_all(self, grace: float) -> None:
        procs = [r for r in self.containers.values() if r.process is not None]
        for record in procs:
            self.host.event(self.pod, "Normal", "Killing", f"Stopping container {record.spec['name']}",
                               record.spec["name"])
        await asyncio.gather(*(self._stop(r, grace) for r in procs))

    async def remove(self) -> None:
        """The pod is gone from the API (force-deleted): kill its containers at once and delete its volumes."""
        await self._kill_all(0)
        remove_pod_volumes(self.dir)
        self.host.tokens.forget(self.uid)
        self.host.pod_ips.release(self.uid)

    async def _terminate(self) -> None:
        await self._kill_all(self._grace())
        remove_pod_volumes(self.dir)
        self.host.tokens.forget(self.uid)
        self.host.pod_ips.release(self.uid)
        meta = self.pod["metadata"]
        backoff = _api_backoff()
        while True:  # until the API has it: a pod left Terminating for good is what a lost confirmation would cost
            try:
                await self.host.client.pods.delete(meta["name"], meta["namespace"], grace_period_seconds=0,
                                                      preconditions={"uid": self.uid})
                return
            except (errors.NotFound, errors.Conflict):
                return
            except (errors.StatusError, OSError) as err:
                delay = backoff.next()
                log.warning("pod %s: confirming deletion failed: %s (retried in %.1f s)", self.key, err, delay)
            await asyncio.sleep(delay)

    # --- status -----------------------------------------------------------------------------------------------
    async def _write_status(self) -> None:
        records = self.containers.values()
        statuses = [s for r in records if (s := r.status) is not None and not r.init and not r.ephemeral]
        inits = [s for r in records if (s := r.status) is not None and r.init]
        ephemeral = [st.ephemeral(s) for r in records if (s := r.status) is not None and r.ephemeral]
        new = st.build_status(self.pod, statuses, self.host.host_ip, self.start_time, inits, pod_ip=self.pod_ip,
                              ephemeral_statuses=ephemeral)
        old = self.pod.get("status") or {}
        if not self._start_observed and new.get("phase") == "Running":
            self._observe_start()
        if _comparable(new) == _comparable(old):
            return
        pod = self.pod
        meta = pod["metadata"]
        updated = await self.host.client.pods.patch(meta["name"], {"status": new}, "merge", meta["namespace"],
                                                       subresource="status")
        if self.pod is pod:  # else the watch pushed a version meanwhile, maybe newer than the answer (a deletion):
            self.pod = updated  # it stays, and a status it lacks is written again on the next round

    def _observe_start(self) -> None:
        """The pod runs: its start latency from this kubelet's first sight, and from its creation without the
        image pulls (kube's SLI; the creation timestamp has whole seconds)."""
        self._start_observed = True
        metrics.POD_START_DURATION.observe(time.monotonic() - self._seen)
        created = self.pod["metadata"].get("creationTimestamp")
        if created:
            since = time.time() - parse_time(created).timestamp() - self._pulling
            metrics.POD_START_SLI_DURATION.observe(max(since, 0.0))


def _comparable(status: dict[str, Any]) -> Any:
    return {k: v for k, v in status.items() if k != "conditions"}, \
        [(c.get("type"), c.get("status")) for c in status.get("conditions") or []]
