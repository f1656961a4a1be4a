"""The process runtime: each container is a real OS process in its own process group, under a shim.

A container's command line follows Kubernetes' rule over its image's ENTRYPOINT and CMD (``images.CATALOG``); it
runs with the pod's environment in its own working directory. Like containerd, the runtime does not hold the
container itself: ``shim.py`` is its parent, writes its stdout/stderr to the per-container log in the CRI format
(``<time> <stream> F <text>``, so logs can be served with or without timestamps) and records its exit status.
Each container instance has a state directory ``<root-dir>/containers/<id>/``:

    meta.json  written before the start: pod UID/namespace/name, container name, restart count, last state,
               image, working directory, log path, start time (the CRI's labels and annotations)
    pid.json   written by the shim: the container's pid and shim's pid, each with its start time in clock ticks
    attach.sock the shim's attach socket while the container runs (``kubectl attach``: its stdin, output, tty)
    exit.json  written by the shim when the container exits: exit code (negative: the signal) and finishedAt

so a restarted kubelet (``recover``) finds every container again: running ones are kept (a pid is only trusted
with its recorded start time, so a reused pid is never adopted), those that exited while it was down are
reported with their exit code, and those that vanished without a trace (the shim was killed too) as unknown.
Only the newest instance of a container is kept; a pod's directories go when the kubelet forgets the pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apimachinery.meta import now_rfc3339

from .. import images
from .cri import ContainerMeta
from .reaper import Reaper
from .shim import ATTACH_SOCKET

if TYPE_CHECKING:
    from .cri import Container, ExecTarget

log = logging.getLogger(__name__)

SHIM = Path(__file__).with_name("shim.py")
# The runtime's name in ``containerID`` (``process://<id>``) and the node's ``containerRuntimeVersion``,
# as ``containerd://…`` names containerd's containers.
RUNTIME_NAME = "process"
UNKNOWN_EXIT_CODE = 137  # a container that vanished: kubelet's ContainerStatusUnknown reports 137
MAX_TERMINATION_MESSAGE = 4096  # the kubelet's maxMessageLength
POLL_SECONDS = 0.5  # how often an adopted container is checked where pidfd_open is not available

# Kept for callers that predate images.py: image name → (ENTRYPOINT, CMD).
IMAGES: dict[str, tuple[list[str], list[str]]] = {name: (c.entrypoint, c.cmd) for name, c in images.CATALOG.items()}


def image_name(image: str) -> str:
    """``docker.io/library/busybox:1.36`` → ``busybox`` (the catalog entry the reference means)."""
    return images.parse_reference(image).catalog_key


def container_argv(container: dict[str, Any]) -> list[str]:
    """Kubernetes' rule over the image's ENTRYPOINT and CMD (``images.command_line``), run by this machine's
    Python where the image is ``python``."""
    argv = images.command_line(container)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable  # the "python" image is this machine's interpreter
    return argv


def stdio_flags(container: dict[str, Any]) -> str:
    """What the shim gives the container (``shim.main``'s ``stdio``): an open stdin (``stdin: true``), closed when
    the first attached client's stdin ends (``stdinOnce``), a pseudo-terminal (``tty``)."""
    return ",".join(flag for flag in ("stdin", "stdinOnce", "tty") if container.get(flag))


def start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks since boot), or ``None`` if there is no such live process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2:].split()
    if fields[0] in (b"Z", b"X"):
        return None  # a zombie has exited: nobody reaped it yet
    return int(fields[19])


