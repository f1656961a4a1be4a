"""Spawn, watch and stop component processes: one OS process per component, each its own group.

Why process groups: a component may start children (the kubelet runs containers as processes), and
Ctrl-C in the launcher's terminal must not reach them directly — the launcher stops them in reverse
order instead (SIGTERM to the group, then SIGKILL after a timeout). Stopping works from a pid alone, so
`kubelab down` can stop what a detached `kubelab up` left running; the recorded start time guards
against signalling an unrelated process that reused the pid.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ExitStatus",
    "Spawned",
    "ancestors",
    "descendants",
    "first_error",
    "group_members",
    "log_excerpt",
    "loopback_client",
    "pid_alive",
    "process_start_time",
    "spawn",
    "stop_group",
    "stop_groups",
    "tail",
]


REAP_TIMEOUT = 1.0  # seconds a stopped child may still take to exit before ``Spawned.reap`` SIGKILLs it


@dataclass(frozen=True)
class ExitStatus:
    """How a process ended: its exit code, or the signal that killed it (neither: unknown, it was not our child)."""

    code: int | None = None
    signal: int | None = None

    @classmethod
    def from_wait(cls, status: int) -> ExitStatus:
        """From ``os.waitpid``'s raw status."""
        if os.WIFSIGNALED(status):
            return cls(signal=os.WTERMSIG(status))
        return cls(code=os.waitstatus_to_exitcode(status))

    @property
    def returncode(self) -> int:
        """As ``Popen.returncode``: the exit code, or minus the signal (0 when unknown)."""
        return -self.signal if self.signal is not None else (self.code or 0)

    @property
    def signal_name(self) -> str | None:
        if self.signal is None:
            return None
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    def describe(self) -> str:
        """``exit code 1``, ``signal SIGKILL`` or ``unknown status``, for log lines."""
        if self.signal is not None:
            return f"signal {self.signal_name}"
        if self.code is not None:
            return f"exit code {self.code}"
        return "unknown status"


class Spawned:
    """A component process we started (or adopted as our child): its pid, log file and when it started.

    Its exit status is collected with ``os.waitpid`` by pid, so a child started elsewhere in this process (etcd,
    which ``EtcdServer`` starts) is watched the same way; a Popen we own is told the status, so it never reaps
    the pid again.
    """

    def __init__(
        self, name: str, pid: int, log_path: Path, popen: subprocess.Popen[bytes] | None = None
    ) -> None:
        self.name = name
        self.pid = pid
        self.popen = popen
        self.log_path = log_path
        self.started_at = time.time()
        self.start_time = process_start_time(pid)
        self.status: ExitStatus | None = None

    def poll(self) -> ExitStatus | None:
        """None while running; how it ended once it has (reaping it)."""
        if self.status is not None:
            return self.status
        try:
            pid, raw = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # not (or no longer) our child: it ran out of sight
            if pid_alive(self.pid, self.start_time):
                return None
            self.status = ExitStatus()
        else:
            if pid == 0:
                return None
            self.status = ExitStatus.from_wait(raw)
        if self.popen is not None:
            self.popen.returncode = self.status.returncode
        return self.status

    def exit_code(self) -> int | None:
        """None while running, else the exit code (negative: the signal), as ``Popen.poll``."""
        status = self.poll()
        return None if status is None else status.returncode

    def reap(self, timeout: float = REAP_TIMEOUT) -> ExitStatus | None:
        """How it ended, waiting up to ``timeout`` seconds; a child of ours (``popen``) still running then is
        SIGKILLed and waited for, so once its group was stopped no process we started is left unwaited for (Python
        says "subprocess N is still running" when a Popen is dropped so). Only our own child is signalled by pid:
        its pid cannot be reused before we reap it. None: another's process, still running."""
        deadline = time.monotonic() + timeout
        while (status := self.poll()) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if status is None and self.popen is not None:
            self.popen.kill()
            code = self.popen.wait()
            self.status = status = ExitStatus(signal=-code) if code < 0 else ExitStatus(code=code)
        return status


def spawn(
    name: str,
    argv: Sequence[str],
    log_path: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Spawned:
    """Start argv in a new session (own process group), stdout+stderr appended to log_path."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"\n==> {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(argv)}\n".encode())
        log.flush()
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            cwd=cwd,
        )
    return Spawned(name, popen.pid, log_path, popen)


def _stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (field 3 onwards), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after its last ')'.
    return stat[stat.rfind(")") + 2 :].split()


def _all_stats() -> dict[int, list[str]]:
    """Every process's stat fields, by pid."""
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(entry)) is not None:
            stats[int(entry)] = fields
    return stats


