"""``kubectl exec`` on the kubelet's side: a command run in a container's environment, streamed over a websocket.

The apiserver proxies ``pods/{name}/exec`` to ``/exec/{namespace}/{pod}/{container}?command=..&stdin=..&stdout=..
&stderr=..&tty=..`` and relays the websocket both ways. The wire protocol is Kubernetes' channel protocol
(``v5.channel.k8s.io`` down to ``channel.k8s.io``): every binary message starts with its channel byte —

    0 stdin   client → kubelet            3 error   kubelet → client: the final Status (v4+: JSON)
    1 stdout  kubelet → client            4 resize  client → kubelet: {"Width": w, "Height": h} (v3+)
    2 stderr  kubelet → client            255 close client → kubelet: [255, channel], that stream ended (v5)

As kubelet does, an empty message on the lowest writable channel says the stream is up, and the error channel
ends the session with ``{"status": "Success"}`` or, for a non-zero exit, ``reason: NonZeroExitCode`` with the
code in ``details.causes[{reason: ExitCode}]`` — which kubectl turns into its own exit code.

A process runtime has no container to enter: the command runs as a process with the container's environment
and working directory (``probes.ExecTarget``, what its probes use), mount paths rewritten as for the container.
With ``tty`` it gets a pseudo-terminal (``os.openpty``) as its controlling terminal, so ``kubectl exec -it POD
-- sh`` is an interactive shell; stderr then goes to the terminal too (Kubernetes ignores ``stderr`` with a tty).
With real containers (``ExecTarget.container``, ``--runtime docker``) the command runs inside the container,
non-interactively: its output is sent when it ends.

The session itself (``Channels``: the negotiated protocol, the error channel's last word; ``relay``: output,
stdin, resize and close until the streams end) is not exec's own: ``attach`` relays a container's streams with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import struct
import termios
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import WSMsgType, web

from .runtime.cri import ExecTarget, InContainer

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
Send = Callable[[int, bytes], Awaitable[None]]


@dataclass(frozen=True)
class ExecOptions:
    command: list[str]
    stdin: bool = False
    stdout: bool = True
    stderr: bool = True
    tty: bool = False


def _flag(query: Mapping[str, str], name: str, default: bool) -> bool:
    value = query.get(name)
    return default if value is None else value.lower() in ("true", "1")


def parse_options(query: Any) -> ExecOptions:
    """The exec request's options (``query`` is a multidict: ``command`` repeats, one word each)."""
    tty = _flag(query, "tty", False)
    return ExecOptions(list(query.getall("command", [])), stdin=_flag(query, "stdin", False),
                       stdout=_flag(query, "stdout", True), stderr=_flag(query, "stderr", True) and not tty, tty=tty)


def exit_status(code: int, command: list[str]) -> dict[str, Any]:
    """The error channel's last word, as kubelet writes it (``metav1.Status`` without kind/apiVersion)."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"[{' '.join(command)}], exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def error_status(message: str, reason: str = "InternalError", code: int = 500) -> dict[str, Any]:
    return {"metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


class ExecProcess:
    """The exec'd command: with a pty (one stream, a terminal) or with pipes (stdin, stdout, stderr)."""

    def __init__(self, options: ExecOptions, target: ExecTarget) -> None:
        self.options = options
        self.target = target
        self.process: asyncio.subprocess.Process | None = None
        self.master: int | None = None  # the pty's master side (tty)

    async def start(self) -> None:
        argv = self.target.argv(self.options.command)
        common: dict[str, Any] = {"cwd": str(self.target.cwd), "env": self.target.env}
        if self.options.tty:
            master, slave = os.openpty()
            try:
                self.process = await asyncio.create_subprocess_exec(
                    *argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                    preexec_fn=_take_terminal, **common)
            except BaseException:
                os.close(master)
                raise
            finally:
                os.close(slave)
            self.master = master
            os.set_blocking(master, False)
        else:
            pipe, null = asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL
            self.process = await asyncio.create_subprocess_exec(
                *argv, stdin=pipe if self.options.stdin else null, stdout=pipe if self.options.stdout else null,
                stderr=pipe if self.options.stderr else null, start_new_session=True, **common)

    async def pump_output(self, send: Send) -> None:
        """Copy the command's output to the client until it closes its side (all of the command's processes)."""
        if self.master is not None:
            await _pump_fd(self.master, STDOUT, send)
            return
        assert self.process is not None
        streams = [(s, ch) for s, ch in ((self.process.stdout, STDOUT), (self.process.stderr, STDERR)) if s]
        await asyncio.gather(*(_pump_stream(stream, channel, send) for stream, channel in streams))

    async def write_stdin(self, data: bytes) -> None:
        if self.master is not None:
            await _write_fd(self.master, data)
        elif self.process is not None and self.process.stdin is not None and not self.process.stdin.is_closing():
            self.process.stdin.write(data)
            with contextlib.suppress(ConnectionError):
                await self.process.stdin.drain()

    def close_stdin(self) -> None:
        if self.master is not None:
            _write_eof(self.master)
        elif self.process is not None and self.process.stdin is not None:
            self.process.stdin.close()

    def resize(self, width: int, height: int) -> None:
        if self.master is not None and width > 0 and height > 0:
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))

    async def wait(self) -> int:
        assert self.process is not None
        code = await self.process.wait()
        return 128 - code if code < 0 else code

    def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            for sig in (signal.SIGHUP, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.process.pid, sig)

    def close(self) -> None:
        if self.master is not None:
            os.close(self.master)
            self.master = None


