"""Loopback port helpers for the launcher (which ports are taken, the next free ones)."""

from __future__ import annotations

import errno
import socket

__all__ = ["free_ports_from", "listening_sockets", "port_in_use"]

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True if binding host:port fails because something already holds it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EACCES):
                return True
            raise
    return False


def free_ports_from(start: int, count: int, avoid: set[int] | None = None) -> list[int]:
    """The first ``count`` free ports at or above ``start`` (kubelets: 10250, 10251, ...)."""
    found: list[int] = []
    port = start
    taken = avoid or set()
    while len(found) < count:
        if port > 65535:
            raise OSError(f"no {count} free ports above {start}")
        if port not in taken and not port_in_use(port):
            found.append(port)
        port += 1
    return found


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
