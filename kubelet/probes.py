"""Probes and lifecycle hooks: liveness, readiness and startup workers, and the exec/httpGet/tcpSocket actions.

An action runs against an ``ExecTarget`` — where the container lives: its environment, working directory, pod IP
and ports. ``exec`` runs the command as a process with the container's environment in its working directory
(exit 0 = success; a process runtime has no container to ``exec`` into; with ``ExecTarget.container``, as
``--runtime docker`` gives, the command runs inside the container), ``httpGet`` GETs
``scheme://host:port/path`` (host defaults to the pod IP; 200–399 = success), ``tcpSocket`` opens a connection.

A ``ProbeWorker`` is Kubernetes' prober worker for one probe of one container *instance*: it probes every
``periodSeconds`` once ``initialDelaySeconds`` have passed since the container started, counts consecutive
results against ``successThreshold``/``failureThreshold`` and reports a result only when the threshold flips
it. Until the startup probe succeeds, liveness and readiness do not run. A failed liveness or startup result
ends the worker (the container will be restarted, and the new instance gets new workers). Every failed attempt
is reported too, for the ``Unhealthy`` event ("Liveness probe failed: ..."). The pod worker owns these tasks and
cancels them when the container stops or the pod worker ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import signal
from collections.abc import Callable, Mapping
from typing import Any, Literal

import aiohttp

from .runtime.cri import ExecTarget, InContainer

ProbeKind = Literal["liveness", "readiness", "startup"]
PROBE_KINDS: tuple[ProbeKind, ...] = ("startup", "liveness", "readiness")
MAX_OUTPUT = 10 * 1024  # as the exec prober keeps at most 10 KiB of output
USER_AGENT = "kube-probe/1.32"


class Result(enum.Enum):
    SUCCESS = "Success"
    FAILURE = "Failure"
    UNKNOWN = "Unknown"  # the probe could not run (bad port, unsupported action): thrown away


# --- actions ---------------------------------------------------------------------------------------------------


async def run_exec(command: list[str], target: ExecTarget, timeout: float) -> tuple[Result, str]:
    if not command:
        return Result.UNKNOWN, "exec: no command"
    if target.container is not None:
        return await _run_in_container([target.rewrite(str(part)) for part in command], target.container, timeout)
    argv = target.argv(command)
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=str(target.cwd), env=target.env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
    except FileNotFoundError:
        return Result.FAILURE, f'exec: "{argv[0]}": executable file not found in $PATH'
    except OSError as err:
        return Result.FAILURE, f'exec: "{argv[0]}": {err.strerror}'
    try:
        output, _ = await asyncio.wait_for(process.communicate(), timeout)
    except (TimeoutError, asyncio.CancelledError) as err:
        _kill_group(process.pid)
        await process.wait()
        if isinstance(err, asyncio.CancelledError):
            raise
        return Result.FAILURE, f'command "{" ".join(command)}" timed out'
    text = output[:MAX_OUTPUT].decode(errors="replace")
    return (Result.SUCCESS if process.returncode == 0 else Result.FAILURE), text


async def _run_in_container(argv: list[str], container: InContainer, timeout: float) -> tuple[Result, str]:
    try:
        code, out, err = await container.run(argv, timeout)
    except FileNotFoundError:
        return Result.FAILURE, f'exec: "{argv[0]}": executable file not found in $PATH'
    except TimeoutError:
        return Result.FAILURE, f'command "{" ".join(argv)}" timed out'
    except OSError as error:
        return Result.UNKNOWN, f"exec: {error}"
    text = (out + err)[:MAX_OUTPUT].decode(errors="replace")
    return (Result.SUCCESS if code == 0 else Result.FAILURE), text


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def resolve_port(port: int | str, ports: list[dict[str, Any]]) -> int:
    """An ``IntOrString`` port: a number, or the name of one of the container's ports."""
    if isinstance(port, str) and not port.isdigit():
        for candidate in ports:
            if candidate.get("name") == port:
                return int(candidate["containerPort"])
        raise ValueError(f"port {port} not found")
    number = int(port)
    if not 0 < number < 65536:
        raise ValueError(f"invalid port number: {number}")
    return number