def _take_terminal() -> None:
    """In the child, after ``setsid``: make the pty (its stdin) the session's controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


async def _pump_stream(stream: asyncio.StreamReader, channel: int, send: Send) -> None:
    while chunk := await stream.read(32 * 1024):
        await send(channel, chunk)


def _wake(readable: asyncio.Future[None]) -> None:
    if not readable.done():
        readable.set_result(None)


async def _pump_fd(fd: int, channel: int, send: Send) -> None:
    loop = asyncio.get_running_loop()
    while True:
        readable: asyncio.Future[None] = loop.create_future()
        loop.add_reader(fd, _wake, readable)
        try:
            await readable
        finally:
            loop.remove_reader(fd)
        try:
            chunk = os.read(fd, 32 * 1024)
        except BlockingIOError:
            continue
        except OSError:  # EIO: every process holding the terminal exited
            return
        if not chunk:
            return
        await send(channel, chunk)


async def _write_fd(fd: int, data: bytes) -> None:
    while data:
        try:
            written = os.write(fd, data)
        except BlockingIOError:
            await asyncio.sleep(0.01)
            continue
        data = data[written:]


def _write_eof(fd: int) -> None:
    """End of input on a terminal: the EOF character (^D) at the start of a line."""
    with contextlib.suppress(OSError, termios.error, IndexError, TypeError):
        os.write(fd, bytes([termios.tcgetattr(fd)[6][termios.VEOF][0]]))


class Channels:
    """One client's websocket, speaking the channel protocol it chose (exec and attach alike)."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.ws = ws
        self.protocol = ws.ws_protocol or "channel.k8s.io"
        self._lock = asyncio.Lock()

    @classmethod
    async def accept(cls, request: web.Request) -> Channels:
        ws = web.WebSocketResponse(protocols=PROTOCOLS, max_msg_size=0)
        await ws.prepare(request)
        return cls(ws)

    async def send(self, channel: int, data: bytes) -> None:
        if not self.ws.closed:
            async with self._lock:
                await self.ws.send_bytes(bytes([channel]) + data)

    async def finish(self, status: dict[str, Any]) -> web.WebSocketResponse:
        """The error channel's last word, then the end of the session."""
        if self.protocol in ("v4.channel.k8s.io", "v5.channel.k8s.io"):
            body = json.dumps(status).encode()
        else:  # v1-v3: the error channel carries only the message, and nothing on success
            body = b"" if status.get("status") == "Success" else status.get("message", "").encode()
        if body:
            await self.send(ERROR, body)
        await self.ws.close()
        return self.ws


