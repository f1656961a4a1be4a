"""System binaries (nft, iptables-restore, nsenter) found whatever ``PATH`` says.

Debian installs them in ``/usr/sbin``, which a root shell has on its ``PATH`` and a root process started from a
plain user's environment (``env PATH=/usr/bin:/bin``, an IDE, a test runner) does not. The tools that run them —
the kubelet's pod network, kube-proxy's modes, the launcher's choice of pod network — look them up here: ``PATH``
first, then the sbin directories, as a root login's ``PATH`` would have them.
"""

from __future__ import annotations

import os
import shutil

__all__ = ["SBIN", "find", "system_binary"]

SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def find(name: str) -> str | None:
    """The absolute path of ``name`` on ``PATH`` or in the sbin directories, or ``None``."""
    return shutil.which(name, path=os.pathsep.join([*os.get_exec_path(), *SBIN]))


def system_binary(name: str) -> str:
    """``find(name)``, or ``name`` itself where it is nowhere (running it then fails with ``FileNotFoundError``,
    which callers already handle as "not installed")."""
    return find(name) or name
