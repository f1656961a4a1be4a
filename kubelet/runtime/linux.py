"""``--runtime linux``: real Linux containers without Docker — namespaces, an image's root file system, cgroups.

The process runtime's machinery (state directories, the shim and its zygote, adoption after a restart) with a
container set-up between the shim's fork and the exec (``isolate.enter``, driven by ``DIR/config.json``, the OCI
bundle's role). What a pod gets, as containerd + runc give it:

    sandbox       one long-lived process per pod (the pause container, ``<root>/sandboxes/<uid>/``) holding the
                  pod's UTS namespace (hostname = ``spec.hostname`` or the pod's name) and IPC namespace, and with
                  ``shareProcessNamespace`` its PID namespace as PID 1; ``hostNetwork`` keeps the host's UTS,
                  ``hostIPC`` the host's IPC; containers join them with setns
    container     its own mount namespace and PID namespace (the pod's with ``shareProcessNamespace``, the host's
                  with ``hostPID``), ``pivot_root`` into an overlayfs over the image's tree (``rootfs``; a copy of
                  the tree where overlayfs is not available), the kubelet's /etc/hosts, /etc/hostname,
                  /etc/resolv.conf and /dev/termination-log, volumes bound at their mountPath (``readOnly``,
                  ``subPath``: the pod worker's links in the container directory say where each one is)
    cgroups       per pod and per container (``cgroups``): memory limit (OOM → ``OOMKilled``, 137), CFS quota,
                  shares; removed with the pod
    security      runAsUser, runAsGroup, fsGroup (volumes' group, a supplementary group), supplementalGroups,
                  readOnlyRootFilesystem, capabilities (containerd's default set, add, drop), privileged,
                  allowPrivilegeEscalation: false (no_new_privs)
    exec          ``isolate.py exec``: setns into the container's namespaces and cgroups, then its user

The pod network is not the runtime's. By default pods keep the host's network namespace, each binding its own
IP of the node's podCIDR (``podips``), as with the process runtime; ``PodNetwork`` is the seam where a network
plugin attaches (``network.BridgeNetwork`` with ``--cluster-network``: a namespace per pod on a bridge): the
runtime calls ``setup`` once the sandbox exists and ``teardown`` when it goes (see its docstring).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .. import images, rootfs
from .cgroups import Cgroups
from .cri import Container, ContainerMeta, ExecTarget, SandboxConfig
from .process import ContainerProcess, ProcessRuntime, start_ticks

log = logging.getLogger(__name__)

RUNTIME_NAME = "linux"
VERSION = "0.1.0"
RUNTIME_VERSION = f"{RUNTIME_NAME}://{VERSION}"  # nodeInfo.containerRuntimeVersion
ISOLATE = Path(__file__).with_name("isolate.py")
PROBE_SECONDS = 10.0
NO_OVERLAY = 3  # isolate.probe's exit code when namespaces work and overlayfs does not

# Capability numbers (linux/capability.h) and containerd's default set for a container that is not privileged.
CAPABILITIES = {name: number for number, name in enumerate((
    "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP",
    "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
    "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
    "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
    "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
    "CHECKPOINT_RESTORE"))}
DEFAULT_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
                        "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE")


class PodNetwork(Protocol):
    """Where a network plugin attaches (CNI's ADD and DEL). With ``isolated``, every sandbox but a hostNetwork
    pod's unshares a network namespace of its own, which its containers and ``kubectl exec`` join, and ``setup``
    runs with its path (``/proc/<pause pid>/ns/net``) before any container of the pod starts; without, pods share
    the host's and ``setup`` gets ``None``. The pod's IP is the one ``podips`` gave (``sandbox.pod_ip``, which the
    pod worker reports as ``status.podIP``/``podIPs``): the plugin puts it on the pod's interface and returns the
    IPs it configured (empty: none). ``teardown`` runs before the sandbox is killed."""

    isolated: bool  # True: every sandbox gets a network namespace of its own for ``setup`` to configure

    def setup(self, pod_uid: str, sandbox: SandboxConfig, netns: str | None) -> list[str]: ...

    def teardown(self, pod_uid: str) -> None: ...


class HostNetwork:
    """Today's pod network: the host's namespace, each pod binding its own loopback IP (``podips``)."""

    isolated = False

    def setup(self, pod_uid: str, sandbox: SandboxConfig, netns: str | None) -> list[str]:
        return []

    def teardown(self, pod_uid: str) -> None:
        return None


def probe(scratch: Path) -> tuple[str | None, bool]:
    """(Why this host cannot run linux containers — ``None``: it can —, whether overlayfs works). Not Linux, not
    root, no static busybox, or the kernel refuses mount/PID/UTS/IPC namespaces: no; no overlayfs: containers
    get a copy of their image's tree. Tried once, in a child process."""
    if sys.platform != "linux":
        return f"not Linux ({sys.platform})", False
    if os.geteuid() != 0:
        return "the kubelet does not run as root", False
    if rootfs.static_busybox() is None:
        return "no static busybox for the images' root file systems (install Debian's busybox-static)", False
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        try:
            done = subprocess.run([sys.executable, "-I", "-S", str(ISOLATE), "probe", tmp], capture_output=True,
                                  text=True, timeout=PROBE_SECONDS)
        except (OSError, subprocess.TimeoutExpired) as err:
            return str(err), False
    if done.returncode == NO_OVERLAY:
        log.info("no overlayfs (%s): each container gets a copy of its image", done.stderr.strip())
        return None, False
    return (None if done.returncode == 0 else done.stderr.strip() or f"probe exited {done.returncode}"), True


def unavailable(scratch: Path) -> str | None:
    """Why this host cannot run linux containers, or ``None`` (``probe``)."""
    return probe(scratch)[0]


def capabilities(security: dict[str, Any]) -> list[int]:
    """The container's capability numbers: every one when privileged, else containerd's defaults with ``add``
    and without ``drop`` (``ALL`` in drop: none but those added)."""
    if security.get("privileged"):
        return sorted(CAPABILITIES.values())
    caps = security.get("capabilities") or {}
    names = {c.upper().removeprefix("CAP_") for c in caps.get("drop") or []}
    keep = set() if "ALL" in names else set(DEFAULT_CAPABILITIES) - names
    added = {c.upper().removeprefix("CAP_") for c in caps.get("add") or []}
    keep |= set(CAPABILITIES) if "ALL" in added else added
    return sorted(CAPABILITIES[n] for n in keep if n in CAPABILITIES)


def security_context(pod: dict[str, Any], container: dict[str, Any]) -> dict[str, Any]:
    """The container's securityContext over the pod's (runAsUser, runAsGroup... the container wins)."""
    return {**pod, **(container.get("securityContext") or {})}


def image_user(spec: str, tree: Path) -> tuple[int, int]:
    """An image config's ``User`` (``uid``, ``uid:gid``, ``name`` or ``name:group``) as numbers, names looked up
    in the image's own /etc/passwd and /etc/group (unknown: root's)."""
    name, _, group = spec.partition(":")

    def lookup(file: str, key: str, field: int) -> int:
        if key.isdigit() or not key:
            return int(key or 0)
        with contextlib.suppress(OSError, ValueError):
            for line in (tree / "etc" / file).read_text().splitlines():
                parts = line.split(":")
                if len(parts) > field and parts[0] == key:
                    return int(parts[field])
        return 0
    uid = lookup("passwd", name, 2)
    gid = lookup("group", group, 2) if group else (lookup("passwd", name, 3) if not name.isdigit() else 0)
    return uid, gid


def user(security: dict[str, Any], pod_security: dict[str, Any], image: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    """The container's uid, gid and groups: runAsUser/runAsGroup over the image's User."""
    uid = int(security["runAsUser"]) if security.get("runAsUser") is not None else image[0]
    gid = int(security["runAsGroup"]) if security.get("runAsGroup") is not None else image[1]
    groups = [gid, *(int(g) for g in pod_security.get("supplementalGroups") or [])]
    if pod_security.get("fsGroup") is not None:
        groups.append(int(pod_security["fsGroup"]))
    return {"uid": uid, "gid": gid, "groups": sorted(set(groups))}


def argv_of(container: dict[str, Any], config: images.ImageConfig | None) -> list[str]:
    """Kubernetes' rule over the image's ENTRYPOINT and CMD; this machine's interpreter is the image's python3."""
    argv = images.command_line(container, config)
    if argv and argv[0] == sys.executable:
        argv[0] = "python3"
    return argv


def _set_group(path: Path, gid: int) -> None:
    """fsGroup: the volume's files belong to the group, directories setgid so new files do too (the kubelet's
    ``SetVolumeOwnership``)."""
    for current in [path, *path.rglob("*")] if path.is_dir() else [path]:
        with contextlib.suppress(OSError):
            os.chown(current, -1, gid, follow_symlinks=False)
            if current.is_dir() and not current.is_symlink():
                current.chmod(current.stat().st_mode | 0o2070)


@dataclass(frozen=True)
class Image:
    """A container's image as its start needs it: its config (None: not known) and its root file system."""

    config: images.ImageConfig | None
    tree: rootfs.Rootfs


class LinuxRuntime(ProcessRuntime):
    """Linux containers (a ``cri.Runtime``); see the module docstring."""

    bind_mounts = True
    pod_ips = True
    sandbox_files = True
    name = RUNTIME_NAME
    preload = True

    def __init__(self, root: Path, image_store: images.ImageStore, node: str, *, overlay: bool = True,
                 network: PodNetwork | None = None) -> None:
        super().__init__(root / "containers")
        self.sandboxes = root / "sandboxes"
        self.images = image_store
        self.image_root = image_store.root / "rootfs"
        self.overlay = overlay  # False: each container's root is a copy of the image's tree
        self.network: PodNetwork = network or HostNetwork()
        self.cgroups = Cgroups(node)
        self._locks: dict[str, asyncio.Lock] = {}
        self._pauses: dict[str, asyncio.Future[dict[str, Any]]] = {}  # the zygote's answer, by pod UID
        self._building: dict[str, asyncio.Lock] = {}  # built-in images' trees, built once each (``_image``)
        self._built: set[str] = set()

    @property
    def isolated_network(self) -> bool:  # type: ignore[override]  # (a class attribute in ProcessRuntime)
        return self.network.isolated

    @property
    def runtime_version(self) -> str:
        return RUNTIME_VERSION

    # --- containers -------------------------------------------------------------------------------------------
    async def warm_up(self) -> None:
        """The zygote, and the built-in busybox image's tree (the image of most pods; a copy and hundreds of
        links, ~1 s on a busy machine, which the node's first pods would otherwise wait for)."""
        await super().warm_up()
        with contextlib.suppress(RuntimeError):
            await self._image({"image": "busybox"})

    async def _image(self, container: dict[str, Any]) -> Image:
        """The image's config and tree, once per container start (a loaded image's lookup reads the store's
        manifests). A built-in image's tree is built on its first use on a thread, one build per image, so the
        event loop goes on with the node's other pods meanwhile (a busybox copy and hundreds of applet links)."""
        image = container.get("image", "")
        config = self.images.config(image)
        key = images.parse_reference(image).catalog_key
        if not (config is not None and config.rootfs) and rootfs.supported(key) and key not in self._built:
            async with self._building.setdefault(key, asyncio.Lock()):
                if key not in self._built:
                    await asyncio.to_thread(self._rootfs, image, config)
                    self._built.add(key)
        return Image(config, self._rootfs(image, config))

    def _command(self, container: dict[str, Any], workdir: Path, env: dict[str, str],
                 meta: ContainerMeta, image: Image) -> tuple[list[str], Path, dict[str, str]]:
        """The image's command and environment (PATH...), with the pod's variables over them."""
        argv = argv_of(container, image.config)
        hostname = meta.sandbox.hostname if meta.sandbox else meta.pod_name
        return argv, workdir, {**image.tree.env, "HOSTNAME": hostname, "HOME": "/root", **env}

    def _rootfs(self, image: str, config: images.ImageConfig | None) -> rootfs.Rootfs:
        if config is not None and config.rootfs:  # loaded (``kubelab image load``): its tree and its Env
            env = dict(e.partition("=")[::2] for e in config.env)
            return rootfs.Rootfs(Path(config.rootfs), env={"PATH": rootfs.DEFAULT_PATH, **env})
        key = images.parse_reference(image).catalog_key
        if not rootfs.supported(key):
            raise RuntimeError(f'image "{image}" has no root file system on this node')
        try:
            return rootfs.builtin(key, self.image_root)
        except (rootfs.RootfsError, OSError, subprocess.CalledProcessError) as err:
            raise RuntimeError(f"failed to create the root file system of {image}: {err}") from None

    async def _configure(self, state: Path, cid: str, container: dict[str, Any], workdir: Path,
                         meta: ContainerMeta, found: Image) -> None:
        sandbox = meta.sandbox or SandboxConfig(hostname=meta.pod_name)
        pod_dir = await self._sandbox(meta.pod_uid or cid, sandbox)
        if not self.overlay:  # a copy of the image's tree: the container's root
            await asyncio.to_thread(shutil.copytree, found.tree.path, state / "rootfs", symlinks=True)
        self._write_config(state, cid, container, workdir, meta, found, sandbox, pod_dir,
                           self._pid_namespace(meta, container, sandbox))

    def _write_config(self, state: Path, cid: str, container: dict[str, Any], workdir: Path, meta: ContainerMeta,
                      found: Image, sandbox: SandboxConfig, pod_dir: Path, pid_namespace: str | None) -> None:
        """The container's ``config.json`` (``isolate``'s input). Its cgroups, its root's mount point, its
        overlay's directories and its termination log are made by its shim (``isolate.prepare``): a dozen file
        system and cgroupfs writes (~25 ms of a container's start while a burst keeps the cores busy) in a process
        of their own instead of on the kubelet's event loop, where the node's other pod workers waited behind them
        (on a thread they waited for the interpreter's lock instead: measured slower)."""
        tree, image = found.tree, found.config
        security = security_context(sandbox.security, container)
        cgroups = self.cgroups.container_plan(meta.pod_uid or cid, cid, container.get("resources") or {})
        config: dict[str, Any] = {
            "root": str(state / "rootfs"),
            "cwd": container.get("workingDir") or (image.working_dir if image else "") or "/",
            "sandbox": str(pod_dir),  # "sandbox" below: the pause process's namespace, once its pid.json is there
            "namespaces": {"uts": None if sandbox.host_network else "sandbox",
                           "ipc": None if sandbox.host_ipc else "sandbox",
                           "net": "sandbox" if self.network.isolated and not sandbox.host_network else None},
            "pidNamespace": pid_namespace,
            "cgroups": [d["path"] for d in cgroups],
            "cgroupLimits": cgroups,
            "oomEvents": self.cgroups.oom_events(meta.pod_uid or cid, cid),
            "mounts": self._mounts(state, container, workdir, tree, pod_dir),
            "user": user(security, sandbox.security, image_user(image.user if image else "", tree.path)),
            "capabilities": capabilities(security),
            "privileged": bool(security.get("privileged")),
            "readOnlyRoot": bool(security.get("readOnlyRootFilesystem")),
            "noNewPrivs": security.get("allowPrivilegeEscalation") is False and not security.get("privileged"),
        }
        config["files"] = [str(state / "termination-log")]
        if self.overlay:
            config["directories"] = [str(state / d) for d in ("rootfs", "upper", "work")]
            config["overlay"] = {"lower": [str(tree.path)], "upper": str(state / "upper"),
                                 "work": str(state / "work")}
        if sandbox.security.get("fsGroup") is not None:
            volumes = workdir.parent.parent / "volumes"  # the pod's (``volumes.volumes_dir``): not a hostPath
            for mount in config["mounts"]:
                if Path(mount["source"]).is_relative_to(volumes):
                    _set_group(Path(mount["source"]), int(sandbox.security["fsGroup"]))
        (state / "config.json").write_text(json.dumps(config))

    def _pid_namespace(self, meta: ContainerMeta, container: dict[str, Any], sandbox: SandboxConfig) -> str | None:
        """The host's (``hostPID``), the pod's (``shareProcessNamespace``), the target container's (an ephemeral
        container's ``targetContainerName``: ``kubectl debug --target``), else a new one."""
        if sandbox.host_pid:
            return None
        if sandbox.share_pid:
            return "sandbox"
        target = container.get("targetContainerName")
        for state in reversed(self._instances.get((meta.pod_uid, target), []) if target else []):
            with contextlib.suppress(OSError, ValueError, KeyError):
                pid = int(json.loads((state / "pid.json").read_text())["pid"])
                if not (state / "exit.json").exists():
                    return f"/proc/{pid}/ns/pid"
        return "new"

    def _mounts(self, state: Path, container: dict[str, Any], workdir: Path, tree: rootfs.Rootfs,
                pod_files: Path) -> list[dict[str, Any]]:
        """Image binds, the kubelet-managed files, then the volumes (which may cover them, as on Kubernetes)."""
        mounts = [{"source": b.source, "destination": b.destination, "readOnly": b.read_only} for b in tree.binds]
        termination = state / "termination-log"  # made by the shim (``isolate.prepare``)
        mounts += [{"source": str(pod_files / name), "destination": path, "readOnly": False}
                   for name, path in (("etc-hosts", "/etc/hosts"), ("hostname", "/etc/hostname"),
                                      ("resolv.conf", "/etc/resolv.conf"))]
        mounts.append({"source": str(termination),
                       "destination": container.get("terminationMessagePath") or "/dev/termination-log",
                       "readOnly": False})
        for mount in container.get("volumeMounts") or []:
            relative = mount["mountPath"].strip("/")
            link = workdir / relative
            if not relative or not os.path.lexists(link):
                raise RuntimeError(f'volume mount {mount["mountPath"]} of container "{container["name"]}" '
                                   f"is not set up")
            mounts.append({"source": os.path.realpath(link), "destination": "/" + relative,
                           "readOnly": bool(mount.get("readOnly"))})
        return mounts

    def _discard(self, state: Path, cid: str, meta: ContainerMeta) -> None:
        for d in self.cgroups._dirs(self.cgroups.base / f"pod{meta.pod_uid or cid}" / cid):
            with contextlib.suppress(OSError):
                d.rmdir()
        super()._discard(state, cid, meta)

    def exec_target(self, container: Container, target: ExecTarget) -> ExecTarget:
        """Commands run inside the container: ``isolate.py exec`` enters its namespaces as its user."""
        assert isinstance(container, ContainerProcess)
        enter = [sys.executable, "-I", "-S", str(ISOLATE), "exec", str(container.dir), "--"]
        return ExecTarget(dict(container.env), container.dir, target.pod_ip, target.ports, enter=enter)

    # --- the pod's sandbox ------------------------------------------------------------------------------------
    async def _sandbox(self, pod_uid: str, config: SandboxConfig) -> Path:
        """The pod's sandbox directory, its pause process started (which writes its hosts, hostname and resolv.conf)
        if needed. The container is not held back for the zygote's answer: its set-up waits for the pause's
        ``pid.json`` (``isolate.sandbox_pid``), one round trip through the kubelet's event loop less per pod.
        A network plugin with namespaces of its own gets the answer first, to configure the pod's network before
        any container starts."""
        lock = self._locks.setdefault(pod_uid, asyncio.Lock())
        async with lock:
            d = self.sandboxes / pod_uid
            pending = self._pauses.get(pod_uid)
            if (pending is not None and not pending.done()) or _running_pause(d) is not None:
                return d
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
            namespaces = {"uts": None if config.host_network else "new", "ipc": None if config.host_ipc else "new",
                          "net": "new" if self.network.isolated and not config.host_network else None}
            (d / "config.json").write_text(json.dumps({
                "hostname": config.hostname, "namespaces": namespaces,
                "pidNamespace": "new" if config.share_pid and not config.host_pid else None,
                "files": self._sandbox_files(config)}))
            request = self._pauses[pod_uid] = asyncio.ensure_future(self._zygote.pause(d))
            if self.network.isolated:
                try:
                    self._network_setup(pod_uid, config, await request)
                except Exception:
                    self._remove_sandbox(d)  # no half-made sandbox: the next attempt starts afresh
                    raise
            else:
                request.add_done_callback(lambda done: self._network_setup(pod_uid, config, done.result()))
            return d

    @staticmethod
    def _sandbox_files(config: SandboxConfig) -> dict[str, str]:
        """The pod's /etc/hosts, /etc/hostname and /etc/resolv.conf (the host's without the kubelet's), by name
        in its sandbox directory: written by its pause process's set-up (``isolate.sandbox``), a process of its
        own, rather than on the kubelet's event loop (file creation: ~0.5 ms each here, several times that in a
        burst); the pod's containers wait for the pause process before they bind them."""
        resolv = config.resolv_conf
        if resolv is None:
            try:
                resolv = Path("/etc/resolv.conf").read_text()
            except OSError:
                resolv = ""
        return {"etc-hosts": config.hosts, "hostname": config.hostname + "\n", "resolv.conf": resolv}

    def _network_setup(self, pod_uid: str, config: SandboxConfig, reply: dict[str, Any]) -> None:
        """The zygote's answer about a pause process: the network plugin's turn (CNI ADD), or the failure."""
        if "pid" not in reply:
            log.warning("pod %s: failed to create pod sandbox: %s", pod_uid, reply.get("error"))
            if self.network.isolated:
                raise RuntimeError(f"failed to create pod sandbox: {reply.get('error')}")
            return
        self.network.setup(pod_uid, config, f"/proc/{reply['pid']}/ns/net" if self.network.isolated else None)

    def remove_pods(self, keep: set[str]) -> list[str]:
        """The containers as the process runtime removes them, then each pod's sandbox and cgroups."""
        removed = set(super().remove_pods(keep))
        for d in self._sandbox_dirs():
            if d.name not in keep:
                self._remove_sandbox(d, background=True)
                removed.add(d.name)
        return sorted(removed)

    def shutdown(self) -> None:
        """The kubelet stops and has stopped its containers: every sandbox and pod cgroup goes too."""
        super().shutdown()  # and waits for the background removals
        for d in self._sandbox_dirs():
            self._remove_sandbox(d)

    def _sandbox_dirs(self) -> list[Path]:
        return [d for d in self.sandboxes.iterdir() if d.is_dir()] if self.sandboxes.is_dir() else []

    def _remove_sandbox(self, d: Path, background: bool = False) -> None:
        """StopPodSandbox and RemovePodSandbox: the network, the pause process, the cgroups, the directory.
        ``background``: the pod is gone for good (housekeeping), so its cgroups and directory may go on the
        reaper's thread; a sandbox that failed is removed at once, as its pod's next attempt makes them again."""
        self.network.teardown(d.name)
        pid = _running_pause(d)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        if background:
            uid = d.name
            self._reaper.run(lambda: self.cgroups.remove_pod(uid))
            self._reaper.remove_tree(d)
        else:
            self.cgroups.remove_pod(d.name)
            shutil.rmtree(d, ignore_errors=True)
        self._locks.pop(d.name, None)
        self._pauses.pop(d.name, None)


def _running_pause(d: Path) -> int | None:
    try:
        pids = json.loads((d / "pid.json").read_text())
    except (OSError, ValueError):
        return None
    if (d / "exit.json").exists() or start_ticks(int(pids["pid"])) != pids["start"]:
        return None
    return int(pids["pid"])
