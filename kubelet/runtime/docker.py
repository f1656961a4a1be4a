"""``--runtime docker``: real containers through a Docker engine's HTTP API (a ``cri.Runtime``, as dockershim was).

The engine is reached at ``DOCKER_HOST`` (``unix://`` or ``tcp://``) or ``unix:///var/run/docker.sock`` with
aiohttp, API version ``API_VERSION`` (Docker 20.10 and every later engine speak it). What the kubelet asks and what
the engine receives:

    pull          DockerImages.ensure → ``POST /images/create?fromImage=&tag=`` (Pulling/Pulled events as the
                  process runtime's store gives them); status.images and "already present" from ``GET /images/json``
    start         ``POST /containers/create?name=k8s_<container>_<pod>_<namespace>_<uid>_<restarts>`` with the
                  image, ``command`` → Entrypoint and ``args`` → Cmd (Kubernetes' rule: the engine keeps the image's
                  CMD only when neither is given), Env, WorkingDir, HostConfig.NetworkMode=host (pods share the
                  host's network in kubelab), Binds of the pod's volumes at their mountPath, and dockershim's labels
                  (``io.kubernetes.pod.uid/namespace/name``, ``io.kubernetes.container.name``, the log path,
                  restart count and last state); then ``POST /containers/{id}/start``
    wait          ``POST /containers/{id}/wait`` → the exit code
    logs          ``GET /containers/{id}/logs?follow=1&stdout=1&stderr=1&timestamps=1``: the multiplexed stream
                  (8-byte headers: stream, 0, 0, 0, big-endian length) copied into the kubelet's per-container log in
                  the CRI format (``<time> <stream> <F|P> <text>``), so the kubelet's log endpoint serves it
    stop          ``POST /containers/{id}/stop?t=<grace>`` (SIGTERM, SIGKILL after t seconds)
    remove        ``DELETE /containers/{id}?force=1`` (an older instance when a container restarts; every container
                  of a pod the node no longer has)
    exec          ``POST /containers/{id}/exec`` + ``POST /exec/{id}/start`` + ``GET /exec/{id}/json`` (exit code):
                  exec probes, hooks and non-interactive ``kubectl exec``
    recover       ``GET /containers/json?all=1&filters={"label":["io.kubernetes.pod.uid","io.kubelab.node=<node>"]}``
                  after a kubelet restart: each container is adopted (running: waited for and its log followed
                  from the last line already copied; exited: with its exit code), never started again

``connect`` (ping, version, recover, images) runs before the kubelet is built, so ``recover``, ``remove_pods``
and ``DockerImages.present``/``images`` answer synchronously from what it read; removals run in the background.
Every error from the engine or the socket becomes an ``EngineError`` (an ``OSError``: the pod worker turns it
into CreateContainerError and retries as for the process runtime).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import aiohttp

from apimachinery.meta import micro_time, now_rfc3339

from ..images import ImageStore, PullError, PullFailure, Recorder, parse_reference
from .cri import Container, ContainerMeta, ExecTarget

log = logging.getLogger(__name__)

RUNTIME_NAME = "docker"
API_VERSION = "1.41"
DEFAULT_HOST = "unix:///var/run/docker.sock"
POD_UID, POD_NAME, POD_NAMESPACE = "io.kubernetes.pod.uid", "io.kubernetes.pod.name", "io.kubernetes.pod.namespace"
CONTAINER_NAME, LOG_PATH = "io.kubernetes.container.name", "io.kubernetes.container.logpath"
RESTART_COUNT = "annotation.io.kubernetes.container.restartCount"
LAST_STATE = "annotation.io.kubelab.container.lastState"
NODE = "io.kubelab.node"  # several kubelets may share one engine: each adopts and removes only its own
STREAMS = {1: "stdout", 2: "stderr"}


class EngineError(OSError):
    """The engine answered with an error (``status``: its HTTP status), or could not be reached (status 0)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def engine_host() -> str:
    return os.environ.get("DOCKER_HOST") or DEFAULT_HOST


