"""The table of `kubelab` subcommands: one row per command, one small module per command.

A command module provides ``add_arguments(parser)`` and ``run(args) -> int``; a passthrough command
(the component commands) provides ``run_passthrough(name, argv) -> int`` instead and receives its
arguments untouched, so `kubelab scheduler --help` shows the scheduler's own help. Modules are
imported only when their command runs, which keeps `kubelab <component>` start-up fast.

Adding a command (`kubelab explain`, `kubelab trace`, ...) is one module and one row here.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubelab.components import COMPONENTS

__all__ = ["COMMANDS", "Command", "find_command"]


@dataclass(frozen=True)
class Command:
    name: str
    module: str  # imported on use
    help: str
    passthrough: bool = False


COMMANDS: tuple[Command, ...] = (
    Command("up", "kubelab.commands.up", "start etcd and the control plane locally"),
    Command("down", "kubelab.commands.down", "stop what `kubelab up --detach` started"),
    Command("status", "kubelab.commands.status", "show the running components and their health"),
    Command("snapshot", "kubelab.commands.snapshot", "save, restore or inspect an etcd snapshot of the cluster"),
    Command("trace", "kubelab.commands.trace", "show the 13 steps of the creation flow as they happened for a pod"),
    Command("explain", "kubelab.commands.explain", "show why the scheduler placed a pod where it did, or could not"),
    Command("what-if", "kubelab.commands.whatif",
            "show where pods would go after a drain, cordon, taint, node deletion or new pods (changes nothing)"),
    Command("image", "kubelab.commands.image", "load an image tarball (docker save, OCI layout) onto the nodes"),
    Command("user", "kubelab.commands.user", "give a user a client certificate and a kubeconfig (through a CSR)"),
    Command("token", "kubelab.commands.token", "create, list or delete bootstrap tokens for `kubelab join`"),
    Command("join", "kubelab.commands.join", "join this machine's kubelet to a cluster (TLS bootstrapping)"),
    *(Command(c.name, "kubelab.commands.component", f"run {c.summary}", passthrough=True) for c in COMPONENTS.values()),
)


def find_command(name: str) -> Command | None:
    for command in COMMANDS:
        if command.name == name:
            return command
    return None