def process_start_time(pid: int) -> int | None:
    """The kernel's start time of pid in clock ticks since boot (Linux), None when unknown."""
    fields = _stat(pid)
    return int(fields[19]) if fields else None  # field 22 overall


def ancestors(pid: int | None = None) -> set[int]:
    """The parent of pid (default: this process), its parent's parent, ... up to init (Linux: /proc)."""
    found: set[int] = set()
    fields = _stat(pid or os.getpid())
    while fields is not None and (parent := int(fields[1])) > 1 and parent not in found:
        found.add(parent)
        fields = _stat(parent)
    return found


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group pgid, found through /proc (Linux)."""
    return [pid for pid, fields in _all_stats().items() if fields[0] != "Z" and int(fields[2]) == pgid]


def descendants(pid: int) -> dict[int, int | None]:
    """Every live process below pid (its children, theirs ...), each with its start time, through /proc (Linux)."""
    children: dict[int, list[int]] = {}
    stats = _all_stats()
    for child, fields in stats.items():
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(child)
    found: dict[int, int | None] = {}
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found[child] = int(stats[child][19])
        todo.extend(children.get(child, []))
    return found


def _is_zombie(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] == "Z"


def pid_alive(pid: int | None, start_time: int | None = None) -> bool:
    """True if pid runs and, when start_time is given, is still the process that was recorded."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if _is_zombie(pid):
        return False
    if start_time is not None:
        now = process_start_time(pid)
        if now is not None and now != start_time:
            return False
    return True


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _reap(pid: int) -> None:
    """Collect our own exited child so it does not linger as a zombie (no-op for others)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop_group(pid: int, start_time: int | None = None, timeout: float = 10.0) -> bool:
    """SIGTERM pid's process group, SIGKILL it after timeout; True if it was running."""
    return bool(stop_groups([(pid, start_time)], timeout))


def stop_groups(targets: Sequence[tuple[int, int | None]], timeout: float = 10.0) -> list[int]:
    """Stop several process groups at once (SIGTERM all, wait, SIGKILL stragglers).

    Each target is (pid of the group leader, its recorded start time or None). A pid whose start
    time no longer matches belongs to someone else and is left alone. Returns the pids that were
    running and got stopped. Only groups still ours are signalled (``_Group``): once a leader is
    reaped its pid may be reused, so its group is signalled through pidfds of processes proven to be in it.
    """
    running: list[int] = []
    groups: list[_Group] = []
    for pid, start_time in targets:
        if pid_alive(pid, start_time):
            group = _Group.of(pid, start_time)
            if group is None:
                continue  # gone (or reused) since
            running.append(pid)
            groups.append(group)
            group.signal(signal.SIGTERM)
            group.signal(signal.SIGCONT)  # a stopped process (kill -STOP) handles SIGTERM only once resumed
        elif not _pid_exists(pid):
            # The leader is gone, but children it started may still hold its group id; no other
            # process can have that id while they live, so killing the group is safe.
            _killpg(pid, signal.SIGKILL)
            _reap(pid)
    try:
        deadline = time.monotonic() + timeout
        pending = list(groups)
        while pending and time.monotonic() < deadline:
            for group in pending:
                _reap(group.pgid)
            pending = [group for group in pending if group.leader_alive()]
            if pending:
                time.sleep(0.05)
        for group in groups:
            group.signal(signal.SIGKILL)  # stragglers, and anything a leader started and left behind
        # SIGKILL is delivered asynchronously: wait (briefly) until each group is really empty.
        kill_deadline = time.monotonic() + 5.0
        pending = list(groups)
        while pending and time.monotonic() < kill_deadline:
            for group in pending:
                _reap(group.pgid)
            pending = [group for group in pending if group.signal(0)]
            if pending:
                time.sleep(0.02)
    finally:
        for group in groups:
            group.close()
    return running


