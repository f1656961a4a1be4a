"""The container shim (containerd-shim's role): the parent of one container process, so the container outlives
the kubelet.

``python -I -S shim.py DIR CWD LOG -- ARGV...`` with the container's environment, or forked by a zygote
(``shim.py --zygote``, see ``zygote``) with the same arguments read from ``DIR/spec``. It starts ARGV in its own
session (the container's process group, which the kubelet signals), writes every stdout/stderr line to LOG in
the CRI format (``<RFC 3339 time> <stream> <F|P> <text>``), and when the container exits writes its exit status
to ``DIR/exit.json``. ``DIR/pid.json`` (the container's pid and its start time in clock ticks, from
``/proc/<pid>/stat``, so a reused pid is never mistaken for it) is written before the kubelet is told the pid
on stdout; after that the shim writes nothing to the kubelet, so a kubelet that dies (``kill -9``) or restarts
takes nothing with it: it finds the container again from DIR.

The container's stdin is ``/dev/null``, or with the spec's ``stdin`` a pipe the shim holds open; with ``tty`` its
stdin, stdout and stderr are a pseudo-terminal's slave (its controlling terminal) and the shim reads the master,
logging it as stdout. Either way the shim offers attach on ``DIR/attach.sock`` (``Attachments``).

Standard library only and no ``site`` (``-I -S``), and only modules that load without Python code of their own:
``json`` (which pulls in ``re``, ``enum`` and ``collections``) and ``signal`` (``enum`` again) were two thirds of
its start-up, paid once per container start; it writes its few flat JSON objects itself (``to_json``) and uses
``_signal`` and ``_socket``, the C modules ``signal`` and ``socket`` wrap (``fcntl``/``termios``/``_struct``, C
too, only for a tty). It starts in ~6 ms and holds ~8 MB.
"""

import _signal  # type: ignore[import-not-found]  # signal's C core: ``import signal`` would load enum (3 ms per container start)
import _socket  # socket's C core: ``import socket`` would load enum and selectors
import contextlib
import os
import select
import sys
import time

MAX_LINE = 16 * 1024  # a longer line is split into partial (P) entries, as the CRI log writer does
ATTACH_SOCKET = "attach.sock"  # in the state directory
STDIN, STDOUT, STDERR, RESIZE, CLOSE = 0, 1, 2, 4, 255  # the attach socket's channels (the kubelet's websocket's)
MAX_MESSAGE = 65536 + 1  # the largest message either side sends: a read's worth of output and its channel byte
SEND_SECONDS = 2.0  # an attached client that does not take output for this long is dropped


