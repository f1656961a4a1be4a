"""``kubectl attach`` (and ``kubectl run -i``) on the kubelet's side: a running container's own stdin and output,
streamed over a websocket as exec is (``exec.Channels``, ``exec.relay``: the same channel protocol v1..v5).

The apiserver proxies ``pods/{name}/attach`` to ``/attach/{namespace}/{pod}/{container}?stdin=..&stdout=..
&stderr=..&tty=..``. The container's shim serves attach on a unix socket in its state directory
(``shim.Attachments``; ``Runtime.attach_socket``), so a container started before a kubelet restart can be
attached too; this module connects to it and relays: output from the moment of attaching on, stdin (only to a
container with ``stdin: true``: to any other it goes nowhere, as containerd's attach drops it), resizes (to its
pty), and the end of the client's stdin.

As kubelet's ``GetAttach``, whether the session is a terminal comes from the container's spec (``tty``), not
from the request; the session ends when the container's output ends (it exited) with ``Success`` — kubectl
reads the exit code from the pod's status — or when the client leaves, which leaves the container running.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path
from typing import Any

from aiohttp import web

from .exec import CLOSE, RESIZE, STDERR, STDIN, STDOUT, Channels, ExecOptions, Send, error_status, relay
from .runtime.shim import MAX_MESSAGE


class AttachedContainer:
    """One client's connection to a container's attach socket (an ``exec.Streams``)."""

    def __init__(self, path: Path, options: ExecOptions) -> None:
        self.path = path
        self.options = options
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.setblocking(False)
        self._stdin_open = options.stdin
        self._ended = asyncio.Event()

    async def connect(self) -> None:
        """Raises ``OSError`` when nothing listens: the container is not running."""
        # The directory by descriptor: the socket's full path may exceed sun_path's 108 bytes.
        directory = os.open(self.path.parent, os.O_PATH)
        try:
            await asyncio.get_running_loop().sock_connect(self.sock, f"/proc/self/fd/{directory}/{self.path.name}")
        finally:
            os.close(directory)

    async def pump_output(self, send: Send) -> None:
        wanted = {STDOUT: self.options.stdout or self.options.tty, STDERR: self.options.stderr}
        loop = asyncio.get_running_loop()
        try:
            while message := await loop.sock_recv(self.sock, MAX_MESSAGE):
                if wanted.get(message[0]) and len(message) > 1:
                    await send(message[0], message[1:])
        except OSError:
            pass
        finally:
            self._ended.set()

    async def write_stdin(self, data: bytes) -> None:
        if not self._stdin_open:
            return
        loop = asyncio.get_running_loop()
        for start in range(0, len(data), MAX_MESSAGE - 1):
            try:
                await loop.sock_sendall(self.sock, bytes([STDIN]) + data[start:start + MAX_MESSAGE - 1])
            except OSError:
                return

    def close_stdin(self) -> None:
        """The client's stdin ended: the shim closes the container's (``stdinOnce``) or ends this attach."""
        if self._stdin_open:
            self._stdin_open = False
            self._send(bytes([CLOSE, STDIN]))

    def resize(self, width: int, height: int) -> None:
        if self.options.tty:
            self._send(bytes([RESIZE]) + f"{width} {height}".encode())

    async def wait(self) -> int:
        await self._ended.wait()
        return 0

    def kill(self) -> None:
        """Detach (the container goes on): a client leaving ends its stdin first, as containerd's attach does."""
        self.close_stdin()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes ``pump_output``
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()

    def _send(self, message: bytes) -> None:
        try:
            self.sock.send(message)
        except OSError:
            pass


def attach_options(query: Any, spec: dict[str, Any]) -> ExecOptions:
    """The request's streams, with the terminal as the container has it (kubelet's ``GetAttach``) and stdin
    only where the container has one."""
    def flag(name: str, default: bool) -> bool:
        value = query.get(name)
        return default if value is None else value.lower() in ("true", "1")

    tty = bool(spec.get("tty"))
    return ExecOptions([], stdin=flag("stdin", False) and bool(spec.get("stdin")), stdout=flag("stdout", True),
                       stderr=flag("stderr", True) and not tty, tty=tty)


async def serve(request: web.Request, spec: dict[str, Any] | None, socket_path: Path | None,
                problem: str | None) -> web.WebSocketResponse:
    """Run one attach session on the websocket ``request`` upgrades to (``problem``: why it cannot)."""
    channels = await Channels.accept(request)
    if problem is not None or spec is None:
        return await channels.finish(error_status(problem or "container not running", "BadRequest", 400))
    if socket_path is None:
        return await channels.finish(error_status(
            "attach is not supported by this kubelet's container runtime; use kubectl logs -f or kubectl exec",
            "BadRequest", 400))
    options = attach_options(request.query, spec)
    if not (options.stdin or options.stdout or options.stderr):
        return await channels.finish(error_status("one of stdin, stdout, and stderr must be set", "BadRequest", 400))
    attached = AttachedContainer(socket_path, options)
    try:
        await attached.connect()
    except OSError:
        attached.close()
        name = spec.get("name", "")
        return await channels.finish(error_status(f'container "{name}" is not running', "BadRequest", 400))
    await relay(channels, attached, options)
    if channels.ws.closed:
        return channels.ws
    return await channels.finish({"metadata": {}, "status": "Success"})
