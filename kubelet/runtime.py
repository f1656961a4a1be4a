"""The process runtime: each container is a real OS process in its own process group.

A container's command line follows Kubernetes' rule over the local images' ENTRYPOINT and CMD (``IMAGES``;
``nginx`` is a stand-in: Python's http.server on a free port, not nginx); it runs with the pod's environment in its own
working directory under the kubelet's root dir. stdout and stderr go to a per-container log file, one line
per output line, prefixed with an RFC 3339 timestamp and the stream name (the CRI log format), so logs can be
served with or without timestamps.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

# The local images' ENTRYPOINT and CMD, as their Dockerfiles set them: ``command`` replaces the entrypoint,
# ``args`` replaces the CMD (busybox and alpine: no entrypoint, CMD ["sh"]; python: CMD ["python3"]).
IMAGES: dict[str, tuple[list[str], list[str]]] = {
    "busybox": ([], ["sh"]), "alpine": ([], ["sh"]), "python": ([], [sys.executable]),
    # A stand-in, not nginx: Python's http.server on a free port (pods share the host's network here, so a
    # fixed port 80 would clash between replicas).
    "nginx": ([], [sys.executable, "-m", "http.server", "0"]),
}


def image_name(image: str) -> str:
    """``docker.io/library/busybox:1.36`` → ``busybox``."""
    name = image.rsplit("/", 1)[-1]
    return name.split("@", 1)[0].split(":", 1)[0]


def container_argv(container: dict[str, Any]) -> list[str]:
    """Kubernetes' rule: ``command`` overrides the image's ENTRYPOINT, ``args`` its CMD."""
    entrypoint, cmd = IMAGES.get(image_name(container.get("image", "")), ([], []))
    command = list(container.get("command") or []) or list(entrypoint)
    args = list(container.get("args") or []) if container.get("args") or container.get("command") else list(cmd)
    argv = command + args
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable  # the "python" image is this machine's interpreter
    return argv


def now_rfc3339_nano() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class ContainerProcess:
    """One running (or finished) container process."""

    name: str
    process: asyncio.subprocess.Process
    started_at: str
    log_path: Path
    pumps: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    async def wait(self) -> int:
        code = await self.process.wait()
        # Shielded: a caller that stops waiting must not cancel the log pumps.
        await asyncio.gather(*(asyncio.shield(p) for p in self.pumps), return_exceptions=True)
        return code


async def _pump(stream: asyncio.StreamReader, name: str, log: TextIO) -> None:
    while True:
        line = await stream.readline()
        if not line:
            return
        text = line.decode(errors="replace").rstrip("\n")
        log.write(f"{now_rfc3339_nano()} {name} F {text}\n")
        log.flush()


class ProcessRuntime:
    """Starts and stops container processes; knows nothing about pods' API objects beyond their specs."""

    async def start(self, container: dict[str, Any], workdir: Path, env: dict[str, str],
                    log_path: Path) -> ContainerProcess:
        argv = container_argv(container)
        if not argv:
            raise RuntimeError(f'image "{container.get("image")}" has no entrypoint: set command')
        cwd = workdir / container["workingDir"].lstrip("/") if container.get("workingDir") else workdir
        cwd.mkdir(parents=True, exist_ok=True)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
        )
        log = open(log_path, "a", encoding="utf-8")
        assert process.stdout is not None and process.stderr is not None
        pumps = [asyncio.create_task(_pump(process.stdout, "stdout", log)),
                 asyncio.create_task(_pump(process.stderr, "stderr", log))]
        pumps[-1].add_done_callback(lambda _: pumps[0].add_done_callback(lambda _: log.close()))
        return ContainerProcess(container["name"], process, now_rfc3339_nano()[:19] + "Z", log_path, pumps)

    async def stop(self, cp: ContainerProcess, grace: float) -> int:
        """SIGTERM to the container's process group, SIGKILL after ``grace`` seconds; returns the exit code."""
        if cp.process.returncode is None:
            _signal_group(cp.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(cp.process.wait()), max(grace, 0))
            except TimeoutError:
                _signal_group(cp.pid, signal.SIGKILL)
        return await cp.wait()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