@dataclass
class ContainerProcess:
    """One container instance: running, or exited (``wait`` returns its exit code; negative: killed by that signal).

    ``exit_known`` is False for a container that vanished while the kubelet was down without its shim recording
    the exit (then ``wait`` returns 137, as kubelet's ContainerStatusUnknown)."""

    name: str
    id: str
    pid: int
    started_at: str
    log_path: Path
    dir: Path
    meta: ContainerMeta = field(default_factory=ContainerMeta)
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    shim_pid: int = 0
    exit_known: bool = True
    runtime_name: str = RUNTIME_NAME
    _code: int | None = None
    _waiter: asyncio.Task[int] | None = None

    @property
    def container_id(self) -> str:
        """The instance as a pod status names it: ``process://<id>``."""
        return f"{self.runtime_name}://{self.id}"

    @property
    def returncode(self) -> int | None:
        return self._code

    @property
    def message(self) -> str | None:
        """The linux runtime's ``termination-log`` (the container's /dev/termination-log), at most 4096 bytes as
        the kubelet reads it; the process runtime has none."""
        try:
            with open(self.dir / "termination-log", "rb") as f:
                return f.read(MAX_TERMINATION_MESSAGE).decode(errors="replace") or None
        except OSError:
            return None

    @property
    def reason(self) -> str | None:
        """What the shim recorded beyond the exit code (``OOMKilled``)."""
        try:
            return json.loads((self.dir / "exit.json").read_text()).get("reason") or None
        except (OSError, ValueError):
            return None

    async def wait(self) -> int:
        """The exit code once the container exited (safe to call from several tasks, and to cancel)."""
        if self._code is not None:
            return self._code
        if self._waiter is None:
            self._waiter = asyncio.ensure_future(self._wait())
        return await asyncio.shield(self._waiter)

    async def _wait(self) -> int:
        # The shim is the zygote's child (or an adopted one's orphan), never ours: a pidfd tells when it is gone.
        await _wait_gone(self.shim_pid if self.shim_pid and _alive(self.shim_pid, self.dir) else self.pid)
        self._code = self._read_exit()
        return self._code

    def _read_exit(self) -> int:
        try:
            return int(json.loads((self.dir / "exit.json").read_text())["exitCode"])
        except (OSError, ValueError, KeyError):
            self.exit_known = False
            return UNKNOWN_EXIT_CODE

    @property
    def finished_at(self) -> str | None:
        try:
            return str(json.loads((self.dir / "exit.json").read_text())["finishedAt"])
        except (OSError, ValueError, KeyError):
            return None


