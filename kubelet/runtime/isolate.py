"""Inside the shim: turn the forked container process into a Linux container (runc's ``init`` role).

The linux runtime writes each container's ``config.json`` into its state directory (the OCI bundle's config, in
the few fields kubelab uses, see ``linux.container_config``); the shim (``shim.py``) imports this module by path
and calls, around its fork of the container:

    prepare(config)      in the shim, first: the container's directories, files and cgroups (limits set)
    sandbox(config, dir) the pod's sandbox (pause), before it forks: the pod's hosts, hostname and resolv.conf
                         files, new UTS and IPC namespaces, the hostname, and with ``shareProcessNamespace`` a new
                         PID namespace for its child, the pause process
    before_fork(config)  in the shim: the PID namespace the container will be PID 1 of (a new one), or the pod's
                         (``shareProcessNamespace``: the sandbox's), or the host's (``hostPID``)
    enter(config)        in the child, before exec: the pod's UTS and IPC namespaces (setns into the sandbox's),
                         the container's cgroups, a private mount namespace, the root filesystem (overlayfs over the
                         image's tree, or the copy made by the runtime), /proc, /dev (minimal nodes, /dev/pts,
                         /dev/shm), /sys read-only, the bind mounts (volumes, /etc/hosts, /etc/hostname,
                         /etc/resolv.conf, /dev/termination-log), ``pivot_root``, a read-only root, the user and
                         groups, capabilities, ``no_new_privs``; then the working directory
    pause()              the pause process: holds the pod's namespaces, reaps orphans as PID 1
    exited(config, code) after the container exited: ``OOMKilled`` when its memory cgroup saw an OOM kill; the
                         container's cgroups are removed

``python -I -S isolate.py exec STATE_DIR -- ARGV`` runs ARGV inside a running container (``kubectl exec``,
probes, hooks): setns into its namespaces and cgroups, then a fork that becomes ARGV as the container's user.
``python -I -S isolate.py probe DIR`` tells whether this host can run containers (exit 0, or the reason).

Standard library only; nothing may be imported once the root has moved (the host's Python is not in the image).
"""

import contextlib
import errno
import json
import os
import sys
import time
import warnings  # noqa: F401 - os.execvpe imports it, and after pivot_root nothing can be imported

if __package__:
    from . import syscalls as sc
else:  # by path: from the shim, or as ``python -I -S isolate.py`` (which puts no directory on sys.path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import syscalls as sc  # type: ignore[import-not-found,no-redef]

DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
DEVICE_MODE = 0o666  # runc's for its default devices, owned by root
# runc's defaults for a container that is not privileged: /proc's host-wide knobs read-only (/proc/sys would let
# the container's root set the host's sysctls, /proc/sysrq-trigger reboot it), kernel internals hidden.
READONLY_PROC = ("bus", "fs", "irq", "sys", "sysrq-trigger")
MASKED_PROC = ("acpi", "kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug", "scsi")
SANDBOX_SECONDS = 10.0  # how long a container waits for its pod's pause process to be there
OOM_KILLED = "OOMKilled"


def sandbox_pid(sandbox_dir: str) -> int:
    """The pod's pause process, once the zygote's child has recorded it (it may still be on its way)."""
    deadline = time.monotonic() + SANDBOX_SECONDS
    while True:
        try:
            with open(os.path.join(sandbox_dir, "pid.json")) as f:
                return int(json.load(f)["pid"])
        except (OSError, ValueError, KeyError):
            if time.monotonic() > deadline:
                raise OSError(errno.ETIMEDOUT, "the pod sandbox did not start") from None
            time.sleep(0.001)


def _namespace(config: dict, value: str | None, kind: str) -> str | None:  # type: ignore[type-arg]
    """A namespace of the container's config: "sandbox" is the pause process's, "new" a new one, a path, or
    ``None`` for the host's."""
    return f"/proc/{sandbox_pid(config['sandbox'])}/ns/{kind}" if value == "sandbox" else value


