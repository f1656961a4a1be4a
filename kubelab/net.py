"""Loopback port helpers for the launcher (which ports are taken, the next free ones)."""

from __future__ import annotations

import errno
import socket

__all__ = ["free_ports_from", "port_in_use"]


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
