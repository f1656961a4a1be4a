"""kubelet.probes: exec/httpGet/tcpSocket actions against real processes and sockets, hooks, and the prober
worker's thresholds and startup gating."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kubelet.probes import (
    ProbeKind,
    ProbeWorker,
    Result,
    resolve_port,
    run_exec,
    run_hook,
    run_http,
    run_probe,
    run_tcp,
)
from kubelet.runtime.cri import ExecTarget


def _target(tmp_path: Path, **extra: Any) -> ExecTarget:
    env = {"PATH": os.environ["PATH"], "WHO": "probe"}
    return ExecTarget(env=env, cwd=tmp_path, pod_ip="127.0.0.1", **extra)


async def test_exec_runs_in_the_container_environment(tmp_path: Path) -> None:
    (tmp_path / "marker").write_text("here")
    result, output = await run_exec(["sh", "-c", "echo $WHO; cat marker"], _target(tmp_path), 5)
    assert result is Result.SUCCESS and output == "probe\nhere"
    result, output = await run_exec(["sh", "-c", "echo bad >&2; exit 3"], _target(tmp_path), 5)
    assert result is Result.FAILURE and output == "bad\n"


async def test_exec_timeout_and_missing_binary(tmp_path: Path) -> None:
    result, output = await run_exec(["sleep", "5"], _target(tmp_path), 0.2)
    assert result is Result.FAILURE and output == 'command "sleep 5" timed out'
    result, output = await run_exec(["no-such-binary-here"], _target(tmp_path), 1)
    assert result is Result.FAILURE and "executable file not found" in output


async def test_exec_rewrites_mount_paths(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ok").write_text("")
    target = _target(tmp_path, rewrite=lambda s: s.replace("/data", str(tmp_path / "data")))
    assert (await run_exec(["test", "-f", "/data/ok"], target, 5))[0] is Result.SUCCESS


@pytest.fixture()
async def http_port() -> AsyncIterator[int]:
    async def handler(request: web.Request) -> web.Response:
        code = int(request.match_info["code"])
        if code == 302:
            raise web.HTTPFound("/200")
        return web.Response(status=code, text=request.headers.get("X-Probe", "") or request.headers["User-Agent"])

    app = web.Application()
    app.router.add_get("/{code}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield port
    await runner.cleanup()


async def test_http_get(tmp_path: Path, http_port: int) -> None:
    target = _target(tmp_path, ports=[{"name": "web", "containerPort": http_port}])
    assert await run_http({"port": http_port, "path": "/200"}, target, 2) == (Result.SUCCESS, "kube-probe/1.32")
    assert (await run_http({"port": "web", "path": "/302"}, target, 2))[0] is Result.SUCCESS
    assert await run_http({"port": http_port, "path": "/500"}, target, 2) == \
        (Result.FAILURE, "HTTP probe failed with statuscode: 500")
    headers = [{"name": "X-Probe", "value": "custom"}]
    assert (await run_http({"port": http_port, "path": "/204", "httpHeaders": headers}, target, 2))[0] is \
        Result.SUCCESS
    assert (await run_http({"port": "nope"}, target, 2))[0] is Result.UNKNOWN


async def test_http_and_tcp_connection_refused(tmp_path: Path, http_port: int) -> None:
    target = _target(tmp_path)
    closed = _free_port()
    result, message = await run_http({"port": closed, "path": "/"}, target, 2)
    assert result is Result.FAILURE and message == \
        f'Get "http://127.0.0.1:{closed}/": dial tcp 127.0.0.1:{closed}: connect: connection refused'
    assert await run_tcp({"port": closed}, target, 2) == \
        (Result.FAILURE, f"dial tcp 127.0.0.1:{closed}: connect: connection refused")
    assert await run_tcp({"port": http_port}, target, 2) == (Result.SUCCESS, "")


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_resolve_port() -> None:
    assert resolve_port(80, []) == 80
    assert resolve_port("8080", []) == 8080
    assert resolve_port("http", [{"name": "http", "containerPort": 9000}]) == 9000
    with pytest.raises(ValueError):
        resolve_port(0, [])


async def test_run_probe_dispatch_and_hooks(tmp_path: Path) -> None:
    assert (await run_probe({"exec": {"command": ["true"]}}, _target(tmp_path)))[0] is Result.SUCCESS
    assert (await run_probe({"grpc": {"port": 1}}, _target(tmp_path)))[0] is Result.UNKNOWN
    assert await run_hook({"exec": {"command": ["sh", "-c", "echo hooked > h"]}}, _target(tmp_path), 5) is None
    assert (tmp_path / "h").read_text() == "hooked\n"
    assert await run_hook({"exec": {"command": ["sh", "-c", "echo nope; exit 1"]}}, _target(tmp_path), 5) == "nope\n"
    assert await run_hook({"sleep": {"seconds": 0}}, _target(tmp_path), 5) is None


class Recorder:
    def __init__(self) -> None:
        self.results: list[tuple[ProbeKind, Result]] = []
        self.failures: list[tuple[ProbeKind, str]] = []
        self.started = True


def _worker(tmp_path: Path, kind: ProbeKind, probe: dict[str, Any], rec: Recorder) -> ProbeWorker:
    return ProbeWorker(kind, probe, _target(tmp_path), started=lambda: rec.started,
                       on_result=lambda k, r: rec.results.append((k, r)),
                       on_failure=lambda k, m: rec.failures.append((k, m)))


async def test_thresholds(tmp_path: Path) -> None:
    flag = tmp_path / "healthy"
    probe = {"exec": {"command": ["test", "-f", str(flag)]}, "failureThreshold": 2, "successThreshold": 2}
    rec = Recorder()
    worker = _worker(tmp_path, "readiness", probe, rec)
    assert await worker.probe_once() and rec.results == [] and rec.failures == [("readiness", "")]
    assert await worker.probe_once() and rec.results == [("readiness", Result.FAILURE)]
    flag.write_text("")
    assert await worker.probe_once() and rec.results == [("readiness", Result.FAILURE)]  # 1 of 2 successes
    assert await worker.probe_once() and rec.results[-1] == ("readiness", Result.SUCCESS)


async def test_liveness_failure_ends_the_worker(tmp_path: Path) -> None:
    rec = Recorder()
    worker = _worker(tmp_path, "liveness", {"exec": {"command": ["sh", "-c", "echo dead; exit 1"]},
                                            "failureThreshold": 1}, rec)
    assert not await worker.probe_once()
    assert rec.results == [("liveness", Result.FAILURE)] and rec.failures == [("liveness", "dead\n")]


async def test_startup_gates_the_others(tmp_path: Path) -> None:
    rec = Recorder()
    rec.started = False
    liveness = _worker(tmp_path, "liveness", {"exec": {"command": ["false"]}, "failureThreshold": 1}, rec)
    startup = _worker(tmp_path, "startup", {"exec": {"command": ["true"]}}, rec)
    assert await liveness.probe_once() and rec.results == []  # not probed before startup succeeds
    assert await startup.probe_once() and rec.results == [("startup", Result.SUCCESS)]
    rec.started = True
    assert not await startup.probe_once()  # done once started
    assert not await liveness.probe_once() and rec.results[-1] == ("liveness", Result.FAILURE)


async def test_run_honours_initial_delay_and_period(tmp_path: Path) -> None:
    rec = Recorder()
    worker = _worker(tmp_path, "readiness", {"exec": {"command": ["true"]}, "initialDelaySeconds": 0.3,
                                             "periodSeconds": 0.1}, rec)
    task = asyncio.create_task(worker.run())
    await asyncio.sleep(0.2)
    assert rec.results == []
    await asyncio.sleep(0.4)
    task.cancel()
    assert rec.results and rec.results[0] == ("readiness", Result.SUCCESS)
