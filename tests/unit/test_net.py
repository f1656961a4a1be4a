"""kubelab/net.py's port choice: a chosen port is reserved, so launchers choosing at once never get the same one.

Each test keeps its reservations in its own temporary directory (``tempfile.tempdir`` here, ``TMPDIR`` for the
processes it starts), away from the reservations of clusters running on the machine.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from kubelab import net

CHOOSE = "import sys; from kubelab.net import free_ports_from; print(*free_ports_from(int(sys.argv[1]), 3), " \
         "flush=True); sys.stdin.read()"  # a chooser runs on (a launcher starts what it chose)
HOLD = "import sys; from kubelab.net import reserve; assert reserve(int(sys.argv[1])); print('held', flush=True); " \
       "sys.stdin.read()"


@pytest.fixture()
def reservations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This test's reservation directory; the environment for the processes it starts."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return {**os.environ, "TMPDIR": str(tmp_path)}


def start_port() -> int:
    """The first of 12 ports nothing listens on, below the kernel's ephemeral range (only choosers take these)."""
    while True:
        start = random.randrange(20000, 30000, 20)
        if not any(net.port_in_use(port) for port in range(start, start + 12)):
            return start


def test_processes_choosing_at_once_get_different_ports(reservations: dict[str, str]) -> None:
    start = start_port()
    choosers = [subprocess.Popen([sys.executable, "-c", CHOOSE, str(start)], env=reservations, text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(4)]
    chosen = [c.stdout.readline().split() for c in choosers if c.stdout is not None]
    for c in choosers:
        c.communicate("", timeout=30)
    ports = [p for ports in chosen for p in ports]
    assert all(len(ports) == 3 for ports in chosen) and len(set(ports)) == 12, chosen


def test_a_port_another_process_reserved_is_skipped_until_it_exits(reservations: dict[str, str]) -> None:
    start = start_port()
    with subprocess.Popen([sys.executable, "-c", HOLD, str(start)], env=reservations, text=True,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE) as holder:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert net.free_ports_from(start, 1) == [start + 1]
        assert not net.reserve(start)
        holder.communicate("", timeout=30)
    assert net.free_ports_from(start, 1) == [start]  # its chooser is gone: kube's default port again


def test_own_and_stale_reservations_do_not_block(reservations: dict[str, str]) -> None:
    start = start_port()
    assert net.free_ports_from(start, 1) == [start]
    assert net.free_ports_from(start, 1) == [start]  # this process's own: a cluster started again gets it again
    reservation = Path(reservations["TMPDIR"]) / f"kubelab-ports-{os.getuid()}" / str(start + 1)
    reservation.write_text(str(os.getppid()))  # a live process's, but older than a component takes to bind
    old = time.time() - net.RESERVATION_SECONDS - 1
    os.utime(reservation, (old, old))
    assert net.reserve(start + 1)
    assert reservation.read_text() == str(os.getpid())


def test_free_port_is_reserved(reservations: dict[str, str]) -> None:
    chooser = "from kubelab.net import free_port; print(free_port(), flush=True); import sys; sys.stdin.read()"
    with subprocess.Popen([sys.executable, "-c", chooser], env=reservations, text=True, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE) as holder:
        assert holder.stdout is not None
        port = int(holder.stdout.readline())
        assert not net.reserve(port)  # a sibling's (here the parent's) launcher may not take it
        holder.communicate("", timeout=30)


def test_a_port_chosen_by_an_ancestor_is_the_childs_to_use(reservations: dict[str, str]) -> None:
    port = net.free_port()  # as a test chooses --secure-port, then runs `kubelab up` with it
    choose = "import sys; from kubelab.net import free_ports_from; print(*free_ports_from(int(sys.argv[1]), 1))"
    grandchild = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {choose!r}, sys.argv[1]], check=True)"
    child = subprocess.run([sys.executable, "-c", grandchild, str(port)], env=reservations, text=True,
                           capture_output=True, timeout=60)
    assert child.stdout.split() == [str(port)], child.stderr


def test_accepts_only_while_something_listens() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]
        assert not net.accepts(port)  # bound, not listening: the kernel refuses the connection
        server.listen()
        assert net.accepts(port)
    assert not net.accepts(port)


def _ephemeral_range() -> tuple[int, int]:
    first, last = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return int(first), int(last)


def _closed_client_port() -> int:
    """The local port of a client connection the client closed first: the kernel chose it from the ephemeral
    range, and it is in TIME_WAIT now."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client = socket.create_connection(server.getsockname())
        port = client.getsockname()[1]
        accepted, _ = server.accept()
        client.close()
        accepted.close()
    return int(port)


@pytest.mark.skipif(not Path("/proc/sys/net/ipv4/ip_local_port_range").exists(), reason="needs Linux's /proc")
def test_a_chosen_port_is_one_no_client_connection_can_hold(reservations: dict[str, str]) -> None:
    """A port a client connection used cannot be listened on for a minute, SO_REUSEADDR or not, so a component
    stopped and started again on a port from the ephemeral range could fail to bind: free_port chooses outside
    it, bindable on every address, reserved for this process."""
    held = _closed_client_port()
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with pytest.raises(OSError):
            listener.bind(("127.0.0.1", held))
    first, last = _ephemeral_range()
    for _ in range(20):
        port = net.free_port()
        assert not first <= port <= last
        reservation = Path(reservations["TMPDIR"]) / f"kubelab-ports-{os.getuid()}" / str(port)
        assert reservation.read_text() == str(os.getpid())
        with socket.socket() as listener:
            listener.bind(("0.0.0.0", port))


def test_a_process_never_gets_the_same_free_port_twice(reservations: dict[str, str]) -> None:
    """A cluster's etcd members take nine ports from free_port one after the other: each must be its own (this
    process's live reservation of a port counts as taken, for free_port)."""
    ports = [net.free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