class Engine:
    """The one transport boundary: HTTP to the engine, its errors translated into ``EngineError``."""

    def __init__(self, host: str | None = None) -> None:
        self.host = host or engine_host()
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            if self.host.startswith("unix://"):
                connector: aiohttp.BaseConnector = aiohttp.UnixConnector(path=self.host[len("unix://"):])
                base = "http://docker"
            elif self.host.startswith(("tcp://", "http://")):
                connector, base = aiohttp.TCPConnector(), "http://" + self.host.split("://", 1)[1]
            else:
                raise EngineError(f"unsupported DOCKER_HOST {self.host!r} (unix:// or tcp://)")
            self._session = aiohttp.ClientSession(base, connector=connector,
                                                  timeout=aiohttp.ClientTimeout(total=None, sock_connect=5))
        return self._session

    @asynccontextmanager
    async def stream(self, method: str, path: str, *, params: dict[str, str] | None = None, body: Any = None,
                     timeout: float | None = None) -> AsyncIterator[aiohttp.ClientResponse]:
        """The response of a request whose body is read as it comes (logs, pulls, exec output)."""
        url = path if path == "/_ping" else f"/v{API_VERSION}{path}"
        try:
            async with self._client().request(method, url, params=params, json=body,
                                              timeout=aiohttp.ClientTimeout(total=timeout, sock_connect=5)) as resp:
                if resp.status >= 400:
                    text = await resp.text()
                    try:
                        message = json.loads(text).get("message") or text
                    except ValueError:
                        message = text
                    raise EngineError(message.strip(), resp.status)
                yield resp
        except (aiohttp.ClientError, TimeoutError) as err:
            raise EngineError(f"{method} {path}: {err or type(err).__name__}") from err

    async def request(self, method: str, path: str, *, params: dict[str, str] | None = None, body: Any = None,
                      timeout: float | None = 60.0) -> Any:
        """The JSON answer (``None`` for an empty one)."""
        async with self.stream(method, path, params=params, body=body, timeout=timeout) as resp:
            data = await resp.read()
        if not data:
            return None
        try:
            return json.loads(data)
        except ValueError:
            return data.decode(errors="replace")

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def demux(resp: aiohttp.ClientResponse) -> AsyncIterator[tuple[int, bytes]]:
    """The engine's multiplexed stream: (stream, payload) frames until the body ends."""
    while True:
        try:
            header = await resp.content.readexactly(8)
            payload = await resp.content.readexactly(int.from_bytes(header[4:8], "big"))
        except asyncio.IncompleteReadError:
            return
        yield header[0], payload


# --- images ------------------------------------------------------------------------------------------------------
@dataclass
class DockerImages(ImageStore):
    """The engine's images behind ``ImageStore``'s pull policy, back-off and events (``ensure``)."""

    engine: Engine = field(default_factory=Engine)
    _listed: list[dict[str, Any]] = field(default_factory=list)

    def refresh(self) -> None:
        """Nothing to notice between pulls: the engine's images are listed again (``relist``) before each
        ``ensure`` and after each pull. (An ``async`` override here was called unawaited by the node's status
        loop, which leaked a never-awaited coroutine per heartbeat.)"""

    async def relist(self) -> None:
        self._listed = list(await self.engine.request("GET", "/images/json") or [])

    def _names(self, image: dict[str, Any]) -> list[str]:
        return [n for n in (image.get("RepoDigests") or []) + (image.get("RepoTags") or []) if "<none>" not in n]

    def _find(self, image: str) -> dict[str, Any] | None:
        ref = parse_reference(image)
        wanted = f"{ref.repository}@{ref.digest}" if ref.digest else ref.name
        for listed in self._listed:
            for name in self._names(listed):
                other = parse_reference(name)
                if (f"{other.repository}@{other.digest}" if other.digest else other.name) == wanted:
                    return listed
        return None

    def present(self, image: str) -> bool:
        return self._find(image) is not None

    def images(self) -> list[dict[str, Any]]:
        out = [{"names": self._names(i), "sizeBytes": int(i.get("Size") or 0)} for i in self._listed if self._names(i)]
        return sorted(out, key=lambda image: -image["sizeBytes"])

    async def pull(self, image: str) -> tuple[int, float, float]:
        queued = time.monotonic()
        async with self._lock:
            began = time.monotonic()
            ref = parse_reference(image)
            params = {"fromImage": ref.repository, "tag": ref.digest or ref.tag or "latest"}
            try:
                async with self.engine.stream("POST", "/images/create", params=params) as resp:
                    async for line in resp.content:
                        if line.strip():
                            progress = json.loads(line)
                            if progress.get("error"):
                                raise PullError(progress["error"])
            except EngineError as err:
                raise PullError(str(err)) from err
            done = time.monotonic()
            await self.relist()
        self.changed.set()
        found = self._find(image)
        return int((found or {}).get("Size") or 0), done - began, done - queued

    async def ensure(self, pod: dict[str, Any], container: dict[str, Any], record: Recorder,
                     now: float | None = None) -> PullFailure | None:
        try:
            await self.relist()  # the engine's images may have changed under us (docker rmi, docker pull)
        except EngineError as err:
            log.warning("listing the engine's images: %s", err)
        return await super().ensure(pod, container, record, now)


