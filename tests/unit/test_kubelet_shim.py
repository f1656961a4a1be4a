"""kubelet.shim: its JSON without ``json``, and a start-up that loads no pure-Python module of the stdlib."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubelet import shim
from kubelet.runtime import SHIM, ContainerMeta, ProcessRuntime


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
        fields = [str(tmp_path), str(state / "c.log"), str(len(argv)), *argv, "GREETING=hi there",
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