def prepare(config: dict) -> None:  # type: ignore[type-arg]
    """In the shim, first: what the container's set-up needs on the host's side, which the runtime leaves to the
    shim's process rather than do on the kubelet's event loop — its state directory's trees (the root's mount
    point, the overlay's upper and work directories), its files (the termination log), its cgroups with their
    limits (``cgroups.Cgroups.container_plan``); raises ``OSError`` (what the kernel refused)."""
    for path in config.get("directories") or []:
        os.makedirs(path, exist_ok=True)
    for path in config.get("files") or []:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
    for cgroup in config.get("cgroupLimits") or []:
        os.makedirs(cgroup["path"], exist_ok=True)
        for name, value, required in cgroup["files"]:
            try:
                with open(os.path.join(cgroup["path"], name), "w") as f:
                    f.write(value)
            except OSError:
                if required:
                    raise


def before_fork(config: dict) -> None:  # type: ignore[type-arg]
    pid_ns = _namespace(config, config.get("pidNamespace"), "pid")
    if pid_ns == "new":
        sc.unshare(sc.CLONE_NEWPID)
    elif pid_ns:
        sc.setns(pid_ns, sc.CLONE_NEWPID)


def sandbox(config: dict, sandbox_dir: str) -> None:  # type: ignore[type-arg]
    """The pod's files (``linux.LinuxRuntime._sandbox_files``), then its namespaces."""
    for name, text in (config.get("files") or {}).items():
        with open(os.path.join(sandbox_dir, name), "w") as f:
            f.write(text)
    _join_pod(config)
    before_fork(config)


def _join_pod(config: dict) -> None:  # type: ignore[type-arg]
    for kind, flag in (("ipc", sc.CLONE_NEWIPC), ("uts", sc.CLONE_NEWUTS), ("net", sc.CLONE_NEWNET)):
        path = _namespace(config, (config.get("namespaces") or {}).get(kind), kind)
        if path == "new":
            sc.unshare(flag)
        elif path:
            sc.setns(path, flag)
    if config.get("hostname") and (config.get("namespaces") or {}).get("uts") == "new":
        sc.sethostname(config["hostname"])


def join_cgroups(paths: list[str]) -> None:
    for path in paths:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write("0")  # the writing process


def enter(config: dict) -> None:  # type: ignore[type-arg]
    """Everything between the fork and the exec (see the module docstring); raises ``OSError``."""
    sandbox_pid(config["sandbox"])  # its files are there once it is (even where no namespace of it is joined)
    _join_pod(config)
    join_cgroups(config.get("cgroups") or [])
    sc.unshare(sc.CLONE_NEWNS)
    sc.mount(None, "/", None, sc.MS_REC | sc.MS_PRIVATE)  # nothing mounted here reaches the host
    root = config["root"]
    overlay = config.get("overlay")
    if overlay:
        sc.mount("overlay", root, "overlay", 0,
                 f"lowerdir={':'.join(overlay['lower'])},upperdir={overlay['upper']},workdir={overlay['work']}")
    else:
        sc.mount(root, root, None, sc.MS_BIND | sc.MS_REC)  # pivot_root wants a mount point
    _system_mounts(root, config)
    for m in config.get("mounts") or []:
        bind(m["source"], root + m["destination"], m.get("readOnly", False))
    os.chdir(root)
    sc.pivot_root(".", ".")  # runc's way: the old root is stacked under the new one, then detached
    sc.umount(".")
    os.chdir("/")
    if config.get("readOnlyRoot"):
        sc.mount(None, "/", None, sc.MS_BIND | sc.MS_REMOUNT | sc.MS_RDONLY | sc.MS_REC)
    become(config)


