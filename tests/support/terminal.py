"""kubectl on a pseudo-terminal, as a user's shell runs it: for the tests of ``kubectl run -it``, ``attach -it``
and ``debug -it``, which type into a container's shell and read what it answers."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios

from conftest import Kubectl
from support.wait import wait_for

PROMPT_HINT = b"If you don't see a command prompt"


class Terminal:
    """kubectl on a pseudo-terminal of a known size, as a user's shell runs it."""

    def __init__(self, kube: Kubectl, *args: str, rows: int = 33, cols: int = 91) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(kube.home), "KUBECONFIG": str(kube.home / "none")}
        self.proc = subprocess.Popen([kube.binary, "-s", kube.server, *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        self.output = b""

    def read_until(self, pattern: bytes, timeout: float = 30.0) -> bytes:
        """Output until ``pattern`` appears (the terminal may close first: then the assertion says why)."""
        def seen() -> bool:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.output += os.read(self.master, 65536)
                except OSError:  # EIO: kubectl exited and the terminal closed
                    return True
            return pattern in self.output
        wait_for(seen, timeout, what=f"{pattern!r} on the terminal")
        assert pattern in self.output, self.output.decode(errors="replace")
        return self.output

    def type_until_echoed(self) -> None:
        """Type a probe until the container answers: the attach is up and input reaches it."""
        self.read_until(PROMPT_HINT)
        try:
            wait_for(self._probe, what="the container to answer on the terminal")
        except AssertionError:
            raise AssertionError(f"no answer on the terminal:\n{self.output.decode(errors='replace')}") from None

    def _probe(self) -> bool:
        os.write(self.master, b"echo ready-$((20+22))\r")
        try:
            self.read_until(b"ready-42\r\n", timeout=1.0)
        except AssertionError:
            return False
        return True

    def type(self, text: bytes) -> None:
        os.write(self.master, text)

    def finish(self) -> tuple[int, str]:
        """kubectl's exit code and everything it wrote, once it exits."""
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.output += chunk
        code = self.proc.wait(30)
        os.close(self.master)
        return code, self.output.decode(errors="replace")
