"""The `kubelab` command: dispatch to the subcommand named in the table in ``kubelab.commands``.

Parsing is two-stage: the first word picks the command; only that command's module is imported and
parses the rest. Component commands get their arguments untouched (`kubelab kubelet --help` is the
kubelet's help, not ours).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType

from kubelab.commands import COMMANDS, Command, find_command

# httpx's __init__ imports its own command-line client (``httpx._main``: rich, click, pygments; ~0.13 s of CPU)
# whenever those are installed, and rich comes with common-expression-language. The kubelab command never runs
# httpx's client: a None entry makes that import fail, which httpx answers with a stub ``httpx.main``.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

__all__ = ["build_parser", "main", "parse_args"]

DESCRIPTION = "kubelab: a Kubernetes control plane in Python (apiserver over etcd, controllers, scheduler, kubelets)."


def _version() -> str:
    try:
        return version("kubelab")
    except PackageNotFoundError:
        return "unknown"


def top_parser() -> argparse.ArgumentParser:
    """The parser behind `kubelab --help`: lists the commands, parses nothing beyond the name."""
    parser = argparse.ArgumentParser(prog="kubelab", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"kubelab {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for command in COMMANDS:
        sub.add_parser(command.name, help=command.help, add_help=False)
    return parser


def build_parser(command: Command, module: ModuleType | None = None) -> argparse.ArgumentParser:
    """The parser for one (non-passthrough) command."""
    module = module or importlib.import_module(command.module)
    parser = argparse.ArgumentParser(prog=f"kubelab {command.name}", description=command.help)
    module.add_arguments(parser)
    return parser


def parse_args(argv: list[str]) -> tuple[Command, argparse.Namespace]:
    """Parse a non-passthrough command line (``["up", "--nodes", "3"]``); exits on bad input."""
    command = _command_or_exit(argv[0] if argv else "")
    return command, build_parser(command).parse_args(argv[1:])


def _command_or_exit(name: str) -> Command:
    command = find_command(name)
    if command is None:
        close = difflib.get_close_matches(name, [c.name for c in COMMANDS], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        top_parser().error(f"unknown command {name!r}{hint}")
    assert command is not None
    return command


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].startswith("-"):
        parser = top_parser()
        parser.parse_args(argv)  # handles --help / --version / bad flags, and exits
        parser.print_help()
        return 2
    command = _command_or_exit(argv[0])
    module = importlib.import_module(command.module)
    if command.passthrough:
        return int(module.run_passthrough(command.name, argv[1:]))
    args = build_parser(command, module).parse_args(argv[1:])
    try:
        return int(module.run(args))
    except KeyboardInterrupt:
        return 130
