"""kubelet.shim: its JSON without ``json``, a start-up that loads no pure-Python module of the stdlib, and the
container's stdin, tty and attach socket."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubelet.runtime import shim
from kubelet.runtime.cri import ContainerMeta
from kubelet.runtime.process import SHIM, ProcessRuntime


@pytest.mark.parametrize("value", [
    {"pid": 1234},
    {"error": 'no such "file"\\dir\n\ttab', "errno": 2},
    {"finishedAt": "2024-01-01T00:00:00.000000Z", "exitCode": -9},
    {"error": "é ✓ 𝄞 \x00\x7f"},
])
def test_to_json_is_json(value: dict[str, int | str]) -> None:
    assert json.loads(shim.to_json(value)) == value


def test_the_shim_starts_without_json_or_enum() -> None:
    """What makes a container start cheap: the shim's imports are C modules only."""
    code = (f"import sys; path = {str(SHIM)!r}; exec(compile(open(path).read(), path, 'exec'), {{'__name__': 'x'}}); "
            "print(' '.join(m for m in ('json', 're', 'enum', 'signal') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_the_zygote_forks_shims_that_outlive_it(tmp_path: Path) -> None:
    """``shim.py --zygote``: each request line names a state directory whose ``spec`` says what to run; the forked
    shim answers with the pids, runs the container with exactly the spec's environment, logs its output in the
    CRI format and records its exit; at EOF the zygote waits for its shims, then exits."""
    zygote = subprocess.Popen([sys.executable, "-I", "-S", str(SHIM), "--zygote"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env={}, start_new_session=True)
    assert zygote.stdin is not None and zygote.stdout is not None
    answers = []
    for name, argv in (("ok", ["sh", "-c", 'echo "$GREETING from $PWD"; exit 3']), ("missing", ["no-such-cmd"])):
        state = tmp_path / name
        state.mkdir()
        fields = [str(tmp_path), str(state / "c.log"), "", str(len(argv)), *argv, "GREETING=hi there",
                  f"PATH={os.environ['PATH']}"]
        (state / "spec").write_bytes(b"\0".join(f.encode() for f in fields))
        zygote.stdin.write(str(state).encode() + b"\n")
        zygote.stdin.flush()
        answers.append(json.loads(zygote.stdout.readline()))
    ok, missing = answers
    assert ok["dir"] == str(tmp_path / "ok") and ok["shim"] != zygote.pid and ok["pid"] != ok["shim"]
    assert (missing["dir"], missing["errno"]) == (str(tmp_path / "missing"), 2)
    zygote.stdin.close()  # the kubelet went away
    assert zygote.wait(10) == 0
    zygote.stdout.close()
    assert json.loads((tmp_path / "ok" / "exit.json").read_text())["exitCode"] == 3
    line = (tmp_path / "ok" / "c.log").read_text().splitlines()[0]
    assert line.split(" ", 3)[1:] == ["stdout", "F", f"hi there from {tmp_path}"]


async def test_the_runtime_starts_a_new_zygote_when_its_zygote_died(tmp_path: Path) -> None:
    runtime = ProcessRuntime(tmp_path / "containers")
    spec = {"name": "c", "image": "busybox", "command": ["sh", "-c", "exit 7"]}
    env = {"PATH": os.environ["PATH"]}
    first = await runtime.start(spec, tmp_path / "w1", env, tmp_path / "1.log", ContainerMeta(pod_uid="u1"))
    assert await asyncio.wait_for(first.wait(), 10) == 7
    zygote = runtime._zygote._proc
    assert zygote is not None
    zygote.kill()
    await zygote.wait()
    second = await runtime.start(spec, tmp_path / "w2", env, tmp_path / "2.log", ContainerMeta(pod_uid="u2"))
    assert await asyncio.wait_for(second.wait(), 10) == 7
    assert runtime._zygote._proc is not zygote


class Zygote:
    """A shim zygote and the containers it starts, each in its own state directory under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", str(SHIM), "--zygote"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env={}, start_new_session=True)

    def start(self, name: str, stdio: str, argv: list[str]) -> Path:
        state = self.root / name
        state.mkdir()
        fields = [str(self.root), str(state / "c.log"), stdio, str(len(argv)), *argv, f"PATH={os.environ['PATH']}"]
        (state / "spec").write_bytes(b"\0".join(f.encode() for f in fields))
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(str(state).encode() + b"\n")
        self.proc.stdin.flush()
        assert "pid" in json.loads(self.proc.stdout.readline())
        return state

    def close(self) -> None:
        """Wait for the zygote (so for its shims); a container a failed test left running is killed."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            for pids in self.root.glob("*/pid.json"):
                os.killpg(json.loads(pids.read_text())["pid"], 9)
            self.proc.wait(10)
        self.proc.stdout.close()


@pytest.fixture
def zygote(tmp_path: Path) -> Iterator[Zygote]:
    z = Zygote(tmp_path)
    yield z
    z.close()


def attach(state: Path) -> socket.socket:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    client.settimeout(10)
    client.connect(str(state / shim.ATTACH_SOCKET))
    return client


def received(client: socket.socket) -> list[tuple[int, bytes]]:
    """Every message until the shim hangs up, as (channel, payload), adjacent ones of a channel joined."""
    out: list[tuple[int, bytes]] = []
    while message := client.recv(shim.MAX_MESSAGE):
        if out and out[-1][0] == message[0]:
            out[-1] = (message[0], out[-1][1] + message[1:])
        else:
            out.append((message[0], message[1:]))
    client.close()
    return out


def exit_code(state: Path) -> int:
    return int(json.loads((state / "exit.json").read_text())["exitCode"])


def test_stdin_once_closes_the_containers_stdin_when_the_client_ends_its_stdin(zygote: Zygote) -> None:
    """``stdin`` + ``stdinOnce`` without a tty: what an attached client writes reaches the container, its output
    comes back on its channel (and goes to the log), and the client's end of stdin is the container's EOF."""
    state = zygote.start("cat", "stdin,stdinOnce", ["sh", "-c", "cat; echo done >&2"])
    client = attach(state)
    client.send(bytes([shim.STDIN]) + b"one\n")
    client.send(bytes([shim.STDIN]) + b"two\n")
    client.send(bytes([shim.CLOSE, shim.STDIN]))
    assert received(client) == [(shim.STDOUT, b"one\ntwo\n"), (shim.STDERR, b"done\n")]
    zygote.close()
    assert exit_code(state) == 0
    log = [line.split(" ", 3)[1:] for line in (state / "c.log").read_text().splitlines()]
    assert log == [["stdout", "F", "one"], ["stdout", "F", "two"], ["stderr", "F", "done"]]
    assert not (state / shim.ATTACH_SOCKET).exists()


def test_without_stdin_once_the_end_of_a_clients_stdin_ends_only_its_attach(zygote: Zygote) -> None:
    state = zygote.start("keep", "stdin", ["cat"])
    first = attach(state)
    first.send(bytes([shim.STDIN]) + b"kept\n")
    assert first.recv(shim.MAX_MESSAGE) == bytes([shim.STDOUT]) + b"kept\n"
    first.send(bytes([shim.CLOSE, shim.STDIN]))
    assert received(first) == []
    second = attach(state)  # stdin is still open: a later client writes to the same process
    second.send(bytes([shim.STDIN]) + b"again\n")
    assert second.recv(shim.MAX_MESSAGE) == bytes([shim.STDOUT]) + b"again\n"
    os.kill(json.loads((state / "pid.json").read_text())["pid"], 15)
    assert received(second) == []
    zygote.close()
    assert exit_code(state) == -15


def test_a_container_without_stdin_reads_eof_and_can_be_attached_for_output(zygote: Zygote) -> None:
    # Attach sees output written from then on: the line repeats, so the client gets it whenever it arrives.
    state = zygote.start("out", "", ["sh", "-c", "cat; read line; rc=$?; while :; do echo after-$rc; sleep 0.1; done"])
    client = attach(state)
    assert client.recv(shim.MAX_MESSAGE) == bytes([shim.STDOUT]) + b"after-1\n"
    client.send(bytes([shim.STDIN]) + b"ignored\n")  # nowhere to go
    client.close()
    os.killpg(json.loads((state / "pid.json").read_text())["pid"], 9)
    zygote.close()
    assert exit_code(state) == -9


def test_a_tty_container_gets_a_terminal_that_resizes(zygote: Zygote) -> None:
    """``tty``: the container's stdin/stdout/stderr are a pty's slave and its controlling terminal; the shim
    holds the master, so the client's input is echoed, output comes as stdout only, resize sets its size."""
    state = zygote.start("tty", "stdin,tty", ["sh"])
    client = attach(state)
    client.send(bytes([shim.RESIZE]) + b"132 43")
    client.send(bytes([shim.STDIN]) + b"test -t 0 && echo tty-$((6*7)); stty size; echo err >&2; exit 5\n")
    messages = received(client)
    assert [channel for channel, _ in messages] == [shim.STDOUT]
    text = messages[0][1].decode()
    assert "tty-42\r\n" in text and "43 132\r\n" in text and "err\r\n" in text
    zygote.close()
    assert exit_code(state) == 5
    assert all(" stdout " in line for line in (state / "c.log").read_text().splitlines())
