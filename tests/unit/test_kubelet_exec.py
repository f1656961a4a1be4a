"""Exec on the kubelet's side: options, the error channel's Status, and sessions over a real websocket with real
processes (pipes and a pty), in v5 and v4."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from aiohttp import web
from multidict import MultiDict

from kubelet import exec as exec_
from kubelet.runtime.cri import ExecTarget
from support.websocket import channel_session, received


def test_parse_options() -> None:
    query = MultiDict([("command", "sh"), ("command", "-c"), ("command", "echo hi"), ("stdin", "true"),
                       ("stdout", "true"), ("stderr", "true"), ("tty", "true")])
    options = exec_.parse_options(query)
    assert options.command == ["sh", "-c", "echo hi"]
    assert options.stdin and options.stdout and options.tty
    assert not options.stderr  # with a tty, stderr is the terminal too
    assert exec_.parse_options(MultiDict([("command", "ls")])) == exec_.ExecOptions(["ls"])


def test_exit_status_as_kubelet_writes_it() -> None:
    assert exec_.exit_status(0, ["true"]) == {"metadata": {}, "status": "Success"}
    failed = exec_.exit_status(3, ["sh", "-c", "exit 3"])
    assert failed["status"] == "Failure" and failed["reason"] == "NonZeroExitCode"
    assert failed["details"] == {"causes": [{"reason": "ExitCode", "message": "3"}]}
    assert failed["message"] == ("command terminated with non-zero exit code: error executing command "
                                 "[sh -c exit 3], exit code 3")


async def session(tmp_path: Path, query: list[tuple[str, str]], protocol: str,
                  send: list[bytes]) -> tuple[dict[int, bytes], list[bytes]]:
    """Serve one exec over a real loopback websocket; returns the bytes per channel and the raw frames."""
    (tmp_path / "work").mkdir(exist_ok=True)
    target = ExecTarget({"PATH": os.environ["PATH"], "GREETING": "hello"}, tmp_path / "work", "127.0.0.1")

    async def handler(request: web.Request) -> web.StreamResponse:
        return await exec_.serve(request, target, None)

    async with channel_session(handler, query, protocol) as ws:
        assert ws.protocol == protocol
        for message in send:
            await ws.send_bytes(message)
        return await received(ws)


def status(channels: dict[int, bytes]) -> dict[str, Any]:
    return json.loads(channels[exec_.ERROR])


def test_exec_with_environment_working_dir_and_exit_code(tmp_path: Path) -> None:
    query = [("command", "sh"), ("command", "-c"), ("command", "echo $GREETING; pwd; echo oops >&2; exit 3"),
             ("stdout", "true"), ("stderr", "true")]
    channels, frames = asyncio.run(session(tmp_path, query, "v5.channel.k8s.io", []))
    assert frames[0] == bytes([exec_.STDOUT])  # the empty "streams are up" frame
    assert channels[exec_.STDOUT] == f"hello\n{tmp_path / 'work'}\n".encode()
    assert channels[exec_.STDERR] == b"oops\n"
    assert status(channels)["details"]["causes"][0] == {"reason": "ExitCode", "message": "3"}


def test_stdin_until_v5_close(tmp_path: Path) -> None:
    query = [("command", "cat"), ("stdin", "true"), ("stdout", "true"), ("stderr", "true")]
    send = [bytes([exec_.STDIN]) + b"one\n", bytes([exec_.STDIN]) + b"two\n", bytes([exec_.CLOSE, exec_.STDIN])]
    channels, _ = asyncio.run(session(tmp_path, query, "v5.channel.k8s.io", send))
    assert channels[exec_.STDOUT] == b"one\ntwo\n"
    assert status(channels) == {"metadata": {}, "status": "Success"}


def test_tty_shell(tmp_path: Path) -> None:
    query = [("command", "sh"), ("stdin", "true"), ("stdout", "true"), ("tty", "true")]
    send = [bytes([exec_.RESIZE]) + b'{"Width": 100, "Height": 40}',
            bytes([exec_.STDIN]) + b"stty size; tty; echo $((40 + 2)); exit 5\n"]
    channels, _ = asyncio.run(session(tmp_path, query, "v5.channel.k8s.io", send))
    out = channels[exec_.STDOUT].decode()
    assert "40 100" in out and "/dev/pts/" in out and "42" in out
    assert exec_.STDERR not in channels
    assert status(channels)["details"]["causes"][0]["message"] == "5"


def test_v4_and_unknown_command(tmp_path: Path) -> None:
    channels, _ = asyncio.run(session(tmp_path, [("command", "true")], "v4.channel.k8s.io", []))
    assert status(channels)["status"] == "Success"
    channels, _ = asyncio.run(session(tmp_path, [("command", "no-such-command")], "v4.channel.k8s.io", []))
    failed = status(channels)
    assert failed["reason"] == "InternalError"
    assert 'exec: "no-such-command": executable file not found in $PATH' in failed["message"]
