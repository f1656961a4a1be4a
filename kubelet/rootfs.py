"""Root file systems of the built-in images, for the linux runtime: real trees the container ``pivot_root``s into.

    busybox, alpine  a static busybox (Debian's ``busybox-static``: ``/bin/busybox``) with a link per applet
                     (``busybox --list-full``), ``/etc/passwd`` and ``/etc/group`` with root and nobody, the usual
                     empty directories, empty ``/etc/hosts``, ``hostname`` and ``resolv.conf`` for the kubelet's
                     to be bound over; nothing of the host
    python           the busybox tree, plus this machine's interpreter: its prefix (interpreter and stdlib) and the
                     C libraries it links bind-mounted read-only at their own paths, ``python``/``python3`` links
    nginx            the python image plus the stand-in server script (``nginx_standin.py``), bound read-only

A tree is built once per node under ``<images>/rootfs/<name>/`` (into a temporary directory renamed into place,
so a half-built tree is never used) and shared read-only by every container: each gets an overlayfs upper layer
of its own (``runtime.linux``). ``Rootfs.binds`` are what the image takes from the host.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

NGINX_STANDIN = str(Path(__file__).with_name("nginx_standin.py"))
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BUSYBOX_IMAGES = ("busybox", "alpine")
# The kubelet-managed files every container gets bound over (empty here, as in a Docker image's tree).
MOUNT_POINTS = ("etc/hosts", "etc/hostname", "etc/resolv.conf")
PYTHON_IMAGES = ("python", "nginx")
LIBRARY_DIRS = ("/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                "/usr/lib/aarch64-linux-gnu", "/usr/lib64")


class RootfsError(Exception):
    """The image's tree cannot be built on this node (the container's CreateContainerError says why)."""


@dataclass(frozen=True)
class Bind:
    source: str
    destination: str
    read_only: bool = True


@dataclass
class Rootfs:
    """An image's tree, what it binds from the host, and the environment its config sets."""

    path: Path
    binds: list[Bind] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=lambda: {"PATH": DEFAULT_PATH})


def static_busybox() -> str | None:
    """A statically linked busybox (a dynamic one would need the host's C library inside the image)."""
    for path in BUSYBOX_CANDIDATES:
        try:
            with open(path, "rb") as f:
                head = f.read(4096)
        except OSError:
            continue
        if head.startswith(b"\x7fELF") and b"ld-linux" not in head and b"ld-musl" not in head:
            return path
    return None


def interpreter() -> str:
    """The real file of this machine's Python (not a virtualenv's link to it)."""
    return os.path.realpath(getattr(sys, "_base_executable", sys.executable))


def supported(name: str) -> bool:
    return name in BUSYBOX_IMAGES + PYTHON_IMAGES


def builtin(name: str, store: Path) -> Rootfs:
    """The tree of built-in image ``name`` under ``store`` (built on first use); raises ``RootfsError``."""
    path = store / ("busybox" if name in BUSYBOX_IMAGES else "python")
    if not path.is_dir():
        _build(path, python=name in PYTHON_IMAGES)
    if name not in PYTHON_IMAGES:
        return Rootfs(path)
    binds = [Bind(sys.base_prefix, sys.base_prefix)]
    seen = {os.path.realpath(sys.base_prefix)}
    for lib in LIBRARY_DIRS:
        real = os.path.realpath(lib)
        if os.path.isdir(real) and real not in seen:
            seen.add(real)
            binds.append(Bind(real, real))
    if name == "nginx":
        binds.append(Bind(os.path.realpath(NGINX_STANDIN), os.path.realpath(NGINX_STANDIN)))
    return Rootfs(path, binds)


def _build(path: Path, python: bool) -> None:
    busybox = static_busybox()
    if busybox is None:
        raise RootfsError("no static busybox on this node (install Debian's busybox-static) to build the image's "
                          "root file system")
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "usr/local/bin", "etc", "root", "home", "var", "proc", "sys",
              "dev", "run"):
        (tmp / d).mkdir(parents=True, exist_ok=True)
    (tmp / "tmp").mkdir(mode=0o1777)
    (tmp / "tmp").chmod(0o1777)
    shutil.copy2(busybox, tmp / "bin" / "busybox")
    applets = subprocess.run([busybox, "--list-full"], capture_output=True, text=True, check=True).stdout.split()
    for applet in (a for a in applets if a != "linuxrc"):
        link = tmp / applet
        if not link.exists() and not link.is_symlink():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to("/bin/busybox")
    (tmp / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n")
    (tmp / "etc" / "group").write_text("root:x:0:\nnobody:x:65534:\n")
    for name in MOUNT_POINTS:  # else each container's overlay copies /etc up to make them (file system writes)
        (tmp / name).touch()
    if python:
        for name in ("usr/bin/python3", "usr/bin/python", "usr/local/bin/python3", "usr/local/bin/python"):
            (tmp / name).symlink_to(interpreter())
        for lib in ("/lib", "/lib64"):  # the host's merged-/usr links, so the dynamic loader's paths resolve
            if os.path.islink(lib) and not (tmp / lib[1:]).exists():
                (tmp / lib[1:]).symlink_to(os.readlink(lib))
    try:
        tmp.rename(path)
    except OSError:  # another kubelet of this store built it meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