def _alive(pid: int, state_dir: Path) -> bool:
    try:
        recorded = json.loads((state_dir / "pid.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(start_ticks(pid) == (recorded["shimStart"] if pid == recorded["shim"] else recorded["start"]))


async def _wait_gone(pid: int) -> None:
    """Wait for a process that is not our child to end: a pidfd becomes readable when it exits."""
    loop = asyncio.get_running_loop()
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        while start_ticks(pid) is not None:
            await asyncio.sleep(POLL_SECONDS)
        return
    gone: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not gone.done():
            gone.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await gone
    finally:
        loop.remove_reader(fd)
        os.close(fd)


class ShimZygote:
    """The kubelet's end of ``shim.py --zygote``: one warm interpreter that forks each container's shim, so a
    container start costs a fork instead of an interpreter start (~10 ms of CPU, which 100 pod starts on 2 cores
    felt). Started on first use and again if it died; it reads the kubelet's requests on stdin and ends when they
    end (the kubelet went away), once its shims are done. The shims are its children, not the kubelet's: the
    kubelet waits for them as for adopted ones (``_wait_gone``)."""

    REPLY_SECONDS = 30.0  # a shim that has not answered by then has failed (its shim.log says why)

    def __init__(self, preload: bool = False) -> None:
        self.preload = preload  # the linux runtime's: its shims fork with the container set-up loaded
        self._proc: asyncio.subprocess.Process | None = None
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self, state: Path, cwd: Path, log_path: Path, argv: list[str],
                    env: dict[str, str], stdio: str = "") -> dict[str, Any]:
        """Have a shim start ``argv`` (``stdio``: see ``stdio_flags``); its answer: ``{"pid", "shim"}``, or
        ``{"error", "errno"}``."""
        fields = [str(cwd), str(log_path), stdio, str(len(argv)), *argv, *(f"{k}={v}" for k, v in env.items())]
        (state / "spec").write_bytes(b"\0".join(os.fsencode(f) for f in fields))
        return await self._request(state, os.fsencode(str(state)))

    async def warm_up(self) -> None:
        """Start the zygote now rather than on the first container's start (an interpreter start: ~30 ms, and
        several times that while a burst of pods keeps the cores busy)."""
        with contextlib.suppress(OSError):
            await self._running()

    async def pause(self, state: Path) -> dict[str, Any]:
        """Have the zygote fork a pod's pause process (``shim.fork_pause``, from ``state/config.json``): its
        answer is ``{"pid"}`` or ``{"error"}``."""
        return await self._request(state, b"pause " + os.fsencode(str(state)))

    async def _request(self, state: Path, line: bytes) -> dict[str, Any]:
        key = str(state)
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        try:
            proc = await self._running()
            replies = self._replies  # this zygote's, registered before the request goes out
            replies[key] = reply
            assert proc.stdin is not None
            proc.stdin.write(line + b"\n")
            await proc.stdin.drain()
            async with asyncio.timeout(self.REPLY_SECONDS):
                return await reply
        except (OSError, TimeoutError) as err:
            try:
                why = (state / "shim.log").read_text()[-500:]
            except OSError:
                why = ""
            return {"error": f"the container shim failed: {why or err}", "errno": 0}
        finally:
            replies.pop(key, None)

    async def _running(self) -> asyncio.subprocess.Process:
        loop = asyncio.get_running_loop()
        if self._proc is None or self._proc.returncode is not None or self._loop is not loop:
            self._loop = loop  # a zygote's pipes belong to the loop that started it
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-I", "-S", str(SHIM), "--zygote", *(["linux"] if self.preload else []), env={},
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, start_new_session=True)
            self._replies = {}  # a zygote that died fails only its own callers
            self._reader = asyncio.create_task(self._read(self._proc, self._replies), name="shim zygote replies")
        return self._proc

    @staticmethod
    async def _read(proc: asyncio.subprocess.Process, replies: dict[str, asyncio.Future[dict[str, Any]]]) -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            waiting = replies.get(answer.get("dir", ""))
            if waiting is not None and not waiting.done():
                waiting.set_result(answer)
        for waiting in replies.values():  # the zygote died: nobody will answer these
            if not waiting.done():
                waiting.set_exception(OSError(0, "the shim zygote exited"))