def become(config: dict) -> None:  # type: ignore[type-arg]
    """The container's working directory, user, groups and capabilities (also for ``exec``)."""
    cwd = config.get("cwd") or "/"
    try:
        os.chdir(cwd)
    except FileNotFoundError:
        os.makedirs(cwd, exist_ok=True)
        os.chdir(cwd)
    caps = set(config.get("capabilities") or []) & _permitted()  # privileged: all the runtime itself holds
    user = config.get("user") or {}
    uid, gid = int(user.get("uid", 0)), int(user.get("gid", 0))
    for cap in range(sc.LAST_CAP + 1):
        if cap not in caps:
            sc.drop_bounding(cap)
    os.setgroups([int(g) for g in user.get("groups") or []])
    os.setgid(gid)
    os.setuid(uid)
    if uid == 0:
        sc.set_capabilities(caps)
    if config.get("noNewPrivs"):
        sc.no_new_privs()


def _permitted() -> set[int]:
    """The capabilities this process may pass on (a kubelet in a container may lack some, e.g. SYS_RESOURCE)."""
    with open("/proc/self/status") as f:
        mask = next(int(line.split()[1], 16) for line in f if line.startswith("CapPrm:"))
    return {cap for cap in range(sc.LAST_CAP + 1) if mask >> cap & 1}