# --- containers ----------------------------------------------------------------------------------------------------
def _nanos(timestamp: str) -> int:
    """RFC 3339 with nanoseconds (the engine's log timestamps) → nanoseconds since the epoch."""
    base, _, frac = timestamp.rstrip("Z").partition(".")
    seconds = datetime.strptime(base[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()
    return int(seconds) * 1_000_000_000 + int((frac or "0")[:9].ljust(9, "0"))


def cri_lines(stream: int, payload: bytes, default_ts: str) -> list[tuple[str, bytes]]:
    """One frame of ``logs?timestamps=1`` → (timestamp, CRI log line) pairs; a message that does not end with a
    newline is a partial entry (``P``), as the CRI log writer marks it."""
    out = []
    name = STREAMS.get(stream, "stdout")
    for chunk in payload.splitlines(keepends=True):
        ts, sep, text = chunk.partition(b" ")
        if sep and ts.endswith(b"Z") and b"T" in ts:
            stamp = ts.decode()
        else:
            stamp, text = default_ts, chunk
        full = text.endswith(b"\n")
        text = text.rstrip(b"\n").rstrip(b"\r") if full else text
        out.append((stamp, f"{stamp} {name} {'F' if full else 'P'} ".encode() + text + b"\n"))
        default_ts = stamp
    return out


def _last_timestamp(log_path: Path) -> str | None:
    try:
        with open(log_path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 64 * 1024))
            lines = f.read().splitlines()
    except OSError:
        return None
    return lines[-1].split(b" ", 1)[0].decode() if lines else None


async def copy_logs(engine: Engine, cid: str, log_path: Path, since: str | None = None) -> None:
    """Follow the container's output into ``log_path`` until it ends (the container exited); ``since``: the last
    timestamp already copied (a kubelet restart), nothing up to it is written twice."""
    params = {"follow": "1", "stdout": "1", "stderr": "1", "timestamps": "1"}
    skip_to = 0
    if since:
        skip_to = _nanos(since)
        params["since"] = f"{skip_to // 1_000_000_000}.{skip_to % 1_000_000_000:09d}"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    out: BinaryIO
    with open(log_path, "ab") as out:
        async with engine.stream("GET", f"/containers/{cid}/logs", params=params) as resp:
            last = since or micro_time(time.time_ns())
            async for stream, payload in demux(resp):
                for stamp, line in cri_lines(stream, payload, last):
                    last = stamp
                    if skip_to and _nanos(stamp) <= skip_to:
                        continue
                    out.write(line)
                out.flush()


@dataclass
class DockerContainer:
    """One engine container as the kubelet sees it (a ``cri.Container``)."""

    name: str
    id: str
    started_at: str
    meta: ContainerMeta
    engine: Engine
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    exit_known: bool = True
    reason: str | None = None  # the engine's State.OOMKilled is not read: exit codes only
    message: str | None = None  # nor the termination message file
    _code: int | None = None
    _waiter: asyncio.Task[int] | None = None
    _logs: asyncio.Task[None] | None = None

    @property
    def container_id(self) -> str:
        return f"{RUNTIME_NAME}://{self.id}"

    @property
    def returncode(self) -> int | None:
        return self._code

    def follow_logs(self, since: str | None = None) -> None:
        self._logs = asyncio.create_task(self._copy_logs(since), name=f"logs of {self.name}")

    async def _copy_logs(self, since: str | None) -> None:
        try:
            await copy_logs(self.engine, self.id, self.log_path, since)
        except (EngineError, OSError) as err:
            log.warning("logs of container %s (%s): %s", self.name, self.id[:12], err)

    async def wait(self) -> int:
        if self._code is not None:
            return self._code
        if self._waiter is None:
            self._waiter = asyncio.ensure_future(self._wait())
        return await asyncio.shield(self._waiter)

    async def _wait(self) -> int:
        while True:
            try:
                answer = await self.engine.request("POST", f"/containers/{self.id}/wait", timeout=None)
                code = int(answer["StatusCode"])
                break
            except EngineError as err:
                if err.status == 404:  # removed behind our back: as kubelet's ContainerStatusUnknown
                    self.exit_known, code = False, 137
                    break
                log.warning("waiting for container %s: %s (retried)", self.id[:12], err)
                await asyncio.sleep(1.0)
        if self._logs is not None:  # the rest of its output reaches the log before the exit is reported
            await asyncio.wait([self._logs], timeout=2.0)
        self._code = code
        return code


@dataclass
class DockerExec:
    """``probes.InContainer`` for one engine container: the CRI's ExecSync."""

    engine: Engine
    cid: str

    async def run(self, argv: list[str], timeout: float | None) -> tuple[int, bytes, bytes]:
        created = await self.engine.request("POST", f"/containers/{self.cid}/exec", body={
            "Cmd": argv, "AttachStdin": False, "AttachStdout": True, "AttachStderr": True, "Tty": False})
        exec_id = created["Id"]
        out: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
        async with asyncio.timeout(timeout):
            async with self.engine.stream("POST", f"/exec/{exec_id}/start", body={"Detach": False, "Tty": False}) \
                    as resp:
                async for stream, payload in demux(resp):
                    out.setdefault(stream, bytearray()).extend(payload)
            for _ in range(50):
                state = await self.engine.request("GET", f"/exec/{exec_id}/json")
                if not state.get("Running") and state.get("ExitCode") is not None:
                    break
                await asyncio.sleep(0.1)
        code = int(state.get("ExitCode") or 0)
        if code in (126, 127) and b"executable file not found" in out[1] + out[2]:
            raise FileNotFoundError(2, f'exec: "{argv[0]}": executable file not found in $PATH')
        return code, bytes(out[1]), bytes(out[2])


def container_name(meta: ContainerMeta, container: str) -> str:
    """dockershim's ``k8s_<container>_<pod>_<namespace>_<uid>_<attempt>``."""
    return f"k8s_{container}_{meta.pod_name}_{meta.pod_namespace}_{meta.pod_uid}_{meta.restart_count}"


def binds(container: dict[str, Any], workdir: Path) -> list[str]:
    """``host path:mountPath[:ro]`` for each volumeMount: the pod worker linked each one in the container's
    directory (``volumes.mount_container``) to the volume (or its subPath)."""
    out = []
    for mount in container.get("volumeMounts") or []:
        relative = mount["mountPath"].strip("/")
        link = workdir / relative
        if not relative or not link.exists():
            raise RuntimeError(f'volume mount {mount["mountPath"]} of container "{container["name"]}" is not set up')
        out.append(f"{os.path.realpath(link)}:{mount['mountPath']}{':ro' if mount.get('readOnly') else ''}")
    return out


def create_body(container: dict[str, Any], workdir: Path, env: dict[str, str], log_path: Path,
                meta: ContainerMeta, node: str) -> dict[str, Any]:
    """What ``POST /containers/create`` gets for a pod's container (dockershim's ``CreateContainer``)."""
    body: dict[str, Any] = {
        "Image": container.get("image", ""),
        "Env": [f"{k}={v}" for k, v in env.items()],
        "Labels": {POD_UID: meta.pod_uid, POD_NAME: meta.pod_name, POD_NAMESPACE: meta.pod_namespace,
                   CONTAINER_NAME: container["name"], LOG_PATH: str(log_path), NODE: node,
                   RESTART_COUNT: str(meta.restart_count), LAST_STATE: json.dumps(meta.last_state or {}),
                   "io.kubernetes.docker.type": "container"},
        "HostConfig": {"NetworkMode": "host", "Binds": binds(container, workdir)},
        "Tty": False, "OpenStdin": False, "AttachStdout": False, "AttachStderr": False,
    }
    if container.get("command"):
        body["Entrypoint"] = [str(part) for part in container["command"]]
    if container.get("args"):
        body["Cmd"] = [str(part) for part in container["args"]]
    if container.get("workingDir"):
        body["WorkingDir"] = container["workingDir"]
    return body


class DockerRuntime:
    """Pods' containers as engine containers (a ``cri.Runtime``); call ``connect`` before handing it over."""

    bind_mounts = True
    pod_ips = False  # NetworkMode=host: the pods have the host's IP
    sandbox_files = False  # the engine writes its containers' own
    isolated_network = False  # NetworkMode=host

    def __init__(self, node: str, engine: Engine | None = None) -> None:
        self.node = node
        self.engine = engine or Engine()
        self.version = ""
        self._recovered: list[DockerContainer] = []
        self._instances: dict[tuple[str, str], list[str]] = {}  # (pod UID, container name) → engine ids
        self._removals: set[asyncio.Task[None]] = set()
        self._containers: dict[str, DockerContainer] = {}  # by engine id: their log and wait tasks end with us

    @property
    def runtime_version(self) -> str:
        """nodeInfo.containerRuntimeVersion: ``docker://24.0.7``."""
        return f"{RUNTIME_NAME}://{self.version}"

    async def connect(self) -> None:
        """Check the engine answers, read its version and the containers this node ran before (``EngineError``)."""
        await self.engine.request("GET", "/_ping", timeout=10)
        self.version = str((await self.engine.request("GET", "/version", timeout=10) or {}).get("Version", ""))
        self._recovered = await self._list()

    async def _list(self) -> list[DockerContainer]:
        filters = json.dumps({"label": [POD_UID, f"{NODE}={self.node}"]})
        listed = await self.engine.request("GET", "/containers/json", params={"all": "1", "filters": filters})
        found = []
        for summary in sorted(listed or [], key=lambda c: c.get("Created", 0)):
            try:
                info = await self.engine.request("GET", f"/containers/{summary['Id']}/json")
            except EngineError as err:
                if err.status == 404:
                    continue
                raise
            found.append(self._adopted(info))
        return found

    def _adopted(self, info: dict[str, Any]) -> DockerContainer:
        labels = info["Config"].get("Labels") or {}
        meta = ContainerMeta(labels.get(POD_UID, ""), labels.get(POD_NAMESPACE, ""), labels.get(POD_NAME, ""),
                             int(labels.get(RESTART_COUNT) or 0), json.loads(labels.get(LAST_STATE) or "{}") or None)
        env = dict(item.split("=", 1) for item in info["Config"].get("Env") or [] if "=" in item)
        state = info.get("State") or {}
        name = labels.get(CONTAINER_NAME, "")
        c = DockerContainer(name, info["Id"], _seconds(state.get("StartedAt", "")), meta, self.engine,
                            Path(labels.get(LOG_PATH) or os.devnull), env)
        self._instances.setdefault((meta.pod_uid, name), []).append(c.id)
        self._containers[c.id] = c
        if state.get("Running"):
            c.follow_logs(_last_timestamp(c.log_path) if labels.get(LOG_PATH) else None)
        else:
            c._code = int(state.get("ExitCode") or 0)
        return c

    async def warm_up(self) -> None:
        return None  # the engine is up already (checked at start)

    async def start(self, container: dict[str, Any], workdir: Path, env: dict[str, str], log_path: Path,
                    meta: ContainerMeta | None = None) -> DockerContainer:
        meta = meta or ContainerMeta()
        body = create_body(container, workdir, env, log_path, meta, self.node)
        await self._remove_instances(meta.pod_uid, container["name"])
        name = container_name(meta, container["name"])
        try:
            created = await self.engine.request("POST", "/containers/create", params={"name": name}, body=body)
        except EngineError as err:
            if err.status != 409:
                raise
            await self._remove(name)  # left over from an instance this kubelet did not know
            created = await self.engine.request("POST", "/containers/create", params={"name": name}, body=body)
        cid = created["Id"]
        self._instances.setdefault((meta.pod_uid, container["name"]), []).append(cid)
        try:
            await self.engine.request("POST", f"/containers/{cid}/start")
        except EngineError as err:
            await self._remove(cid)
            raise RuntimeError(str(err)) from err
        info = await self.engine.request("GET", f"/containers/{cid}/json")
        c = DockerContainer(container["name"], cid, _seconds((info.get("State") or {}).get("StartedAt", "")), meta,
                            self.engine, log_path, dict(env))
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._containers[cid] = c
        c.follow_logs()
        return c

    async def stop(self, container: Container, grace: float) -> int:
        """``POST /containers/{id}/stop?t=`` (the engine sends SIGTERM, SIGKILL after t seconds)."""
        assert isinstance(container, DockerContainer)
        if container.returncode is None:
            t = max(0, math.ceil(grace))
            try:
                await self.engine.request("POST", f"/containers/{container.id}/stop", params={"t": str(t)},
                                          timeout=t + 30)
            except EngineError as err:
                if err.status not in (304, 404):
                    raise
        return await container.wait()

    def exec_target(self, container: Container, target: ExecTarget) -> ExecTarget:
        return ExecTarget(target.env, target.cwd, target.pod_ip, target.ports,
                          container=DockerExec(self.engine, container.id))

    def attach_socket(self, container: Container) -> Path | None:
        """Not offered (yet): the engine's attach stream would need its own relay; the kubelet says so."""
        return None

    def shutdown(self) -> None:
        """The engine keeps nothing for a pod beyond its containers."""

    def recover(self) -> list[DockerContainer]:
        return list(self._recovered)

    def remove_pods(self, keep: set[str]) -> list[str]:
        gone = {uid for uid, _ in self._instances if uid and uid not in keep}
        for key in [k for k in self._instances if k[0] in gone]:
            for cid in self._instances.pop(key):
                task = asyncio.get_running_loop().create_task(self._remove(cid), name=f"remove container {cid[:12]}")
                self._removals.add(task)
                task.add_done_callback(self._removals.discard)
        return sorted(gone)

    async def _remove_instances(self, pod_uid: str, name: str) -> None:
        """Only the newest instance of a container is kept (its predecessor's exit is in the pod's status)."""
        for cid in self._instances.pop((pod_uid, name), []):
            await self._remove(cid)

    async def _remove(self, cid: str) -> None:
        self._containers.pop(cid, None)
        try:
            await self.engine.request("DELETE", f"/containers/{cid}", params={"force": "1", "v": "1"})
        except EngineError as err:
            if err.status != 404:
                log.warning("removing container %s: %s", cid[:12], err)

    async def close(self) -> None:
        """Stop following the containers (they keep running: a restarted kubelet adopts them)."""
        if self._removals:
            await asyncio.wait(self._removals, timeout=10)
        tasks = [t for c in self._containers.values() for t in (c._logs, c._waiter) if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.engine.close()


def _seconds(timestamp: str) -> str:
    """``2024-01-02T03:04:05.123456789Z`` → ``2024-01-02T03:04:05Z`` (status times are whole seconds)."""
    return timestamp[:19] + "Z" if len(timestamp) >= 19 and not timestamp.startswith("0001") else \
        now_rfc3339()
