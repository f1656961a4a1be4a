"""``python -m console``: the web console without the launcher's trace and explanation (``kubelab ui`` adds them).

Flags: ``--master``/``--kubeconfig`` (as every component), ``--address`` and ``--port`` (0: any free port; the URL
is printed on stderr as ``console: http://...``), ``--component NAME=URL`` (a component's debug endpoint for the
watch page, e.g. the controller-manager's healthz server).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from apimachinery.process import start_component
from kubeclient import Clientset, RESTClient, build_config

from .app import Console, Providers

__all__ = ["main", "parse_args", "serve"]


def parse_args(argv: list[str] | None = None, prog: str = "python -m console") -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=prog, description="The kubelab web console.")
    p.add_argument("--master", help="apiserver URL (e.g. http://127.0.0.1:8080)")
    p.add_argument("--kubeconfig", help="kubeconfig file to find the apiserver")
    p.add_argument("--address", default="127.0.0.1", help="address to serve on (default %(default)s)")
    p.add_argument("--port", type=int, default=0, help="port to serve on (0: any free port)")
    p.add_argument("--component", action="append", default=[], metavar="NAME=URL",
                   help="a component's debug endpoint for the watch page (repeatable)")
    p.add_argument("-v", "--v", dest="verbosity", type=int, default=1, help="log verbosity")
    return p.parse_args(argv)


async def serve(args: argparse.Namespace, providers: Providers | None = None) -> int:
    components = dict(c.split("=", 1) for c in args.component if "=" in c)
    config = build_config(master=args.master, kubeconfig=args.kubeconfig, user_agent="kubelab-console")
    client = Clientset(RESTClient(config))
    console = Console(client, providers, components, config.unverified_ssl_context())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await console.run(stop, args.address, args.port)
    return 0


def main(argv: list[str] | None = None, providers: Providers | None = None, prog: str = "python -m console") -> None:
    args = parse_args(argv, prog)
    start_component(args.verbosity)
    sys.exit(asyncio.run(serve(args, providers)))


if __name__ == "__main__":
    main()