class ProcessRuntime:
    """Starts, stops, finds again and removes container processes; knows nothing of pods beyond ``ContainerMeta``.
    (A ``cri.Runtime``.)"""

    bind_mounts = False  # containers see volumes through links in their directory, paths rewritten (volumes.py)
    pod_ips = True  # each pod binds its own IP of the node's podCIDR (podips.py)
    sandbox_files = False  # host processes: the host's /etc/hosts and resolv.conf
    isolated_network = False  # host processes: the node's network
    name = RUNTIME_NAME
    preload = False  # the shim zygote loads the linux runtime's set-up code (``isolate``)

    def __init__(self, root: Path | None = None) -> None:
        self.root = root  # <root-dir>/containers; None: a throw-away directory per container (no recovery)
        # State directories by (pod UID, container name), so a start looks only at its own container's older
        # instances instead of reading every container's meta.json (quadratic in a burst of pod starts).
        self._instances: dict[tuple[str, str], list[Path]] = {}
        self._zygote = ShimZygote(self.preload)
        trash = root.parent / "trash" if root is not None else Path(os.environ.get("TMPDIR", "/tmp")) / "kubelab-trash"
        self._reaper = Reaper(trash)  # <root-dir>/trash: what deleted pods left, removed off the event loop

    def _new_dir(self) -> tuple[str, Path]:
        cid = secrets.token_hex(32)
        base = self.root if self.root is not None else Path(os.environ.get("TMPDIR", "/tmp")) / "kubelab-containers"
        path = base / cid
        path.mkdir(parents=True)
        return cid, path

    async def warm_up(self) -> None:
        await self._zygote.warm_up()

    async def start(self, container: dict[str, Any], workdir: Path, env: dict[str, str], log_path: Path,
                    meta: ContainerMeta | None = None) -> ContainerProcess:
        """Start the container under a shim; raises ``FileNotFoundError``/``OSError`` if it cannot be executed."""
        meta = meta or ContainerMeta()
        image = await self._image(container)
        argv, cwd, env = self._command(container, workdir, env, meta, image)
        if not argv:
            raise RuntimeError(f'image "{container.get("image")}" has no entrypoint: set command')
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._remove_instances(meta, container["name"])
        cid, state = self._new_dir()
        if meta.pod_uid:
            self._instances.setdefault((meta.pod_uid, container["name"]), []).append(state)
        started_at = now_rfc3339()
        (state / "meta.json").write_text(json.dumps({
            "id": cid, "name": container["name"], "image": container.get("image", ""), "startedAt": started_at,
            "cwd": str(cwd), "logPath": str(log_path), "env": env, **asdict(meta)}))
        try:
            await self._configure(state, cid, container, workdir, meta, image)
            reply = await self._zygote.start(state, cwd, log_path, argv, env, stdio_flags(container))
        except BaseException:
            self._discard(state, cid, meta)
            raise
        if "pid" not in reply:
            self._discard(state, cid, meta)
            if reply.get("errno") == 2:
                raise FileNotFoundError(2, f'exec: "{argv[0]}": executable file not found in $PATH')
            raise OSError(reply.get("errno") or 0, f'exec: "{argv[0]}": {reply["error"]}')
        return ContainerProcess(container["name"], cid, int(reply["pid"]), started_at, log_path, state, meta,
                                cwd, env, shim_pid=int(reply["shim"]), runtime_name=self.name)

    async def _image(self, container: dict[str, Any]) -> Any:
        """What ``_command`` and ``_configure`` need of the container's image, looked up once per start (the
        process runtime: nothing)."""
        return None

    def _command(self, container: dict[str, Any], workdir: Path, env: dict[str, str],
                 meta: ContainerMeta, image: Any) -> tuple[list[str], Path, dict[str, str]]:
        """What the shim runs: argv, its working directory on the host, its environment."""
        cwd = workdir / container["workingDir"].lstrip("/") if container.get("workingDir") else workdir
        cwd.mkdir(parents=True, exist_ok=True)
        return container_argv(container), cwd, env

    async def _configure(self, state: Path, cid: str, container: dict[str, Any], workdir: Path,
                         meta: ContainerMeta, image: Any) -> None:
        """Anything the container needs besides its process (the process runtime: nothing)."""

    def _discard(self, state: Path, cid: str, meta: ContainerMeta) -> None:
        """Forget a container that did not start."""
        shutil.rmtree(state, ignore_errors=True)

    async def stop(self, cp: Container, grace: float) -> int:
        """SIGTERM to the container's process group, SIGKILL after ``grace`` seconds; returns the exit code."""
        assert isinstance(cp, ContainerProcess)
        if cp.returncode is None and start_ticks(cp.pid) is not None:
            _signal_group(cp.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(cp.wait(), max(grace, 0))
            except TimeoutError:
                _signal_group(cp.pid, signal.SIGKILL)
        return await cp.wait()

    def exec_target(self, container: Container, target: ExecTarget) -> ExecTarget:
        """There is no container to enter: exec runs a process with the container's environment (``target``)."""
        return target

    def attach_socket(self, container: Container) -> Path | None:
        """The shim's attach socket (``shim.Attachments``): in the state directory, so it outlives the kubelet."""
        assert isinstance(container, ContainerProcess)
        return container.dir / ATTACH_SOCKET

    def shutdown(self) -> None:
        """The kubelet stops, its pod workers have stopped their containers: kill any still running (one whose
        start raced the stop, which no worker knew of yet), so a stopped kubelet leaves no container behind
        (``leftovers``)."""
        for state in self._dirs():
            cp = _load(state, self.name)
            if cp is not None and cp.returncode is None and start_ticks(cp.pid) is not None:
                log.info("killing container %s of pod %s: the kubelet stops", cp.name, cp.meta.pod_uid)
                _signal_group(cp.pid, signal.SIGKILL)
        self._reaper.drain()

    # --- finding containers again -----------------------------------------------------------------------------
    def recover(self) -> list[ContainerProcess]:
        """Every container this runtime recorded: running ones adopted, exited ones with their exit code."""
        found = []
        if self._reaper.trash.is_dir():  # what a killed kubelet had not finished removing
            self._reaper.remove_tree(self._reaper.trash)
        for state in self._dirs():
            cp = _load(state, self.name)
            if cp is None:
                shutil.rmtree(state, ignore_errors=True)  # never started (the kubelet died while starting it)
            else:
                found.append(cp)
                if cp.meta.pod_uid:
                    self._instances.setdefault((cp.meta.pod_uid, cp.name), []).append(state)
        return found

    def _dirs(self) -> Iterator[Path]:
        if self.root is None or not self.root.is_dir():
            return iter(())
        return (p for p in self.root.iterdir() if p.is_dir())

    def _remove_instances(self, meta: ContainerMeta, name: str) -> None:
        """Only the newest instance of a container is kept: drop the exited older ones."""
        instances = self._instances.get((meta.pod_uid, name)) if meta.pod_uid else None
        for state in list(instances or ()):
            if (state / "exit.json").exists() or not state.is_dir():
                shutil.rmtree(state, ignore_errors=True)
                instances.remove(state)  # type: ignore[union-attr]

    def remove_pods(self, keep: set[str]) -> list[str]:
        """Remove the state of every pod not in ``keep`` (SIGKILL what still runs); returns their UIDs."""
        removed = []
        for state in self._dirs():
            try:
                uid = json.loads((state / "meta.json").read_text()).get("pod_uid", "")
            except (OSError, ValueError):
                continue  # being created
            if uid in keep:
                continue
            cp = _load(state, self.name)
            if cp is not None and cp.returncode is None and start_ticks(cp.pid) is not None:
                log.info("killing container %s of pod %s: its pod is gone", cp.name, uid)
                _signal_group(cp.pid, signal.SIGKILL)
            self._reaper.remove_tree(state)
            removed.append(uid)
        for key in [k for k in self._instances if k[0] in removed]:
            del self._instances[key]
        return removed


def _load(state: Path, runtime_name: str = RUNTIME_NAME) -> ContainerProcess | None:
    try:
        meta = json.loads((state / "meta.json").read_text())
        pids = json.loads((state / "pid.json").read_text())
    except (OSError, ValueError):
        return None
    labels = ContainerMeta(meta.get("pod_uid", ""), meta.get("pod_namespace", ""), meta.get("pod_name", ""),
                           int(meta.get("restart_count", 0)), meta.get("last_state"))
    cp = ContainerProcess(meta["name"], meta["id"], int(pids["pid"]), meta["startedAt"], Path(meta["logPath"]),
                          state, labels, Path(meta["cwd"]), dict(meta.get("env") or {}), shim_pid=int(pids["shim"]),
                          runtime_name=runtime_name)
    if (state / "exit.json").exists():
        cp._code = cp._read_exit()
    elif start_ticks(cp.pid) != pids["start"] and start_ticks(cp.shim_pid) != pids["shimStart"]:
        cp._code = cp._read_exit()  # gone, and nobody recorded how: unknown (137)
    return cp


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