class _Group:
    """A process group being stopped, and the processes proven to be in it (by pidfd, Linux 5.3+).

    Its id stays ours while any process known to be in it is unreaped (a zombie still holds its ids); a
    process found in the group then is ours too. Signals go to each known process's pidfd, never to the
    number: a reaped leader's pid (and so its group id) may already name a new session of someone else's.
    Without pidfds, the group is signalled by number while its leader is the recorded process.
    """

    def __init__(self, pgid: int, start_time: int | None, leader_fd: int | None) -> None:
        self.pgid, self.start_time = pgid, start_time
        self.fds: dict[int, int] = {} if leader_fd is None else {pgid: leader_fd}

    @classmethod
    def of(cls, pid: int, start_time: int | None) -> _Group | None:
        """The group pid leads, if pid is still the recorded process (checked after its pidfd is open)."""
        try:
            fd = os.pidfd_open(pid)
        except (AttributeError, OSError) as err:
            if isinstance(err, ProcessLookupError):
                return None
            return cls(pid, start_time, None)  # no pidfds here
        if not pid_alive(pid, start_time):
            os.close(fd)
            return None
        return cls(pid, start_time, fd)

    def _held(self) -> bool:
        """Whether a process known to be in the group is still unreaped: the group id is then still ours."""
        return any(_pidfd_signal(fd, 0) for fd in self.fds.values())

    def leader_alive(self) -> bool:
        if not self.fds:
            return pid_alive(self.pgid, self.start_time)
        fd = self.fds.get(self.pgid)
        return fd is not None and _pidfd_signal(fd, 0) and not _is_zombie(self.pgid)

    def signal(self, sig: int) -> bool:
        """Send sig (0: none) to every process of the group still ours; False when none is left."""
        if not self.fds:  # no pidfds: by number, while the leader is the recorded process
            if not pid_alive(self.pgid, self.start_time):
                return False
            if sig:
                _killpg(self.pgid, signal.Signals(sig))
            return True
        if not self._held():
            return False
        for pid in group_members(self.pgid):
            if pid in self.fds and _pidfd_signal(self.fds[pid], 0):
                continue
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            fields = _stat(pid)
            if fields is not None and int(fields[2]) == self.pgid and self._held():  # in the group, which was ours
                if pid in self.fds:
                    os.close(self.fds[pid])
                self.fds[pid] = fd
            else:
                os.close(fd)
        alive = False
        for pid, fd in self.fds.items():  # (a zombie counts as gone, as in pid_alive)
            alive = (_pidfd_signal(fd, sig) and not _is_zombie(pid)) or alive
        return alive

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


def _pidfd_signal(fd: int, sig: int) -> bool:
    """Signal the process behind a pidfd; False when it has been reaped."""
    try:
        signal.pidfd_send_signal(fd, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _killpg(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def loopback_client(timeout: float, base_url: str = "", keepalive: bool = True) -> httpx.Client:
    """An HTTP client for the plain-HTTP endpoints of the cluster's own processes on 127.0.0.1 (health checks, the
    apiserver's insecure port). No TLS context and no proxy settings from the environment: httpx's default client
    loads the CA bundle, which costs 20-50 ms of CPU on a quiet machine and 0.6 s on a busy one, and the launcher
    made one per health probe; a proxy from ``$HTTP_PROXY`` has no business with loopback. ``keepalive`` False: a
    connection per request, none left open by a client kept for the process's life."""
    import httpx  # here, not at the top: the zygote imports this module and does not need httpx, whose import
    # (with the rich and click that httpx's CLI imports) cost it ~0.1 s before its first fork

    limits = httpx.Limits() if keepalive else httpx.Limits(max_keepalive_connections=0)
    return httpx.Client(base_url=base_url, timeout=timeout, verify=False, trust_env=False, limits=limits)


def tail(path: Path, lines: int = 20) -> str:
    """The last lines of a log, for error messages."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def first_error(path: Path, offset: int = 0) -> str | None:
    """The first ERROR or CRITICAL line the run that began at ``offset`` wrote to its log (the log format of
    ``apimachinery.process``; uvicorn logs a failed bind so)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return None
    return next((line for line in text.splitlines() if " ERROR " in line or " CRITICAL " in line), None)


def log_excerpt(path: Path, offset: int = 0) -> str:
    """What an error message about a component that failed shows of its log: the first error of its run that
    began at ``offset`` (a failed bind is logged before a shutdown that fills the tail), then the last lines."""
    error = first_error(path, offset)
    return f"{f'its first error: {error}; ' if error else ''}last lines of {path}:\n{tail(path)}"
