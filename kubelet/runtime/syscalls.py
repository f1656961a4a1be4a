"""The Linux system calls a container needs that Python 3.11's ``os`` lacks, through ctypes on the C library.

``os.unshare``/``os.setns`` arrived in 3.12 and ``mount``, ``pivot_root`` and ``capset`` are in no version; this
module replaces util-linux's ``unshare``/``nsenter``/``mount`` and libcap for the runtime. Standard library only:
the container shim (``shim.py``, run with ``python -I -S``) imports it by path.
"""

import ctypes
import errno
import os

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP = 0x20000000, 0x40000000, 0x02000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE, MS_SLAVE = 0x20, 0x1000, 0x4000, 0x40000, 0x80000
MNT_DETACH = 0x2
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24
SYS_PIVOT_ROOT, SYS_CAPSET = 155, 126  # x86_64
LINUX_CAPABILITY_VERSION_3 = 0x20080522
LAST_CAP = 40  # CAP_CHECKPOINT_RESTORE (5.9)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.syscall.restype = ctypes.c_long


def _check(result: int, what: str) -> None:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _b(text: str | None) -> bytes | None:
    return None if text is None else os.fsencode(text)


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def setns(path: str, nstype: int = 0) -> None:
    """Join the namespace ``/proc/<pid>/ns/<kind>`` (for a PID namespace: the children forked from now on)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(_libc.setns(fd, nstype), f"setns {path}")
    finally:
        os.close(fd)


def mount(source: str | None, target: str, fstype: str | None, flags: int = 0, data: str | None = None) -> None:
    _check(_libc.mount(_b(source), _b(target), _b(fstype), flags, _b(data)), f"mount {target}")


def umount(target: str, flags: int = MNT_DETACH) -> None:
    _check(_libc.umount2(_b(target), flags), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    _check(_libc.syscall(SYS_PIVOT_ROOT, _b(new_root), _b(put_old)), "pivot_root")


def sethostname(name: str) -> None:
    raw = name.encode()
    _check(_libc.sethostname(raw, len(raw)), "sethostname")


def no_new_privs() -> None:
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")


def drop_bounding(cap: int) -> None:
    """Remove ``cap`` from the bounding set (no exec'd program can gain it again); unknown caps are ignored."""
    if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 and ctypes.get_errno() != errno.EINVAL:
        _check(-1, f"prctl(PR_CAPBSET_DROP, {cap})")


def set_capabilities(keep: set[int]) -> None:
    """Make ``keep`` the effective, permitted and inheritable sets (libcap's ``cap_set_proc``)."""
    low = sum(1 << c for c in keep if c < 32)
    high = sum(1 << (c - 32) for c in keep if c >= 32)
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)(low, low, low, high, high, high)  # effective, permitted, inheritable ×2 words
    _check(_libc.syscall(SYS_CAPSET, header, data), "capset")
