"""``python -m proxy`` / ``kubelab proxy``: kube-proxy for one cluster network (see the package docstring)."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import signal
from pathlib import Path

from aiohttp import web

from apimachinery.process import start_component
from kubeclient import Clientset, metrics

from . import mode
from .proxier import Backend, IptablesBackend, NftBackend, Proxier, nft_in, run_in
from .userspace import UserspaceBackend

HEALTHZ_PORT = 10256  # kube-proxy's --healthz-bind-address port
METRICS_PORT = 10249  # kube-proxy's --metrics-bind-address port
PORTS_TRIED = 50


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="kubelab proxy", description="kube-proxy: programs ClusterIPs, NodePorts and "
                                "session affinity of every Service as nftables or iptables rules in the cluster "
                                "network, or relays them itself (userspace).")
    p.add_argument("--master", help="apiserver URL (e.g. http://127.0.0.1:8080)")
    p.add_argument("--kubeconfig", help="kubeconfig file to find the apiserver")
    p.add_argument("--proxy-mode", choices=mode.MODES, default="auto",
                   help="nftables or iptables: kube-proxy's rules in the cluster network (needs --cluster-network); "
                        "userspace: the proxy relays each ClusterIP's connections itself on its loopback stand-in "
                        "(10.96.0.1 → 127.96.0.1), for pods of the process runtime; auto: nftables where nft works "
                        "in the cluster network, else iptables, userspace without a cluster network "
                        "(default: %(default)s)")
    p.add_argument("--cluster-network", default="",
                   help="the cluster network namespace the kubelets' --cluster-network names (/run/netns/NAME)")
    p.add_argument("--cluster-cidr", default="10.244.0.0/16",
                   help="the pods' CIDR: traffic to a Service from outside it is masqueraded (default: %(default)s)")
    p.add_argument("--sync-period", type=float, default=30.0,
                   help="seconds between full re-syncs at most (default: %(default)s)")
    p.add_argument("--min-sync-period", type=float, default=0.1,
                   help="seconds between two syncs at least (default: %(default)s)")
    p.add_argument("--healthz-port", type=int, default=HEALTHZ_PORT,
                   help="serve /healthz on 127.0.0.1 at this port or the next free one (0: off; default: %(default)s)")
    p.add_argument("--metrics-port", type=int, default=METRICS_PORT,
                   help="serve /metrics (Prometheus) on 127.0.0.1 at this port or the next free one (0: off; "
                        "default: %(default)s)")
    p.add_argument("-v", "--v", dest="verbosity", type=int, default=1, help="log verbosity")
    return p.parse_args(argv)


async def serve_healthz(proxier: Proxier, first: int) -> web.AppRunner:
    """``/healthz`` on the first free port from ``first``: 200 while syncs keep up, 503 once one is overdue."""
    async def healthz(request: web.Request) -> web.Response:
        ok = proxier.healthy()
        return web.Response(status=200 if ok else 503, text="ok" if ok else "sync overdue")
    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/livez", healthz)
    return await _serve(app, first, "healthz")


async def serve_metrics(first: int) -> web.AppRunner:
    """``/metrics`` (kubeproxy_*, rest_client_*, process_*) on its own port, as kube-proxy's 10249."""
    app = web.Application()
    app.router.add_get("/metrics", metrics.serve)
    return await _serve(app, first, "metrics")


async def _serve(app: web.Application, first: int, path: str) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    for port in range(first, first + PORTS_TRIED):
        try:
            await web.TCPSite(runner, "127.0.0.1", port).start()
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                continue
            raise
        logging.info("%s: http://127.0.0.1:%d/%s", path, port, path)
        return runner
    raise SystemExit(f"no free port for /{path} in {first}..{first + PORTS_TRIED - 1}")


def backend(args: argparse.Namespace) -> tuple[Backend, str]:
    """The mode's backend, and the mode with the reason it was chosen (``--proxy-mode auto``)."""
    netns = Path("/run/netns") / args.cluster_network
    try:
        chosen, why = mode.resolve(args.proxy_mode, args.cluster_network,
                                   run_in(str(netns)) if args.cluster_network and netns.exists() else None)
    except RuntimeError as err:
        raise SystemExit(f"kubelab proxy: {err}") from None
    if chosen == "userspace":
        return UserspaceBackend(), f"userspace: {why}"
    if not args.cluster_network or not netns.exists():
        raise SystemExit(f"kubelab proxy: no cluster network {args.cluster_network!r} ({netns} does not exist; "
                         f"the kubelets create it with --cluster-network; without one use --proxy-mode userspace)")
    mode.remove_leftovers(chosen, run_in(str(netns)))
    if chosen == "iptables":
        return IptablesBackend(run_in(str(netns)), args.cluster_cidr), f"iptables: {why}"
    return NftBackend(nft_in(str(netns)), args.cluster_cidr), f"nftables: {why}"


async def run(args: argparse.Namespace) -> None:
    chosen, described = backend(args)
    client = Clientset.from_flags(master=args.master, kubeconfig=args.kubeconfig, user_agent="kube-proxy")
    proxier = Proxier(client, chosen, sync_period=args.sync_period, min_sync_period=args.min_sync_period)
    runner = await serve_healthz(proxier, args.healthz_port) if args.healthz_port else None
    scrape = await serve_metrics(args.metrics_port) if args.metrics_port else None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    logging.info("kube-proxy in mode %s%s", described,
                 f"; cluster network {args.cluster_network}" if args.cluster_network else "")
    try:
        await proxier.run(stop)
    finally:
        for server in (runner, scrape):
            if server is not None:
                await server.cleanup()
        if isinstance(chosen, UserspaceBackend):
            chosen.close()
        await client.close()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    start_component(args.verbosity)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
