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

Standard library only and no ``site`` (``-I -S``), and only modules that load without Python code of their own:
``json`` (which pulls in ``re``, ``enum`` and ``collections``) and ``signal`` (``enum`` again) were two thirds of
its start-up, paid once per container start; it writes its few flat JSON objects itself (``to_json``) and uses
``_signal``, the C module ``signal`` wraps. It starts in ~6 ms and holds ~8 MB.
"""

import _signal  # signal's C core: ``import signal`` would load enum (3 ms per container start)
import os
import select
import sys
import time

MAX_LINE = 16 * 1024  # a longer line is split into partial (P) entries, as the CRI log writer does


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


def spawn(cwd: str, argv: list[str], out_w: int, err_w: int) -> int:
    """Fork and exec the container in its own session; raise ``OSError`` if it cannot be executed."""
    status_r, status_w = os.pipe()  # close-on-exec: EOF without data means the exec succeeded
    pid = os.fork()
    if pid == 0:  # the container
        try:
            os.setsid()
            for sig in (_signal.SIGPIPE, _signal.SIGXFSZ, _signal.SIGCHLD, _signal.SIGINT, _signal.SIGTERM):
                _signal.signal(sig, _signal.SIG_DFL)
            _signal.set_wakeup_fd(-1)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            os.chdir(cwd)
            os.execvpe(argv[0], argv, os.environ)
        except OSError as err:
            os.write(status_w, f"{err.errno or 0} {err.strerror or err}".encode())
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


def read_spec(state_dir: str) -> tuple[str, str, list[str], dict[str, str]]:
    """``DIR/spec`` as the kubelet writes it for the zygote: NUL-separated cwd, log path, the argument count, the
    arguments, then ``NAME=value`` environment entries."""
    with open(os.path.join(state_dir, "spec"), "rb") as f:
        fields = [os.fsdecode(field) for field in f.read().split(b"\0")]
    argc = int(fields[2])
    argv, env = fields[3:3 + argc], fields[3 + argc:]
    return fields[0], fields[1], argv, dict(entry.partition("=")[::2] for entry in env if entry)


def zygote() -> int:
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

    _signal.signal(_signal.SIGCHLD, reap)
    for sig in (_signal.SIGINT, _signal.SIGHUP, _signal.SIGTERM):
        _signal.signal(sig, _signal.SIG_IGN)  # stopping the kubelet's process group must not stop the shims' parent
    buffer = b""
    while chunk := os.read(0, 65536):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line:
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
        cwd, log_path, argv, env = read_spec(state_dir)
        os.environ.clear()
        os.environ.update(env)
        code = main(state_dir, cwd, log_path, argv)
    except BaseException as error:  # noqa: BLE001 - the kubelet waits for an answer: it must get one
        print(to_json({"dir": state_dir, "error": f"the container shim failed: {error}", "errno": 0}), flush=True)
    finally:
        os._exit(code)


def main(state_dir: str, cwd: str, log_path: str, argv: list[str]) -> int:
    _signal.signal(_signal.SIGCHLD, lambda *_: None)  # wakes poll() through the wakeup fd
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    _signal.set_wakeup_fd(wake_w)
    for sig in (_signal.SIGINT, _signal.SIGHUP, _signal.SIGTERM):
        _signal.signal(sig, _signal.SIG_IGN)  # only the container's own exit ends the shim
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        pid = spawn(cwd, argv, out_w, err_w)
    except OSError as err:
        print(to_json({"dir": state_dir, "error": err.strerror or str(err), "errno": err.errno or 0}), flush=True)
        return 1
    os.close(out_w)
    os.close(err_w)
    write_json(os.path.join(state_dir, "pid.json"), {"pid": pid, "start": start_ticks(pid), "shim": os.getpid(),
                                                     "shimStart": start_ticks(os.getpid())})
    print(to_json({"dir": state_dir, "pid": pid, "shim": os.getpid()}), flush=True)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # from here on nothing goes to the kubelet: it may die and come back

    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    writers = {out_r: LogWriter(log, "stdout"), err_r: LogWriter(log, "stderr")}
    poller = select.poll()
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
        for fd, _ in events:
            if fd == wake_r:
                os.read(wake_r, 512)
                continue
            data = os.read(fd, 65536)
            if data:
                writers[fd].feed(data)
            else:
                writers.pop(fd).close()
                poller.unregister(fd)
    for writer in writers.values():
        writer.close()
    if status is None:
        _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)  # negative: killed by that signal
    write_json(os.path.join(state_dir, "exit.json"), {"exitCode": code, "finishedAt": rfc3339_nano(time.time())})
    return 0


if __name__ == "__main__":
    sys.exit(zygote() if sys.argv[1:] == ["--zygote"] else main(*sys.argv[1:4], sys.argv[5:]))
