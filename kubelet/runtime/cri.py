"""What the kubelet needs from a container runtime, shaped like the CRI: the runtimes implement it.

``linux.LinuxRuntime`` runs each container as a Linux container (namespaces, an image's root file system, cgroups)
and ``process.ProcessRuntime`` as an OS process, both under a shim; ``docker.DockerRuntime`` (``--runtime docker``)
runs real containers through a Docker engine. The pod worker, the kubelet's housekeeping,
probes, hooks and exec see only these protocols:

    Runtime.start / stop        the CRI's CreateContainer + StartContainer / StopContainer (with a grace period)
    Runtime.recover             ListContainers after a kubelet restart: every container it ran, to adopt
    Runtime.remove_pods         RemoveContainer (and their state) for pods the node no longer has
    Runtime.exec_target         ExecSync / Exec: where a probe, hook or ``kubectl exec`` of one container runs
    Runtime.attach_socket       Attach: where the container's stdin and output are offered (``kubectl attach``)
    Runtime.shutdown            the kubelet stops: StopPodSandbox for every pod (the linux runtime's sandboxes)
    ContainerMeta.sandbox       RunPodSandbox's PodSandboxConfig (hostname, namespaces, security, /etc/hosts), which
                                a runtime with sandboxes uses when it starts a pod's first container
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

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass
class SandboxConfig:
    """The CRI's PodSandboxConfig in the fields a runtime with namespaces uses (``from_pod``)."""

    hostname: str = ""
    pod_ip: str = ""
    host_network: bool = False
    host_pid: bool = False
    host_ipc: bool = False
    share_pid: bool = False  # shareProcessNamespace: one PID namespace for the pod, the sandbox its PID 1
    security: dict[str, Any] = field(default_factory=dict)  # the pod's securityContext
    hosts: str = ""  # the kubelet-managed /etc/hosts
    resolv_conf: str | None = None  # the pod's /etc/resolv.conf (``dnsconfig.pod_dns``); None: the host's

    @classmethod
    def from_pod(cls, pod: dict[str, Any], pod_ip: str, *, resolv_conf: str | None = None,
                 cluster_domain: str = "cluster.local") -> SandboxConfig:
        spec, meta = pod.get("spec") or {}, pod["metadata"]
        hostname = (spec.get("hostname") or meta["name"])[:63].rstrip("-.")
        hosts = node_hosts(pod) if spec.get("hostNetwork") else managed_hosts(pod, hostname, pod_ip, cluster_domain)
        return cls(hostname, pod_ip, bool(spec.get("hostNetwork")), bool(spec.get("hostPID")),
                   bool(spec.get("hostIPC")), bool(spec.get("shareProcessNamespace")),
                   dict(spec.get("securityContext") or {}), hosts, resolv_conf)


def managed_hosts(pod: dict[str, Any], hostname: str, pod_ip: str, cluster_domain: str = "cluster.local") -> str:
    """The kubelet's ``/etc/hosts`` for a pod (``managedHostsFileContent``): localhost, the pod's IP with its
    hostname (and ``<hostname>.<subdomain>.<ns>.svc.<cluster domain>`` with ``subdomain``), then ``hostAliases``."""
    spec, namespace = pod.get("spec") or {}, pod["metadata"].get("namespace", "default")
    lines = ["# Kubernetes-managed hosts file.", "127.0.0.1\tlocalhost",
             "::1\tlocalhost ip6-localhost ip6-loopback", "fe00::0\tip6-localnet", "fe00::0\tip6-mcastprefix",
             "fe00::1\tip6-allnodes", "fe00::2\tip6-allrouters"]
    if spec.get("subdomain") and cluster_domain:
        lines.append(f"{pod_ip}\t{hostname}.{spec['subdomain']}.{namespace}.svc.{cluster_domain}\t{hostname}")
    else:
        lines.append(f"{pod_ip}\t{hostname}")
    return "\n".join(lines) + "\n" + host_aliases(spec)


def node_hosts(pod: dict[str, Any]) -> str:
    """A ``hostNetwork`` pod's ``/etc/hosts`` (``nodeHostsFileContent``): the node's, then ``hostAliases``."""
    try:
        text = Path("/etc/hosts").read_text()
    except OSError:
        text = ""
    return (text if text.endswith("\n") or not text else text + "\n") + host_aliases(pod.get("spec") or {})


def host_aliases(spec: dict[str, Any]) -> str:
    """The ``hostAliases`` section of a pod's hosts file ("" without any)."""
    aliases = spec.get("hostAliases") or []
    if not aliases:
        return ""
    lines = ["", "# Entries added by HostAliases."]
    lines += [f"{a.get('ip', '')}\t" + "\t".join(a.get("hostnames") or []) for a in aliases]
    return "\n".join(lines) + "\n"


@dataclass
class ContainerMeta:
    """What the kubelet labels a container with (the CRI's labels and annotations), kept with it on disk; with
    ``sandbox``, the pod's sandbox configuration (namespaces, hostname, security) for a runtime that uses it."""

    pod_uid: str = ""
    pod_namespace: str = ""
    pod_name: str = ""
    restart_count: int = 0
    last_state: dict[str, Any] | None = None
    sandbox: SandboxConfig | None = None


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
    enter: list[str] = field(default_factory=list)  # an argv prefix that runs a command inside the container

    def argv(self, command: list[str]) -> list[str]:
        """The command line that runs ``command`` for this container: inside it (``enter``), or as a host process
        with mount paths rewritten, ``python`` being this machine's interpreter (the process runtime's image)."""
        if self.enter:
            return [*self.enter, *(str(part) for part in command)]
        argv = [self.rewrite(str(part)) for part in command]
        if argv and argv[0] in ("python", "python3"):
            argv[0] = sys.executable
        return argv


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

    @property
    def reason(self) -> str | None:
        """Why it terminated when the runtime knows more than the exit code (``OOMKilled``), else ``None``."""
        ...

    @property
    def message(self) -> str | None:
        """What the container wrote to its ``terminationMessagePath`` (a runtime that mounts one), else ``None``."""
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
    # True: the runtime writes ``ContainerMeta.sandbox``'s hosts and resolv.conf into each pod's sandbox (the linux
    # runtime), so the kubelet forms the pod's resolver configuration. False: containers see other files.
    sandbox_files: bool

    @property
    def isolated_network(self) -> bool:
        """True: every pod but a hostNetwork one has a network namespace of its own (the linux runtime on a pod
        network), so its servers listen on all of its addresses, as on Kubernetes. False: pods share the node's."""
        ...

    async def warm_up(self) -> None:
        """Get ready for the node's first pods while the kubelet registers (a warm shim, built-in images' trees),
        so they do not pay for it; a failure here is left for the first start to report."""
        ...

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

    def shutdown(self) -> None:
        """The kubelet stops (its containers already are): release what pods hold beyond their containers (the
        linux runtime's sandboxes and cgroups)."""
        ...