def _system_mounts(root: str, config: dict) -> None:  # type: ignore[type-arg]
    proc = root + "/proc"
    os.makedirs(proc, exist_ok=True)
    sc.mount("proc", proc, "proc", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
    if not config.get("privileged"):
        _protect(proc)
    dev = root + "/dev"
    os.makedirs(dev, exist_ok=True)
    sc.mount("tmpfs", dev, "tmpfs", sc.MS_NOSUID, "mode=755,size=65536k")
    for node in DEV_NODES:
        device("/dev/" + node, f"{dev}/{node}")
    os.makedirs(dev + "/pts")
    sc.mount("devpts", dev + "/pts", "devpts", sc.MS_NOSUID | sc.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
    os.symlink("pts/ptmx", dev + "/ptmx")
    os.makedirs(dev + "/shm")
    sc.mount("shm", dev + "/shm", "tmpfs", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC, "mode=1777,size=65536k")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2"), ("core", "/proc/kcore")):
        os.symlink(target, f"{dev}/{name}")
    sys_dir = root + "/sys"
    os.makedirs(sys_dir, exist_ok=True)
    flags = sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC | (0 if config.get("privileged") else sc.MS_RDONLY)
    try:
        sc.mount("sysfs", sys_dir, "sysfs", flags)
    except OSError:
        sc.mount("/sys", sys_dir, None, sc.MS_BIND | sc.MS_REC)
        sc.mount(None, sys_dir, None, sc.MS_BIND | sc.MS_REMOUNT | flags)
    if not config.get("privileged") and os.path.isdir(sys_dir + "/firmware"):
        sc.mount("tmpfs", sys_dir + "/firmware", "tmpfs", sc.MS_RDONLY)  # runc's masked /sys/firmware


def device(source: str, target: str) -> None:
    """A node of ``source``'s device at ``target``, as runc makes /dev outside a user namespace (a mknod is a
    fraction of a mount's cost); a bind mount where the kernel refuses the mknod (a kubelet in a user namespace)."""
    info = os.stat(source)
    try:
        os.mknod(target, DEVICE_MODE | (info.st_mode & 0o170000), info.st_rdev)
        os.chmod(target, DEVICE_MODE)  # past the umask
    except PermissionError:
        bind(source, target, False)


def _protect(proc: str) -> None:
    """runc's readonlyPaths and maskedPaths: /proc's knobs read-only, kernel internals behind /dev/null or an
    empty read-only tmpfs."""
    for name in READONLY_PROC:
        if os.path.exists(f"{proc}/{name}"):
            bind(f"{proc}/{name}", f"{proc}/{name}", True)
    for name in MASKED_PROC:
        path = f"{proc}/{name}"
        if os.path.isdir(path):
            sc.mount("tmpfs", path, "tmpfs", sc.MS_RDONLY)
        elif os.path.exists(path):
            sc.mount("/dev/null", path, None, sc.MS_BIND)


def bind(source: str, target: str, read_only: bool) -> None:
    """Bind ``source`` at ``target`` (created as an empty file or directory as the source is)."""
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    elif not os.path.exists(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
    sc.mount(source, target, None, sc.MS_BIND | sc.MS_REC)
    if read_only:
        sc.mount(None, target, None, sc.MS_BIND | sc.MS_REMOUNT | sc.MS_RDONLY | sc.MS_REC)


def pause() -> int:
    """The sandbox's whole life: wait for SIGTERM, reaping whatever ends up as its child."""
    import _signal  # type: ignore[import-not-found]
    stop = []
    _signal.signal(_signal.SIGTERM, lambda *_: stop.append(1))
    _signal.signal(_signal.SIGINT, lambda *_: stop.append(1))
    _signal.signal(_signal.SIGCHLD, lambda *_: None)
    while not stop:
        _signal.pause()
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
    return 0


def exited(config: dict, code: int) -> str:  # type: ignore[type-arg]
    """The container's termination reason when the runtime knows better than its exit code (``OOMKilled``);
    removes its cgroups."""
    reason = ""
    oom = config.get("oomEvents")
    if oom and code == -9:
        try:
            with open(oom) as f:
                counters = dict(line.split() for line in f if line.strip())
            if int(counters.get("oom_kill", 0)) > 0:
                reason = OOM_KILLED
        except (OSError, ValueError):
            pass
    for path in config.get("cgroups") or []:
        with contextlib.suppress(OSError):
            os.rmdir(path)
    return reason


def exec_in(state_dir: str, argv: list[str]) -> int:
    """``kubectl exec``: run ``argv`` in the running container of ``state_dir``; its exit code (128+N: signal N)."""
    import _signal
    with open(os.path.join(state_dir, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(state_dir, "pid.json")) as f:
        pid = int(json.load(f)["pid"])
    join_cgroups(config.get("cgroups") or [])
    for kind, flag in (("ipc", sc.CLONE_NEWIPC), ("uts", sc.CLONE_NEWUTS), ("net", sc.CLONE_NEWNET),
                       ("pid", sc.CLONE_NEWPID), ("mnt", sc.CLONE_NEWNS)):
        sc.setns(f"/proc/{pid}/ns/{kind}", flag)
    child = os.fork()
    if child == 0:
        try:
            become(config)
            os.execvpe(argv[0], argv, os.environ)
        except OSError as err:  # runc's words, which kubectl shows
            why = "executable file not found in $PATH" if err.errno == 2 else err.strerror or str(err)
            os.write(2, f"OCI runtime exec failed: exec failed: unable to start container process: exec: "
                        f"\"{argv[0]}\": {why}: unknown\n".encode())
            os._exit(127 if err.errno == 2 else 126)
    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(sig, lambda signum, _frame: os.kill(child, signum))
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


NO_OVERLAY = 3  # probe's exit code: namespaces work, overlayfs does not (containers get a copy of the image)


def probe(scratch: str) -> int:
    """Whether containers can run here: mount, PID, UTS and IPC namespaces (else 1), an overlayfs mount (else
    ``NO_OVERLAY``); the reason on stderr."""
    try:
        sc.unshare(sc.CLONE_NEWNS | sc.CLONE_NEWUTS | sc.CLONE_NEWIPC | sc.CLONE_NEWPID)
        sc.mount(None, "/", None, sc.MS_REC | sc.MS_PRIVATE)
    except OSError as err:
        print(err, file=sys.stderr)
        return 1
    try:
        dirs = [os.path.join(scratch, d) for d in ("lower", "upper", "work", "merged")]
        for d in dirs:
            os.makedirs(d, exist_ok=True)
        sc.mount("overlay", dirs[3], "overlay", 0, f"lowerdir={dirs[0]},upperdir={dirs[1]},workdir={dirs[2]}")
        sc.umount(dirs[3])
    except OSError as err:
        print(f"overlayfs: {err}", file=sys.stderr)
        return NO_OVERLAY
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "exec":
        sys.exit(exec_in(sys.argv[2], sys.argv[4:]))
    sys.exit(probe(sys.argv[2]))
