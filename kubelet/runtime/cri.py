"""What the kubelet needs from a container runtime, shaped like the CRI: the two runtimes implement it.

``process.ProcessRuntime`` (the default) runs each container as an OS process under a shim; ``docker.DockerRuntime``
(``--runtime docker``) runs real containers through a Docker engine. The pod worker, the kubelet's housekeeping,
probes, hooks and exec see only these protocols:

    Runtime.start / stop        the CRI's CreateContainer + StartContainer / StopContainer (with a grace period)
    Runtime.recover             ListContainers after a kubelet restart: every container it ran, to adopt
    Runtime.remove_pods         RemoveContainer (and their state) for pods the node no longer has
    Runtime.exec_target         ExecSync / Exec: where a probe, hook or ``kubectl exec`` of one container runs
    Runtime.attach_socket       Attach: where the container's stdin and output are offered (``kubectl attach``)
    Container.wait              ContainerStatus: the exit code once the container exited

Image pulls (PullImage, ListImages) go through an ``images.ImageStore`` (``docker.DockerImages`` for the engine),
whose ``ensure`` gives the kubelet's Pulling/Pulled events. Logs are not a call: a runtime writes each container's
output to the kubelet's per-container log file in the CRI format (``<time> <stream> <F|P> <text>``), which the
kubelet's log endpoint serves.

``recover`` and ``remove_pods`` are synchronous (the kubelet calls them from its constructor and its housekeeping
pass); a runtime behind a socket reads its state once before (``DockerRuntime.connect``) and removes in the
background.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass
class ContainerMeta:
    """What the kubelet labels a container with (the CRI's labels and annotations), kept with it on disk."""

    pod_uid: str = ""
    pod_namespace: str = ""
    pod_name: str = ""
    restart_count: int = 0
    last_state: dict[str, Any] | None = None


class InContainer(Protocol):
    """A runtime's way into a running container (``docker.DockerExec``): the CRI's ExecSync."""

    async def run(self, argv: list[str], timeout: float | None) -> tuple[int, bytes, bytes]:
        """Run ``argv`` inside the container to its end: (exit code, stdout, stderr); ``TimeoutError`` after
        ``timeout`` seconds, ``FileNotFoundError`` when there is no such executable."""
        ...


@dataclass
class ExecTarget:
    """Where a probe or hook runs: the container's environment, working directory, pod IP and ports; with
    ``container`` (a runtime with real containers), exec commands run inside the container instead."""

    env: dict[str, str]
    cwd: Path
    pod_ip: str
    ports: list[dict[str, Any]] = field(default_factory=list)
    rewrite: Callable[[str], str] = str  # the container's view of mount paths (``volumes.Mounts.rewrite``)
    container: InContainer | None = None


class Container(Protocol):
    """One container instance, running or exited."""

    name: str
    id: str
    started_at: str  # RFC 3339, as status.containerStatuses[].state.running.startedAt
    meta: ContainerMeta  # the pod it belongs to, its restart count and last state (kept by the runtime)
    env: dict[str, str]
    cwd: Path | None
    exit_known: bool  # False: it vanished and nobody recorded how (reported as 137, ContainerStatusUnknown)

    @property
    def container_id(self) -> str:
        """``<runtime>://<id>``, as a pod status names the instance."""
        ...

    @property
    def returncode(self) -> int | None:
        """The exit code once known (negative: killed by that signal), else ``None``."""
        ...

    async def wait(self) -> int:
        """The exit code once the container exited (safe to call from several tasks, and to cancel)."""
        ...


class Runtime(Protocol):
    # True: volumes are mounted at their mountPath inside the container, so the kubelet rewrites no paths and
    # passes only the pod's own variables (the image supplies PATH, HOME...). False: the process runtime's view.
    bind_mounts: bool
    # True: each pod gets its own IP from the Node's podCIDR (``podips``), its processes bind it. False: the
    # runtime's own networking (Docker's host network: pods have the host IP).
    pod_ips: bool

    async def start(self, container: dict[str, Any], workdir: Path, env: dict[str, str], log_path: Path,
                    meta: ContainerMeta | None = None) -> Container:
        """Create and start ``container`` (a pod spec container, ``$(VAR)`` expanded); its output goes to
        ``log_path``; ``workdir`` is the kubelet's directory for it (volume mounts are linked there). Raises
        ``OSError`` or ``RuntimeError`` when it cannot start (CreateContainerError)."""
        ...

    async def stop(self, container: Container, grace: float) -> int:
        """Ask the container to stop (SIGTERM), kill it after ``grace`` seconds; returns its exit code."""
        ...

    def recover(self) -> Sequence[Container]:
        """Every container this runtime ran for the kubelet before it restarted (running or exited)."""
        ...

    def remove_pods(self, keep: set[str]) -> list[str]:
        """Kill and remove the containers of every pod whose UID is not in ``keep``; returns those UIDs."""
        ...

    def exec_target(self, container: Container, target: ExecTarget) -> ExecTarget:
        """Where exec probes, hooks and ``kubectl exec`` of ``container`` run (``target``: the pod's view)."""
        ...

    def attach_socket(self, container: Container) -> Path | None:
        """The unix socket (``shim.Attachments``' protocol) that attaches to ``container``'s stdin and output;
        ``None``: this runtime cannot attach."""
        ...