class Streams(Protocol):
    """What a session relays: an exec'd command (``ExecProcess``) or an attached container (``attach``)."""

    async def pump_output(self, send: Send) -> None: ...
    async def write_stdin(self, data: bytes) -> None: ...
    def close_stdin(self) -> None: ...
    def resize(self, width: int, height: int) -> None: ...
    async def wait(self) -> int: ...
    def kill(self) -> None: ...
    def close(self) -> None: ...


async def relay(channels: Channels, streams: Streams, options: ExecOptions) -> int:
    """Relay ``streams`` to the client until they end (their exit code) or the client leaves (then ``kill``)."""
    # As kubelet: an empty frame on the lowest writable channel tells the client the streams are up.
    await channels.send(STDOUT if options.stdout or options.tty else STDERR if options.stderr else ERROR, b"")
    output = asyncio.create_task(streams.pump_output(channels.send))
    reader = asyncio.create_task(_read_client(channels, streams))
    code = 0
    try:
        code = await streams.wait()
        await asyncio.wait_for(output, 2.0)  # background processes may keep the output open: not forever
    except TimeoutError:
        pass
    finally:
        if not output.done():
            output.cancel()
        reader.cancel()
        streams.kill()
        await streams.wait()
        streams.close()
    return code


async def serve(request: web.Request, target: ExecTarget | None, problem: str | None) -> web.WebSocketResponse:
    """Run one exec session on the websocket ``request`` upgrades to (``problem``: why it cannot run)."""
    channels = await Channels.accept(request)
    options = parse_options(request.query)
    if problem is not None or target is None:
        return await channels.finish(error_status(problem or "container not running", "BadRequest", 400))
    if not options.command:
        return await channels.finish(error_status("you must specify at least one command for the container",
                                                  "BadRequest", 400))
    if target.container is not None:
        return await channels.finish(await _run_in_container(options, target.container, channels.send))
    process = ExecProcess(options, target)
    try:
        await process.start()
    except OSError as err:
        word = options.command[0]
        why = "executable file not found in $PATH" if isinstance(err, FileNotFoundError) else err.strerror
        return await channels.finish(error_status(
            f"Internal error occurred: error executing command in container: failed to exec in container: "
            f'failed to start exec: OCI runtime exec failed: exec failed: unable to start container process: '
            f'exec: "{word}": {why}: unknown'))
    code = await relay(channels, process, options)
    if channels.ws.closed:
        return channels.ws
    return await channels.finish(exit_status(code, options.command))


async def _run_in_container(options: ExecOptions, container: InContainer, send: Send) -> dict[str, Any]:
    """A runtime with real containers (``--runtime docker``): the command runs inside the container to its end,
    then its output is sent; stdin and tty are not offered (yet)."""
    if options.stdin or options.tty:
        return error_status("interactive exec (stdin, tty) is not supported by this kubelet's container runtime; "
                            "run the command without -i/-t", "BadRequest", 400)
    try:
        code, out, err = await container.run(options.command, None)
    except FileNotFoundError:
        return error_status(f"Internal error occurred: error executing command in container: exec: "
                            f'"{options.command[0]}": executable file not found in $PATH')
    except OSError as error:
        return error_status(f"Internal error occurred: error executing command in container: {error}")
    await send(STDOUT if options.stdout else ERROR, b"")
    if options.stdout and out:
        await send(STDOUT, out)
    if options.stderr and err:
        await send(STDERR, err)
    return exit_status(code, options.command)


async def _read_client(channels: Channels, streams: Streams) -> None:
    """stdin, resize and (v5) close messages from the client; the client going away ends the streams."""
    async for msg in channels.ws:
        if msg.type == WSMsgType.BINARY:
            data: bytes = msg.data
        elif msg.type == WSMsgType.TEXT:
            data = msg.data.encode()
        else:
            break
        if not data:
            continue
        channel, payload = data[0], data[1:]
        if channel == STDIN and payload:
            await streams.write_stdin(payload)
        elif channel == RESIZE:
            try:
                size = json.loads(payload)
                streams.resize(int(size.get("Width", 0)), int(size.get("Height", 0)))
            except (ValueError, AttributeError, OSError):
                pass
        elif channel == CLOSE and channels.protocol == "v5.channel.k8s.io" and payload[:1] == bytes([STDIN]):
            streams.close_stdin()
    streams.kill()
