"""``python -m scheduler`` / ``kubelab scheduler``: bind pending pods to nodes (first part of issue 4)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from aiohttp import web

from kubeclient import Clientset

from .scheduler import Scheduler


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="kubelab scheduler",
                                description="The kubelab scheduler: filters and scores nodes, binds pods.")
    p.add_argument("--master", help="apiserver URL (e.g. http://127.0.0.1:8080)")
    p.add_argument("--kubeconfig", help="kubeconfig file to find the apiserver")
    p.add_argument("--scheduler-name", default="default-scheduler", help="pods' spec.schedulerName to serve")
    p.add_argument("--healthz-port", type=int, default=0, help="serve /healthz on this port (0: off)")
    p.add_argument("-v", "--v", dest="verbosity", type=int, default=1, help="log verbosity")
    return p.parse_args(argv)


async def run(args: argparse.Namespace) -> None:
    client = Clientset.from_flags(master=args.master, kubeconfig=args.kubeconfig)
    scheduler = Scheduler(client, args.scheduler_name)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    runner = None
    if args.healthz_port:
        app = web.Application()
        app.router.add_get("/healthz", lambda _: web.Response(text="ok"))
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", args.healthz_port).start()
        logging.info("healthz: http://127.0.0.1:%d/healthz", args.healthz_port)
    try:
        await scheduler.run(stop)
    finally:
        if runner is not None:
            await runner.cleanup()
        await client.close()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    level = logging.WARNING if args.verbosity <= 0 else logging.INFO if args.verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
