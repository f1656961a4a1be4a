"""`kubelab <component> [args...]`: run one component in the foreground.

It replaces this process with ``python -m <package> args...`` (exec, not a child), so signals, exit
codes and ``--help`` are the component's own, exactly as when it runs under `kubelab up`.
"""

from __future__ import annotations

import os
import sys

from kubelab.components import COMPONENTS, component_argv

__all__ = ["run_passthrough"]


def run_passthrough(name: str, argv: list[str]) -> int:
    command = component_argv(COMPONENTS[name], argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(command[0], command)
    return 0  # not reached: execv only returns by raising