def rfc3339_nano(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


def start_ticks(pid: int) -> int:
    """Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    return int(stat[stat.rindex(b")") + 2:].split()[19])


def to_json(value: dict[str, int | str]) -> str:
    """A flat JSON object of ints and strings (all the shim ever writes), without importing ``json``."""
    parts = []
    for key, item in value.items():
        text = str(item) if isinstance(item, int) else _string(item)
        parts.append(f"{_string(key)}: {text}")
    return "{" + ", ".join(parts) + "}"


def _string(text: str) -> str:
    out = []
    for ch in text:
        if ch in "\\\"":
            out.append("\\" + ch)
        elif ch < " " or ch > "~":
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else _surrogates(ord(ch)))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _surrogates(code: int) -> str:
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def write_json(path: str, value: dict[str, int | str]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(to_json(value))
    os.replace(tmp, path)


def spawn(cwd: str, argv: list[str], stdio: tuple[int, int, int], tty: bool = False,
          config: dict | None = None) -> int:  # type: ignore[type-arg]
    """Fork and exec the container in its own session with ``stdio`` as its fds 0-2 (with ``tty``, a pty's slave,
    made its controlling terminal); raise ``OSError`` if it cannot be executed. With ``config`` (the linux
    runtime's ``config.json``) the child becomes a Linux container first (``isolate.enter``)."""
    status_r, status_w = os.pipe()  # close-on-exec: EOF without data means the exec succeeded
    pid = os.fork()
    if pid == 0:  # the container
        try:
            os.setsid()
            for sig in (_signal.SIGPIPE, _signal.SIGXFSZ, _signal.SIGCHLD, _signal.SIGINT, _signal.SIGTERM):
                _signal.signal(sig, _signal.SIG_DFL)
            _signal.set_wakeup_fd(-1)
            for target, fd in enumerate(stdio):
                os.dup2(fd, target)
            if tty:
                import fcntl
                import termios
                fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            if config is None:
                os.chdir(cwd)
            else:
                isolate().enter(config)
            os.execvpe(argv[0], argv, os.environ)
        except OSError as err:
            os.write(status_w, f"{err.errno or 0} {err.strerror or err}".encode())
        except BaseException as err:  # noqa: BLE001 - a broken config must reach the kubelet, not vanish
            os.write(status_w, f"0 {err!r}".encode())
        os._exit(127)
    os.close(status_w)
    data = b""
    while chunk := os.read(status_r, 4096):
        data += chunk
    os.close(status_r)
    if data:
        os.waitpid(pid, 0)
        errno, _, message = data.decode(errors="replace").partition(" ")
        raise OSError(int(errno), message)
    return pid


class LogWriter:
    """Turns a stream's bytes into CRI log lines."""

    def __init__(self, log: int, stream: str) -> None:
        self.log = log
        self.stream = stream
        self.buffer = b""

    def feed(self, data: bytes) -> None:
        self.buffer += data
        lines = self.buffer.split(b"\n")
        self.buffer = lines.pop()
        out = [self._entry("F", line) for line in lines]
        while len(self.buffer) >= MAX_LINE:
            out.append(self._entry("P", self.buffer[:MAX_LINE]))
            self.buffer = self.buffer[MAX_LINE:]
        if out:
            os.write(self.log, b"".join(out))

    def close(self) -> None:
        if self.buffer:
            os.write(self.log, self._entry("F", self.buffer))
            self.buffer = b""

    def _entry(self, tag: str, line: bytes) -> bytes:
        return f"{rfc3339_nano(time.time())} {self.stream} {tag} ".encode() + line + b"\n"


def isolate():  # type: ignore[no-untyped-def]
    """``isolate.py`` (the linux runtime's container set-up), imported by path on first use."""
    module = sys.modules.get("isolate")
    if module is None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import isolate as module  # type: ignore[import-not-found,no-redef]
    return module


def read_config(state_dir: str) -> dict | None:  # type: ignore[type-arg]
    """The linux runtime's ``DIR/config.json``; ``None`` for a process-runtime container."""
    path = os.path.join(state_dir, "config.json")
    if not os.path.exists(path):
        return None
    import json
    with open(path) as f:
        return dict(json.load(f))


def read_spec(state_dir: str) -> tuple[str, str, str, list[str], dict[str, str]]:
    """``DIR/spec`` as the kubelet writes it for the zygote: NUL-separated cwd, log path, stdio flags (``stdio``),
    the argument count, the arguments, then ``NAME=value`` environment entries."""
    with open(os.path.join(state_dir, "spec"), "rb") as f:
        fields = [os.fsdecode(field) for field in f.read().split(b"\0")]
    argc = int(fields[3])
    argv, env = fields[4:4 + argc], fields[4 + argc:]
    return fields[0], fields[1], fields[2], argv, dict(entry.partition("=")[::2] for entry in env if entry)


def zygote(preload: bool = False) -> int:
    """``shim.py --zygote``: one warm interpreter per kubelet that forks a shim per container (an interpreter
    start costs ~10 ms of CPU per container; a fork ~1 ms). Each stdin line names a state directory whose ``spec``
    says what to run; the forked shim answers on stdout as a shim started directly does, with ``dir`` added. The
    zygote reaps its shims; at EOF (the kubelet went away) it waits for the ones still running, then exits, so
    no container depends on the kubelet."""
    def reap(*_: object) -> None:
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    if preload:  # the linux runtime's zygote: its shims fork with the set-up code already loaded
        read_config(os.devnull)
        isolate()
        import json  # noqa: F401
    _signal.signal(_signal.SIGCHLD, reap)
    for sig in (_signal.SIGINT, _signal.SIGHUP, _signal.SIGTERM):
        _signal.signal(sig, _signal.SIG_IGN)  # stopping the kubelet's process group must not stop the shims' parent
    buffer = b""
    while chunk := os.read(0, 65536):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.startswith(b"pause "):
                fork_pause(os.fsdecode(line[6:]))
            elif line:
                _fork_shim(os.fsdecode(line))
    _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return 0


def _fork_shim(state_dir: str) -> None:
    if os.fork() != 0:
        return
    code = 1
    try:  # the shim, in its own session as a directly started one
        os.setsid()
        _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        err = os.open(os.path.join(state_dir, "shim.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(err, 2)
        cwd, log_path, stdio, argv, env = read_spec(state_dir)
        os.environ.clear()
        os.environ.update(env)
        code = main(state_dir, cwd, log_path, argv, stdio)
    except BaseException as error:  # noqa: BLE001 - the kubelet waits for an answer: it must get one
        print(to_json({"dir": state_dir, "error": f"the container shim failed: {error}", "errno": 0}), flush=True)
    finally:
        os._exit(code)


def fork_pause(state_dir: str) -> None:
    """A pod's sandbox (the linux runtime's pause container), forked from the zygote without a shim: it has no
    output to log and nothing to attach to. The child takes the pod's namespaces (``isolate.sandbox``) and forks
    the pause process itself (PID 1 of the pod's PID namespace with ``shareProcessNamespace``), records its pid
    in ``DIR/pid.json``, answers the kubelet and exits; the pause process lives on in its own session."""
    if os.fork() != 0:
        return
    try:
        os.setsid()
        _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        config = read_config(state_dir) or {}
        isolate().sandbox(config, state_dir)
        pid = os.fork()
        if pid == 0:
            os.setpgid(0, 0)  # its own process group, which the kubelet kills with the pod
            os.dup2(null, 1)
            os.dup2(null, 2)
            os._exit(isolate().pause())
        ticks = start_ticks(pid)
        write_json(os.path.join(state_dir, "pid.json"), {"pid": pid, "start": ticks, "shim": pid, "shimStart": ticks})
        print(to_json({"dir": state_dir, "pid": pid, "shim": pid}), flush=True)
    except BaseException as error:  # noqa: BLE001 - the kubelet waits for an answer: it must get one
        print(to_json({"dir": state_dir, "error": f"the pod sandbox failed: {error}", "errno": 0}), flush=True)
    finally:
        os._exit(0)


class Attachments:
    """The attach socket ``DIR/attach.sock`` (CRI Attach): each connection is one attached client (the kubelet
    relaying a ``kubectl attach``), which gets the container's output from then on and may write its stdin.

    A ``SOCK_SEQPACKET`` socket, so every message arrives whole; each starts with its channel byte, as the
    kubelet's websocket channels: 0 stdin (client → shim), 1 stdout and 2 stderr (shim → client; with a tty all
    output is stdout), 4 resize (``"<width> <height>"``: TIOCSWINSZ on the pty's master), 255 the client's stdin
    ended. As containerd does, that end closes the container's stdin if it has ``stdinOnce`` and no tty;
    otherwise it ends that client's attach. The shim closes every connection once the container's output ends.
    Being in DIR, the socket outlives a kubelet restart like everything else the shim owns."""

    def __init__(self, poller: select.poll, stdin: int, output: int, tty: bool, stdin_once: bool) -> None:
        self.poller = poller
        self.stdin = stdin  # the container's stdin: a pipe's write end or the pty's master; -1: none
        self.output = output  # the pty master when it is also an output fd (its poll mask is shared)
        self.tty = tty
        self.stdin_once = stdin_once
        self.pending = b""  # stdin not yet written (the container reads at its own pace)
        self.closing = False  # close stdin once ``pending`` is written
        self.clients: dict[int, _socket.socket] = {}
        self.listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        self.listener.bind(ATTACH_SOCKET)  # relative to DIR (the cwd): a full path may exceed sun_path's 108 bytes
        self.listener.listen(16)
        self.listener.setblocking(False)
        poller.register(self.listener.fileno(), select.POLLIN)

    def handle(self, fd: int, events: int) -> bool:
        """Serve ``events`` on ``fd`` if it is one of the attach fds; False if it is not."""
        if fd == self.listener.fileno():
            self._accept()
        elif fd in self.clients:
            self._receive(fd)
        elif fd == self.stdin and events & (select.POLLOUT | select.POLLERR):
            self._flush()
            return fd != self.output or not events & (select.POLLIN | select.POLLHUP)
        else:
            return False
        return True

    def broadcast(self, channel: int, data: bytes) -> None:
        message = bytes([channel]) + data
        for fd, client in list(self.clients.items()):
            try:
                client.send(message)
            except OSError:  # gone, or too slow to keep up: its attach ends, the container does not wait
                self._drop(fd)

    def close(self) -> None:
        for fd in list(self.clients):
            self._drop(fd)
        self.poller.unregister(self.listener.fileno())
        self.listener.close()
        with contextlib.suppress(OSError):
            os.unlink(ATTACH_SOCKET)
        self._close_stdin()

    def _accept(self) -> None:
        try:
            fd, _ = self.listener._accept()  # type: ignore[attr-defined]  # the fd, without socket.py's wrapper
        except OSError:
            return
        client = _socket.socket(fileno=fd)
        client.settimeout(SEND_SECONDS)
        self.clients[fd] = client
        self.poller.register(fd, select.POLLIN)

    def _receive(self, fd: int) -> None:
        try:
            message = self.clients[fd].recv(MAX_MESSAGE)
        except OSError:
            message = b""
        if not message:
            self._drop(fd)
            return
        channel, payload = message[0], message[1:]
        if channel == STDIN and self.stdin >= 0 and not self.closing:
            self.pending += payload
            self._watch_stdin()
        elif channel == RESIZE and self.tty:
            _resize(self.stdin, payload)
        elif channel == CLOSE:
            if self.stdin_once and not self.tty:
                self.closing = True
                self._watch_stdin()
            else:
                self._drop(fd)

    def _drop(self, fd: int) -> None:
        client = self.clients.pop(fd)
        self.poller.unregister(fd)
        client.close()

    def _flush(self) -> None:
        try:
            written = os.write(self.stdin, self.pending) if self.pending else 0
        except BlockingIOError:
            written = 0
        except OSError:  # the container closed its stdin (EPIPE) or exited: what it did not read is lost
            self.pending, written, self.closing = b"", 0, True
        self.pending = self.pending[written:]
        self._watch_stdin()

    def _watch_stdin(self) -> None:
        if self.closing and not self.pending and self.stdin != self.output:
            self._close_stdin()
            return
        mask = (select.POLLIN if self.stdin == self.output else 0) | (select.POLLOUT if self.pending else 0)
        if mask:
            self.poller.register(self.stdin, mask)
        elif self.stdin >= 0:
            with contextlib.suppress(KeyError):
                self.poller.unregister(self.stdin)

    def _close_stdin(self) -> None:
        if self.stdin >= 0 and self.stdin != self.output:
            with contextlib.suppress(KeyError):
                self.poller.unregister(self.stdin)
            os.close(self.stdin)
            self.stdin = -1


def _resize(master: int, payload: bytes) -> None:
    import _struct
    import fcntl
    import termios
    try:
        width, height = (int(n) for n in payload.split())
        if width > 0 and height > 0:
            fcntl.ioctl(master, termios.TIOCSWINSZ, _struct.pack("HHHH", height, width, 0, 0))
    except (ValueError, OSError):
        pass


def _stdio(flags: set[str]) -> tuple[tuple[int, int, int], dict[int, str], int]:
    """The container's fds 0-2, the shim's output fds (fd → stream) and its end of the container's stdin."""
    if "tty" in flags:
        master, slave = os.openpty()
        os.set_blocking(master, False)
        return (slave, slave, slave), {master: "stdout"}, master
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    if "stdin" in flags:
        stdin_r, stdin_w = os.pipe()
        os.set_blocking(stdin_w, False)
    else:
        stdin_r, stdin_w = os.open(os.devnull, os.O_RDONLY), -1
    return (stdin_r, out_w, err_w), {out_r: "stdout", err_r: "stderr"}, stdin_w


def main(state_dir: str, cwd: str, log_path: str, argv: list[str], stdio: str = "") -> int:
    """Run the container; ``stdio``: comma-separated ``stdin``, ``stdinOnce``, ``tty`` from its spec."""
    flags = set(stdio.split(","))
    _signal.signal(_signal.SIGCHLD, lambda *_: None)  # wakes poll() through the wakeup fd
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    _signal.set_wakeup_fd(wake_w)
    for sig in (_signal.SIGINT, _signal.SIGHUP, _signal.SIGTERM):
        _signal.signal(sig, _signal.SIG_IGN)  # only the container's own exit ends the shim
    child, outputs, stdin = _stdio(flags)
    try:
        config = read_config(state_dir)
        if config is not None:
            isolate().prepare(config)
            isolate().before_fork(config)  # the PID namespace its next child is born into
        pid = spawn(cwd, argv, child, tty="tty" in flags, config=config)
    except OSError as err:
        print(to_json({"dir": state_dir, "error": err.strerror or str(err), "errno": err.errno or 0}), flush=True)
        return 1
    for fd in set(child):
        os.close(fd)
    os.chdir(state_dir)  # the attach socket's path is relative to it
    poller = select.poll()
    attachments = Attachments(poller, stdin, stdin if "tty" in flags else -1, "tty" in flags,
                              "stdinOnce" in flags)
    write_json(os.path.join(state_dir, "pid.json"), {"pid": pid, "start": start_ticks(pid), "shim": os.getpid(),
                                                     "shimStart": start_ticks(os.getpid())})
    print(to_json({"dir": state_dir, "pid": pid, "shim": os.getpid()}), flush=True)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # from here on nothing goes to the kubelet: it may die and come back

    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    writers = {fd: LogWriter(log, stream) for fd, stream in outputs.items()}
    channels = {fd: STDOUT if stream == "stdout" else STDERR for fd, stream in outputs.items()}
    for fd in (*writers, wake_r):
        poller.register(fd, select.POLLIN)
    status: int | None = None
    drain_until = 0.0
    while writers:
        timeout = None if status is None else max(0.0, drain_until - time.monotonic()) * 1000
        events = poller.poll(timeout)
        if status is None:
            reaped, code = os.waitpid(pid, os.WNOHANG)
            if reaped:
                status = code
                drain_until = time.monotonic() + 0.2  # background processes may still hold the pipes
        elif not events:
            break
        for fd, mask in events:
            if fd == wake_r:
                os.read(wake_r, 512)
                continue
            if attachments.handle(fd, mask) or fd not in writers:
                continue
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            except OSError:  # EIO from a pty's master: nothing holds the terminal any more
                data = b""
            if data:
                writers[fd].feed(data)
                attachments.broadcast(channels[fd], data)
            else:
                writers.pop(fd).close()
                poller.unregister(fd)
    for writer in writers.values():
        writer.close()
    attachments.close()
    if status is None:
        _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)  # negative: killed by that signal
    exit_status: dict[str, int | str] = {"exitCode": code, "finishedAt": rfc3339_nano(time.time())}
    if config is not None and (reason := isolate().exited(config, code)):
        exit_status["reason"] = reason
    write_json(os.path.join(state_dir, "exit.json"), exit_status)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--zygote"]:
        sys.exit(zygote(preload=sys.argv[2:] == ["linux"]))
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[5:]))
