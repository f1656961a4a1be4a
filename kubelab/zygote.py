"""A pre-imported fork server ("zygote") for the library's components: imports paid once per Python process.

Why: a component is a fresh Python process, and its imports (Starlette, uvicorn, aiohttp, grpc, the apiserver's
registry) cost about a second of CPU each; a cluster of etcd, an apiserver, a controller-manager, a scheduler,
a DNS server and three kubelets paid that seven times on every start, more than the whole start-up target of
``kubelab.Cluster`` (issue #22: ≤ 2 s with 3 Nodes Ready, ≤ 0.5 s for an apiserver alone). The zygote is one
Python process that has imported the components' modules — only imported: no event loop, thread, socket or gRPC
channel exists in it (``_preload`` checks there is one thread; OpenBLAS is told to start none) — and forks a
component on request. The child makes itself what ``process.spawn`` would have started: its own session (so it
is stopped by process group as before), stdout and stderr appended to its log, stdin ``/dev/null``, its own
argv, environment and working directory, its command line as the process title (``setproctitle``: ``ps`` shows
``…/python -m apiserver --insecure-port …``), then the component's ``__main__`` as ``python -m`` runs it.

Who uses which: ``kubelab.Cluster`` (tests, scripts, the pytest plugin) spawns through the zygote, which starts
on its first use and serves every later cluster of the same Python process, so a pytest session pays the imports
once; it exits when that process does (its end of the socket closes). `kubelab up` forks its components from a
zygote of its own too (its supervisor's, writing to ``<data-dir>/logs/zygote.log``): one import of everything
instead of one per component on two cores (`kubelab up --detach --nodes 3`: up in 9.0 s against 14.9 s with fresh
interpreters, same minute, load 3-5), and restarts forked from it as well; `--no-fork-server` spawns fresh
interpreters (``process.spawn``).

The launcher still sees each component's real pid (``ZygoteChild``): the zygote is the parent, reaps its
children and sends each exit status over the socket, so the supervisor restarts what exits and says how it ended
as it does for ``process.Spawned``.

Protocol (a Unix socket pair, one JSON object per line): the launcher sends ``{"argv", "env", "cwd", "log"}``;
the zygote answers ``{"pid": N}`` (or ``{"error": "..."}``), and sends ``{"exit": N, "status": raw}`` whenever a
child ends — always after that child's ``pid``, so a reused pid cannot be confused with its predecessor.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from apimachinery.gcpolicy import freeze_for_fork
from kubelab import interrupts, process
from kubelab.components import COMPONENTS
from kubelab.supervisor import Unit

__all__ = ["Zygote", "ZygoteChild", "ZygoteError", "shared", "spawn_component", "spawn_unit"]

# What a component's ``python -m`` imports before its main runs; ``controllers.__main__`` runs main on import,
# so its CLI module stands in for it.
# pyroute2: the kubelet's bridge network imports it on first use (``kubelet.network``).
PRELOAD = ("apiserver.__main__", "controllers.cli", "scheduler.__main__", "kubelet.__main__", "clusterdns.__main__",
           "pyroute2")
# Caches that are pure functions of the code, built once here instead of in every apiserver: the OpenAPI documents'
# encodings (``apiserver.openapi.documents``: ~0.08 s of CPU reading them from their disk cache, ~0.8 s the first
# time, when they are built and written there; no thread).
WARM = ("apiserver.openapi.documents:preload",)
FORKED_PACKAGES = frozenset(c.package for c in COMPONENTS.values())  # ``-m`` packages the zygote may run
TITLE = "kubelab zygote (fork server of the cluster's components)"


class ZygoteError(RuntimeError):
    """The zygote is gone or refused a spawn."""


class ZygoteChild(process.Spawned):
    """A component forked by the zygote: a real process of its own, whose exit status the zygote reports."""

    def __init__(self, zygote: Zygote, name: str, pid: int, log_path: Path) -> None:
        super().__init__(name, pid, log_path)
        self._zygote = zygote

    def poll(self) -> process.ExitStatus | None:
        if self.status is None:
            self._zygote.pump()
        if self.status is None and self._zygote.closed and not process.pid_alive(self.pid, self.start_time):
            self.status = process.ExitStatus()  # the zygote went first: the exit happened out of sight
        return self.status

    def reap(self, timeout: float = process.REAP_TIMEOUT) -> process.ExitStatus | None:
        """As ``Spawned.reap``: a child still running after ``timeout`` is SIGKILLed (the start time guards the
        pid) and its status awaited."""
        status = super().reap(timeout)
        if status is None and process.pid_alive(self.pid, self.start_time):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            status = super().reap(process.REAP_TIMEOUT)
        return status


class Zygote:
    """The launcher's end: starts the zygote process and asks it for children."""

    def __init__(self, cwd: Path | None = None, log: Path | None = None) -> None:
        """``log``: where the zygote's own output goes (None: the launcher's stdout and stderr). A detached
        supervisor must give one: a zygote holding the launcher's output pipe would keep `kubelab up --detach`
        waiting for its end."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = {**os.environ, "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
        output = None
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            output = open(log, "ab")  # noqa: SIM115 (the child's from here on; ours is closed below)
        try:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "kubelab.zygote", str(theirs.fileno())],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT if output is not None else None,
                pass_fds=[theirs.fileno()],
                start_new_session=True,  # the terminal's Ctrl-C is the launcher's to handle, as for the components
                env=env,
                cwd=cwd,
            )
        finally:
            if output is not None:
                output.close()
        theirs.close()
        self.pid = self.popen.pid
        self._sock = ours
        self._buffer = b""
        self._children: dict[int, ZygoteChild] = {}
        self._lock = threading.RLock()
        self.closed = False
        self.ready = False  # its imports are done: a spawn is answered in milliseconds

    def spawn(self, name: str, argv: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None,
              cwd: Path | None = None) -> ZygoteChild:
        """As ``process.spawn`` for ``python -m <component>``: a new session, output appended to ``log_path``."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            log.write(f"\n==> {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(argv)}\n".encode())
        request = {"argv": list(argv), "env": {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
                   "cwd": str(cwd) if cwd is not None else _cwd(), "log": str(log_path)}
        with self._lock:
            if self.closed:
                raise ZygoteError("the zygote has exited")
            with interrupts.interruptible():  # nothing is started while the zygote still imports
                self._wait_ready()
            try:
                self._sock.sendall(json.dumps(request).encode() + b"\n")
            except OSError as err:
                self._close()
                raise ZygoteError(f"the zygote has exited: {err}") from None
            while True:
                message = self._read(block=True)
                if message is None:
                    raise ZygoteError(f"the zygote exited (status {self.popen.poll()}) before answering")
                if "pid" in message:
                    child = ZygoteChild(self, name, message["pid"], log_path)
                    self._children[child.pid] = child
                    return child
                if "error" in message:
                    raise ZygoteError(message["error"])
                self._handle(message)

    def _wait_ready(self) -> None:
        while not self.ready:
            message = self._read(block=True)
            if message is None:
                raise ZygoteError(f"the zygote exited (status {self.popen.poll()}) before it was ready")
            self._handle(message)

    def pump(self) -> None:
        """Take in the exit reports that have arrived, without waiting."""
        with self._lock:
            while (message := self._read(block=False)) is not None:
                self._handle(message)

    def _handle(self, message: dict[str, Any]) -> None:
        if message.get("ready"):
            self.ready = True
            return
        child = self._children.pop(message["exit"], None)
        if child is not None and child.status is None:
            child.status = process.ExitStatus.from_wait(message["status"])

    def _read(self, block: bool) -> dict[str, Any] | None:
        while b"\n" not in self._buffer:
            if self.closed:
                return None
            if not block and not select.select([self._sock], [], [], 0)[0]:
                return None
            try:
                data = self._sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                self._close()
                return None
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message

    def _close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self._sock.close()

    def close(self, timeout: float = 10.0) -> None:
        """Close the socket: the zygote exits (its running children carry on, as a ``kubelab up`` left behind)."""
        with self._lock:
            self._close()
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()

    def alive(self) -> bool:
        return not self.closed and self.popen.poll() is None


def _cwd() -> str | None:
    """The launcher's working directory, which a child started by ``subprocess`` would inherit (None: removed)."""
    try:
        return os.getcwd()
    except OSError:
        return None


_shared: Zygote | None = None
_shared_log: Path | None = None  # the first ``shared(log)``'s: a zygote started again writes there too
_shared_lock = threading.Lock()


def shared(log: Path | None = None) -> Zygote:
    """This process's zygote, started on first use (again if it died), its own output to ``log`` if given (see
    ``Zygote``); closed when the process exits."""
    global _shared, _shared_log
    with _shared_lock:
        _shared_log = log or _shared_log
        if _shared is None or not _shared.alive():
            if _shared is None:
                atexit.register(_close_shared)
            _shared = Zygote(log=_shared_log)
        return _shared


def spawn_unit(unit: Unit) -> process.Spawned:
    """The supervisor's spawner for ``kubelab.Cluster``: ``spawn_component`` for the unit."""
    return spawn_component(unit.name, unit.argv, unit.log, env=unit.env)


def spawn_component(name: str, argv: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None,
                    cwd: Path | None = None) -> process.Spawned:
    """As ``process.spawn``: a component (``python -m <package>`` of the table) through this process's zygote;
    anything else (and everything, should the zygote fail) as a fresh process."""
    if tuple(argv[:2]) == (sys.executable, "-m") and len(argv) > 2 and argv[2] in FORKED_PACKAGES:
        with contextlib.suppress(ZygoteError):
            return shared().spawn(name, argv, log_path, env=env, cwd=cwd)
    return process.spawn(name, argv, log_path, env=env, cwd=cwd)


def _close_shared() -> None:
    if _shared is not None:
        _shared.close()


# ---- the zygote process ------------------------------------------------------------------------------------


def _preload() -> None:
    """Import what the components import, and check that doing so started no thread (fork would lose it)."""
    import importlib

    for module in PRELOAD:
        try:
            importlib.import_module(module)
        except Exception as err:  # noqa: BLE001 - the child imports it again and shows the error in its log
            print(f"kubelab zygote: cannot preload {module}: {err}", file=sys.stderr)
        # run again by runpy in each child: not left in sys.modules, or runpy warns that it was imported before
        if module.endswith(".__main__"):
            sys.modules.pop(module, None)
    for target in WARM:
        module, _, function = target.partition(":")
        try:
            getattr(importlib.import_module(module), function)()
        except Exception as err:  # noqa: BLE001 - each child then builds it itself
            print(f"kubelab zygote: cannot run {target}: {err}", file=sys.stderr)
    freeze_for_fork()
    threads = os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else ["1"]
    if len(threads) != 1 or threading.active_count() != 1:
        print(f"kubelab zygote: {len(threads)} threads after the imports: forking anyway", file=sys.stderr)


def _serve(sock: socket.socket) -> None:
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    buffer = b""
    while True:
        try:
            ready = select.select([sock.fileno(), wake_read], [], [])[0]
        except InterruptedError:
            continue
        if wake_read in ready:
            with contextlib.suppress(BlockingIOError):
                while os.read(wake_read, 512):
                    pass
        _reap_children(sock)
        if sock.fileno() not in ready:
            continue
        data = sock.recv(65536)
        if not data:
            return
        buffer += data
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            request = json.loads(line)
            # the child says when it has its own session: the launcher may stop it by process group at once
            settled_read, settled_write = os.pipe()
            try:
                pid = os.fork()
            except OSError as err:
                os.close(settled_read)
                os.close(settled_write)
                sock.sendall(json.dumps({"error": f"fork: {err}"}).encode() + b"\n")
                continue
            if pid == 0:
                os.close(settled_read)
                _child(request, settled_write, [sock.detach(), wake_read, wake_write])
            os.close(settled_write)
            with contextlib.suppress(InterruptedError):
                os.read(settled_read, 1)  # b"" if it died first: its exit is reported as any other
            os.close(settled_read)
            sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")


def _reap_children(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        with contextlib.suppress(OSError):
            sock.sendall(json.dumps({"exit": pid, "status": status}).encode() + b"\n")


def _child(request: dict[str, Any], settled: int, inherited: list[int]) -> None:
    """In the forked child: become the component's process, run its ``__main__``, exit with its status."""
    code: int = 1
    try:
        os.setsid()
        os.write(settled, b"s")
        os.close(settled)
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in inherited:
            os.close(fd)
        argv: list[str] = request["argv"]
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        _title(" ".join(argv))
        if request["cwd"] is not None:
            os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own stdin, for its lifetime
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - line-buffered, as PYTHONUNBUFFERED
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        if argv[1:2] != ["-m"] or len(argv) < 3:
            raise ValueError(f"the zygote runs only `python -m <package> ...`, not {argv}")
        sys.argv = ["-m", *argv[3:]]
        sys.path[0] = os.getcwd()  # as `python -m` puts the working directory first
        import runpy

        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            code = exit_.code or 0
        else:
            print(exit_.code, file=sys.stderr)
    except KeyboardInterrupt:
        code = 130
    except BaseException:  # noqa: BLE001 - as the interpreter does: the traceback to stderr, exit code 1
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


def _title(title: str) -> None:
    from setproctitle import setproctitle

    setproctitle(title)


def main(argv: list[str]) -> None:
    sock = socket.socket(fileno=int(argv[0]))
    _title(TITLE)
    _preload()
    try:
        sock.sendall(b'{"ready": true}\n')
    except OSError:  # the launcher went away while we imported: nobody to serve
        os._exit(0)
    _serve(sock)
    sys.stderr.flush()
    os._exit(0)  # nothing to tear down: the interpreter's clean-up of ~1400 modules took seconds under load


if __name__ == "__main__":
    main(sys.argv[1:])
