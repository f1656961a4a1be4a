"""``python -m clusterdns`` / ``kubelab dns``: the cluster DNS server (CoreDNS with kubeadm's Corefile, in effect)::

    .:53 {
        health :8080 / ready :8181          here: one port (``--health-port``) serving /health, /ready, /healthz,
                                            /readyz; /ready and /readyz answer 200 once the informers synced
        prometheus :9153                    here: /metrics on that port too (``metrics``: coredns_dns_*)
        kubernetes cluster.local in-addr.arpa ip6.arpa { pods insecure; fallthrough in-addr.arpa ip6.arpa; ttl 30 }
        forward . /etc/resolv.conf          ``--forward``: a resolv.conf or ``host[:port]`` addresses
        cache 30
    }

It list-watches Services and EndpointSlices (``watch``), answers on UDP and TCP at ``--bind-address``:``--port``
(``server``), and keeps ``kube-system/kube-dns`` (ClusterIP ``--cluster-ip``) pointing at ``--advertise-address``
and the port it listens on (``kubedns``; ``--publish-service=false`` leaves it alone). SIGTERM/SIGINT stop it
with status 0.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import signal
import sys

from aiohttp import web

from apimachinery.process import start_component
from kubeclient import Clientset, metrics

from .forward import Forwarder, upstreams_from
from .kubedns import KubeDnsPublisher
from .records import ClusterRecords
from .server import DnsServer
from .watch import RecordWatcher

log = logging.getLogger("clusterdns")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="kubelab dns", description="The kubelab cluster DNS: the Kubernetes DNS "
                                "specification over UDP and TCP, other names forwarded.")
    p.add_argument("--master", help="apiserver URL (e.g. http://127.0.0.1:8080)")
    p.add_argument("--kubeconfig", help="kubeconfig file to find the apiserver")
    p.add_argument("--cluster-domain", default="cluster.local", help="the zone served (default: %(default)s)")
    p.add_argument("--bind-address", default="127.0.0.1", help="address to answer on (default: %(default)s)")
    p.add_argument("--port", type=int, default=53, help="UDP and TCP port (0: any free one; default: %(default)s)")
    p.add_argument("--advertise-address", help="address published in kube-dns's EndpointSlice (default: "
                   "--bind-address, or 127.0.0.1 when that is unspecified)")
    p.add_argument("--forward", default="/etc/resolv.conf",
                   help="upstream resolvers: a resolv.conf, or 'host[:port] ...' (default: %(default)s)")
    p.add_argument("--ttl", type=int, default=30, help="TTL of the cluster's records (default: %(default)s)")
    p.add_argument("--cluster-ip", default="10.96.0.10", help="kube-dns's ClusterIP (default: %(default)s)")
    p.add_argument("--publish-service", choices=("true", "false"), default="true",
                   help="create kube-system/kube-dns and keep its EndpointSlice (default: %(default)s)")
    p.add_argument("--health-port", type=int, default=0, help="/health and /ready port (0: any free one)")
    p.add_argument("-v", "--v", dest="verbosity", type=int, default=1, help="log verbosity")
    return p.parse_args(argv)


def advertised(args: argparse.Namespace) -> str:
    if args.advertise_address:
        return str(args.advertise_address)
    return "127.0.0.1" if ipaddress.ip_address(args.bind_address).is_unspecified else str(args.bind_address)


async def _health(records_ready: asyncio.Event, host: str, port: int) -> web.AppRunner:
    async def ok(_: web.Request) -> web.Response:
        return web.Response(text="OK")

    async def ready(_: web.Request) -> web.Response:
        return web.Response(text="OK") if records_ready.is_set() else web.Response(status=503, text="not ready")

    app = web.Application()
    for path in ("/health", "/healthz", "/livez"):
        app.router.add_get(path, ok)
    for path in ("/ready", "/readyz"):
        app.router.add_get(path, ready)
    app.router.add_get("/metrics", metrics.serve)  # coredns_dns_* (clusterdns/metrics.py), rest_client_*, process_*
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    # The launcher polls /healthz (alive), as the controller-manager's: /readyz waits for the informers, so for the
    # apiserver and the roles the launcher creates once the apiserver is healthy.
    print(f"healthz: http://127.0.0.1:{bound}/healthz", file=sys.stderr, flush=True)
    return runner


async def run(args: argparse.Namespace) -> int:
    client = Clientset.from_flags(master=args.master, kubeconfig=args.kubeconfig, user_agent="kubelab-dns")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    records = ClusterRecords(args.cluster_domain, args.ttl)
    own = advertised(args)
    forwarder = Forwarder(upstreams_from(args.forward, own=(own, args.port)))
    synced = asyncio.Event()  # set once the informers have listed (/ready; name errors until then are SERVFAIL)
    server = DnsServer(records, forwarder, args.bind_address, args.port, synced=synced.is_set)
    try:
        await server.start()
    except OSError as err:
        print(f"error: cannot listen on {args.bind_address}:{args.port}: {err}", file=sys.stderr)
        await client.close()
        return 1
    log.info("answering %s on %s:%d (UDP and TCP); forwarding the rest to %s", records.zone, args.bind_address,
             server.port, forwarder.upstreams or "nobody (SERVFAIL)")
    print(f"dns: {args.bind_address}:{server.port}", file=sys.stderr, flush=True)
    watcher = RecordWatcher(client, records)
    publisher = KubeDnsPublisher(client, cluster_ip=args.cluster_ip, address=own, port=server.port) \
        if args.publish_service == "true" else None
    if publisher is not None:
        watcher.on_kube_dns(publisher.poke)
    runner = await _health(synced, "127.0.0.1", args.health_port)
    tasks = [asyncio.create_task(watcher.run(stop, synced))]
    if publisher is not None:
        tasks.append(asyncio.create_task(publisher.run(stop)))
    try:
        await stop.wait()
        return 0
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.stop()
        await runner.cleanup()
        await client.close()
        log.info("dns stopped")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    start_component(args.verbosity)
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