async def run_http(action: Mapping[str, Any], target: ExecTarget, timeout: float) -> tuple[Result, str]:
    try:
        port = resolve_port(action.get("port", 0), target.ports)
    except ValueError as err:
        return Result.UNKNOWN, str(err)
    host = action.get("host") or target.pod_ip
    path = action.get("path") or "/"
    url = f"{str(action.get('scheme') or 'HTTP').lower()}://{host}:{port}{path if path.startswith('/') else '/' + path}"
    headers = {"User-Agent": USER_AGENT, "Accept": "*/*"}
    headers.update({h["name"]: h["value"] for h in action.get("httpHeaders") or []})
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session, \
                session.get(url, headers=headers, ssl=False, max_redirects=10) as response:
            body = (await response.content.read(MAX_OUTPUT)).decode(errors="replace")
            if 200 <= response.status < 400:
                return Result.SUCCESS, body
            return Result.FAILURE, f"HTTP probe failed with statuscode: {response.status}"
    except TimeoutError:
        return Result.FAILURE, (f'Get "{url}": context deadline exceeded '
                                '(Client.Timeout exceeded while awaiting headers)')
    except aiohttp.ClientConnectorError as err:
        return Result.FAILURE, f'Get "{url}": dial tcp {host}:{port}: connect: {_reason(err.os_error)}'
    except aiohttp.ClientError as err:
        return Result.FAILURE, f'Get "{url}": {err}'


async def run_tcp(action: Mapping[str, Any], target: ExecTarget, timeout: float) -> tuple[Result, str]:
    try:
        port = resolve_port(action.get("port", 0), target.ports)
    except ValueError as err:
        return Result.UNKNOWN, str(err)
    host = action.get("host") or target.pod_ip
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except TimeoutError:
        return Result.FAILURE, f"dial tcp {host}:{port}: i/o timeout"
    except OSError as err:
        return Result.FAILURE, f"dial tcp {host}:{port}: connect: {_reason(err)}"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return Result.SUCCESS, ""


def _reason(err: OSError) -> str:
    return (os.strerror(err.errno) if err.errno else str(err)).lower()


async def run_probe(probe: Mapping[str, Any], target: ExecTarget) -> tuple[Result, str]:
    """One attempt of a probe, bounded by its ``timeoutSeconds``."""
    timeout = float(probe.get("timeoutSeconds") or 1)
    if probe.get("exec") is not None:
        return await run_exec(list(probe["exec"].get("command") or []), target, timeout)
    if probe.get("httpGet") is not None:
        return await run_http(probe["httpGet"], target, timeout)
    if probe.get("tcpSocket") is not None:
        return await run_tcp(probe["tcpSocket"], target, timeout)
    return Result.UNKNOWN, "probe has no supported action (exec, httpGet, tcpSocket)"


async def run_hook(handler: Mapping[str, Any], target: ExecTarget, timeout: float) -> str | None:
    """A postStart/preStop handler (exec, httpGet or sleep); returns ``None`` on success, else the failure."""
    if handler.get("exec") is not None:
        result, output = await run_exec(list(handler["exec"].get("command") or []), target, timeout)
    elif handler.get("httpGet") is not None:
        result, output = await run_http(handler["httpGet"], target, timeout)
    elif handler.get("sleep") is not None:
        await asyncio.sleep(min(float(handler["sleep"].get("seconds") or 0), timeout))
        return None
    else:
        return "lifecycle handler has no supported action (exec, httpGet, sleep)"
    return None if result is Result.SUCCESS else (output or result.value)


# --- the worker ------------------------------------------------------------------------------------------------


class ProbeWorker:
    """Probes one container instance periodically and reports threshold-crossing results (see module doc)."""

    def __init__(self, kind: ProbeKind, probe: Mapping[str, Any], target: ExecTarget, *,
                 started: Callable[[], bool], on_result: Callable[[ProbeKind, Result], None],
                 on_failure: Callable[[ProbeKind, str], None]) -> None:
        self.kind = kind
        self.probe = probe
        self.target = target
        self.started = started
        self.on_result = on_result
        self.on_failure = on_failure
        self.last: Result | None = None
        self.run_length = 0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        period = float(self.probe.get("periodSeconds") or 10)
        while True:
            due = loop.time() - began >= float(self.probe.get("initialDelaySeconds") or 0)
            if due and not await self.probe_once():
                return
            await asyncio.sleep(period)

    async def probe_once(self) -> bool:
        """One round of ``doProbe``; returns whether the worker goes on."""
        if self.kind == "startup" and self.started():
            return False  # started: this instance's startup probe is done
        if self.kind != "startup" and not self.started():
            return True  # liveness and readiness wait for the startup probe
        result, output = await run_probe(self.probe, self.target)
        if result is Result.UNKNOWN:
            return True
        if result is Result.FAILURE:
            self.on_failure(self.kind, output)
        if result is self.last:
            self.run_length += 1
        else:
            self.last, self.run_length = result, 1
        threshold = self.probe.get("failureThreshold" if result is Result.FAILURE else "successThreshold") or \
            (3 if result is Result.FAILURE else 1)
        if self.run_length < int(threshold):
            return True
        self.on_result(self.kind, result)
        return not (self.kind in ("liveness", "startup") and result is Result.FAILURE)
