"""Loopback port helpers for the launcher (which ports are taken, the next free ones).

A port is chosen before the component that listens on it has started (its flags name it), so two launchers
choosing at once (``kubelab up`` twice, parallel test workers) could both find 10257 free and one component would
then fail to bind. Every choice here is therefore also a *reservation*: a file named after the port in a per-user
directory under the temporary directory, created atomically and holding the chooser's pid. Another process skips a
port whose reservation is younger than ``RESERVATION_SECONDS`` and whose chooser still runs; by then the component
has bound it (or its chooser has exited), so a cluster started again later gets kube's default ports again.
A reservation held by one of this process's ancestors is this process's to use: the parent chose the port for it
(a test picks ``--secure-port`` with ``free_port()`` and runs ``kubelab up`` with it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import socket
import tempfile
import time
from pathlib import Path

from kubelab.process import ancestors, pid_alive

__all__ = ["RESERVATION_SECONDS", "accepts", "free_port", "free_ports_from", "listening_sockets", "port_in_use",
           "reserve"]

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column
RESERVATION_SECONDS = 120.0  # longer than any component takes to bind the port it was given
LISTENER_PORTS = range(20000, 30000)  # free_port's choices: below Linux's ephemeral ports and the NodePort range


def _reservations() -> Path | None:
    """The directory of this user's port reservations (None where none can be made: then nothing is reserved)."""
    path = Path(tempfile.gettempdir()) / f"kubelab-ports-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    return path


def _held(path: Path, *, fresh: bool = False) -> bool:
    """True while ``path`` is a reservation, made less than RESERVATION_SECONDS ago, that this process may not take:
    another running process's that is not one of this process's ancestors (``fresh``: any running process's, this
    one's included)."""
    try:
        age = time.time() - path.stat().st_mtime
        text = path.read_text()
    except OSError:
        return False  # gone: the exclusive create decides
    if age >= RESERVATION_SECONDS:
        return False
    if not text:
        return True  # just created, its pid not yet written
    try:
        pid = int(text)
    except ValueError:
        return False
    if fresh:
        return pid_alive(pid)
    return pid != os.getpid() and pid_alive(pid) and pid not in ancestors()


def reserve(port: int, *, fresh: bool = False) -> bool:
    """Reserve ``port`` for this process; False when another process holds a live reservation of it (``fresh``:
    also when this process does: a port it chose before is not chosen again for something else).

    The reservation file is created with O_EXCL, and a stale one is renamed away first (a rename of one source
    succeeds once), so of several processes reserving the same port at once exactly one gets it."""
    directory = _reservations()
    if directory is None:
        return True
    path = directory / str(port)
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            if _held(path, fresh=fresh):
                return False
            stale = directory / f"{port}.{os.getpid()}.stale"
            try:
                os.rename(path, stale)
            except FileNotFoundError:
                continue  # another process renamed it just now: try to create it again
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
            continue
        except OSError:
            return True  # the directory is not ours to write: no reservation, as before
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing uses right now, outside the kernel's ephemeral range, and that no other
    launcher (this process included) has just chosen (it is reserved for this process): a cluster's nine etcd
    ports, chosen one after the other, are nine different ports.

    Outside the ephemeral range because a client's connection takes its local port from that range and, once
    closed, holds it in TIME_WAIT for a minute, during which even ``SO_REUSEADDR`` cannot bind a listener to it:
    a component stopped and started again on its port (or one slow to bind the port chosen for it) would then fail
    to start. kube's own ports (6443, 2379, 10250) lie below that range for the same reason."""
    choices = _listener_ports()
    for _ in range(256):
        port = random.choice(choices) if choices else _kernel_port()
        if not port_in_use(port, "0.0.0.0", reuse_address=False) and reserve(port, fresh=True):
            return port
    raise OSError(f"no free port in {choices[0]}-{choices[-1]}" if choices else "no free port")


def _listener_ports() -> range:
    """Ports free_port chooses from: LISTENER_PORTS without the kernel's ephemeral range (empty when too little of
    it is left: then the kernel chooses, as before)."""
    low, high = LISTENER_PORTS.start, LISTENER_PORTS.stop
    try:
        first, last = (int(n) for n in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        first, last = 32768, 60999  # Linux's default
    if first < high and last >= low:  # they overlap: keep the larger side
        low, high = max((low, first), (last + 1, high), key=lambda side: side[1] - side[0])
    return range(low, high) if high - low >= 1000 else range(0)


def _kernel_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_in_use(port: int, host: str = "127.0.0.1", *, reuse_address: bool = True) -> bool:
    """True if binding host:port fails because something already holds it (``reuse_address`` False: as a listener
    without ``SO_REUSEADDR`` binds, so a connection in TIME_WAIT on the port holds it too; ``0.0.0.0``: any address
    of the port does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        if reuse_address:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EACCES):
                return True
            raise
    return False


def free_ports_from(start: int, count: int, avoid: set[int] | None = None) -> list[int]:
    """The first ``count`` free ports at or above ``start`` (kubelets: 10250, 10251, ...), reserved for this
    process (see the module docstring)."""
    found: list[int] = []
    port = start
    taken = avoid or set()
    while len(found) < count:
        if port > 65535:
            raise OSError(f"no {count} free ports above {start}")
        if port not in taken and not port_in_use(port) and reserve(port):
            found.append(port)
        port += 1
    return found


def accepts(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a TCP connection to ``host:port`` is accepted now: a connect on loopback, microseconds, where an HTTP
    request through a client costs a millisecond of CPU (a wait that polls it every few ms stays cheap)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) == 0


def listening_sockets(port: int) -> set[int]:
    """The inodes of the TCP sockets listening on ``port`` (any address, IPv4 and IPv6, from ``/proc/net/tcp*``):
    several when processes share the port with SO_REUSEPORT (``kubelab up --apiservers``); a process holds one
    when ``/proc/<pid>/fd`` links to ``socket:[<inode>]``."""
    found: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(int(fields[9]))
    return found
