"""``python -m kubelet`` / ``kubelab kubelet``: run one node's kubelet (real processes as containers).

``--runtime linux`` (the default where the kubelet runs as root and the kernel allows it: ``--runtime auto``) runs
each container as a Linux container (``runtime.linux``); ``--runtime process`` as a plain OS process.
``--runtime docker`` runs the pods' containers as real containers through the Docker engine at ``DOCKER_HOST``
(default ``unix:///var/run/docker.sock``) instead; it needs a reachable engine and exits at once without one.
``--hollow --count N`` runs N simulated nodes instead (``hollow``: no processes; for scale benchmarks only)."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import signal
import ssl
from pathlib import Path

from aiohttp import web

from apimachinery.meta import parse_bool, parse_duration
from apimachinery.process import start_component
from kubeclient import Clientset
from kubeclient.informer import snapshot as informer_snapshot

from .auth import Authenticator, Authorizer, middleware
from .bootstrap import BootstrapError, load_client_cert
from .dnsconfig import ResolverSettings
from .hollow import HollowNodes
from .images import ImageStore
from .kubelet import Kubelet
from .network import BridgeNetwork, ClusterNetwork, usable
from .node import PROCESS_RUNTIME_VERSION, NodeAgent, machine_capacity
from .runtime.docker import DockerImages, DockerRuntime, EngineError
from .runtime.linux import RUNTIME_VERSION as LINUX_RUNTIME_VERSION
from .runtime.linux import LinuxRuntime, probe
from .server import make_app, make_healthz_app
from .tlsserving import server_context, serving_files


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="kubelab kubelet", description="The kubelab node agent: runs the pods bound "
                                "to its node as real OS processes and reports their status.")
    p.add_argument("--master", help="apiserver URL (e.g. http://127.0.0.1:8080)")
    p.add_argument("--kubeconfig", help="kubeconfig file to find the apiserver")
    p.add_argument("--bootstrap-kubeconfig",
                   help="TLS bootstrapping: when --kubeconfig is missing or its client certificate expired, ask for "
                        "one (a CertificateSigningRequest made with this kubeconfig's credentials, a bootstrap token) "
                        "and write --kubeconfig pointing at <cert-dir>/kubelet-client-current.pem")
    p.add_argument("--provisioner-kubeconfig",
                   help="kubeconfig of the kubelab.io/local-path provisioner this kubelet runs (default: the "
                        "kubelet's own, which the Node authorizer does not let list claims and volumes)")
    p.add_argument("--node-name", help="name of this node (e.g. node01); required unless --hollow")
    p.add_argument("--hollow", action="store_true",
                   help="SIMULATE --count nodes (as kubemark): register and heartbeat them, mark their pods Running "
                        "without starting any process; for scale benchmarks only")
    p.add_argument("--count", type=int, default=1, help="with --hollow: how many nodes (default: %(default)s)")
    p.add_argument("--node-name-prefix", default="hollow-node-",
                   help="with --hollow: node names are PREFIX0, PREFIX1, ... (default: %(default)s)")
    p.add_argument("--port", type=int, default=10250, help="port of the kubelet API (logs) (default: %(default)s)")
    p.add_argument("--address", default="127.0.0.1", help="address to serve the kubelet API on")
    p.add_argument("--node-ip", default="", help="InternalIP published in the node's status (default: 127.0.0.1, "
                   "or one of the cluster network's with --cluster-network)")
    p.add_argument("--cluster-dns", default="",
                   help="comma-separated DNS server addresses for ClusterFirst pods (default: none)")
    p.add_argument("--cluster-domain", default="cluster.local",
                   help="the cluster's DNS domain, searched by ClusterFirst pods (default: %(default)s)")
    p.add_argument("--resolv-conf", default="/etc/resolv.conf",
                   help="the resolver configuration Default pods get (\"\": none; default: %(default)s)")
    p.add_argument("--root-dir", default=".kubelab/kubelet", help="directory for pods' files and logs")
    p.add_argument("--healthz-port", type=int, default=0,
                   help="serve a plain-HTTP /healthz (only) on 127.0.0.1:PORT, kube's 10248 (0: off)")
    tls = p.add_argument_group("serving and access (kube's kubelet flags)")
    tls.add_argument("--tls-cert-file", help="the HTTPS serving certificate (default: a self-signed one in "
                     "--cert-dir)")
    tls.add_argument("--tls-private-key-file", help="the key of --tls-cert-file")
    tls.add_argument("--cert-dir", help="where the self-signed kubelet.crt/kubelet.key and, with TLS bootstrapping, "
                     "the client certificate are kept (default: "
                     "ROOT_DIR/pki)")
    tls.add_argument("--client-ca-file", help="authenticate client certificates signed by this CA (CN user, O "
                     "groups)")
    tls.add_argument("--anonymous-auth", type=parse_bool, nargs="?", const=True, default=True, metavar="BOOL",
                     help="serve requests no authenticator claims as system:anonymous (default: %(default)s)")
    tls.add_argument("--authentication-token-webhook", type=parse_bool, nargs="?", const=True, default=False,
                     metavar="BOOL", help="check bearer tokens with a TokenReview (default: %(default)s)")
    tls.add_argument("--authentication-token-webhook-cache-ttl", type=parse_duration, default="2m",
                     metavar="DURATION", help="how long TokenReview answers are kept (default: 2m)")
    tls.add_argument("--authorization-mode", choices=("AlwaysAllow", "Webhook"), default="AlwaysAllow",
                     help="Webhook: a SubjectAccessReview per request (default: %(default)s)")
    tls.add_argument("--authorization-webhook-cache-authorized-ttl", type=parse_duration, default="5m",
                     metavar="DURATION", help="how long an allowed answer is kept (default: 5m)")
    tls.add_argument("--authorization-webhook-cache-unauthorized-ttl", type=parse_duration, default="30s",
                     metavar="DURATION", help="how long a denial is kept (default: 30s)")
    p.add_argument("--cpu", help="cpu capacity (default: the machine's)")
    p.add_argument("--memory", help="memory capacity (default: the machine's)")
    p.add_argument("--pods", default="110", help="pod capacity (default: %(default)s)")
    p.add_argument("--node-labels", default="", help="extra labels, key=value[,key=value]")
    p.add_argument("--register-with-taints", default="", help="taints at registration, key=value:Effect[,...]")
    p.add_argument("--node-lease-renew-interval", type=float, default=10.0, help="seconds between Lease renewals")
    p.add_argument("--node-status-update-frequency", type=float, default=60.0,
                   help="seconds between node status posts")
    p.add_argument("--runtime", choices=("auto", "linux", "process", "docker"), default="auto",
                   help="linux: Linux containers (namespaces, the image's root file system, cgroups; needs root); "
                        "process: each container is an OS process; docker: real containers through the Docker "
                        "engine at DOCKER_HOST or unix:///var/run/docker.sock; auto: linux where the kubelet runs "
                        "as root and the kernel allows namespaces and pivot_root and a static busybox is there, else "
                        "process, saying why in the log (default: %(default)s)")
    p.add_argument("--cluster-network", default="",
                   help="with the linux runtime: put pods on this cluster network namespace (created if absent; "
                        "see kubelet/network.py): a bridge for this node, a veth per pod, pod IPs from the Node's "
                        "podCIDR (run the controller-manager with --cluster-cidr 10.244.0.0/16), the node's "
                        "InternalIP on the cluster network unless --node-ip is given (default: off: pods share the "
                        "host's namespace, each binding its loopback pod IP)")
    p.add_argument("--crashloop-backoff", type=float, default=10.0,
                   help="first CrashLoopBackOff delay in seconds, doubling to 300 (default: %(default)s)")
    p.add_argument("-v", "--v", dest="verbosity", type=int, default=1, help="log verbosity")
    args = p.parse_args(argv)
    if not args.hollow and not args.node_name:
        p.error("--node-name is required (or --hollow)")
    if args.bootstrap_kubeconfig and not args.kubeconfig:
        p.error("--bootstrap-kubeconfig needs --kubeconfig: where to write the kubeconfig it bootstraps")
    return args


def resolver_settings(args: argparse.Namespace) -> ResolverSettings:
    """``--cluster-dns``, ``--cluster-domain`` and ``--resolv-conf``, for the pods' resolv.conf."""
    servers = tuple(part.strip() for part in args.cluster_dns.split(",") if part.strip())
    for server in servers:
        try:
            ipaddress.ip_address(server)
        except ValueError:
            raise SystemExit(f"invalid value for --cluster-dns: {server!r} is not an IP address") from None
    return ResolverSettings(servers, args.cluster_domain, args.resolv_conf)


def api_server(args: argparse.Namespace, kubelet: Kubelet, client: Clientset,
               registered: asyncio.Event) -> tuple[web.Application, ssl.SSLContext]:
    """The kubelet's API behind its auth filter, and the TLS context it is served with."""
    cert, key = serving_files(args.tls_cert_file, args.tls_private_key_file,
                              Path(args.cert_dir) if args.cert_dir else Path(args.root_dir).absolute() / "pki",
                              args.node_ip)
    authenticator = Authenticator(client, anonymous=args.anonymous_auth, x509=bool(args.client_ca_file),
                                  webhook=args.authentication_token_webhook,
                                  cache_ttl=args.authentication_token_webhook_cache_ttl)
    authorizer = Authorizer(args.authorization_mode, client, args.node_name,
                            allowed_ttl=args.authorization_webhook_cache_authorized_ttl,
                            denied_ttl=args.authorization_webhook_cache_unauthorized_ttl)
    app = make_app(kubelet, registered, middlewares=[middleware(authenticator, authorizer)])
    return app, server_context(cert, key, args.client_ca_file)


def _taints(text: str) -> list[dict[str, str]]:
    taints = []
    for item in filter(None, text.split(",")):
        kv, _, effect = item.partition(":")
        key, _, value = kv.partition("=")
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        taints.append(taint)
    return taints


async def run(args: argparse.Namespace) -> None:
    if args.bootstrap_kubeconfig:
        cert_dir = Path(args.cert_dir or Path(args.root_dir) / "pki").absolute()
        try:
            await load_client_cert(Path(args.kubeconfig), Path(args.bootstrap_kubeconfig), cert_dir, args.node_name)
        except BootstrapError as err:
            raise SystemExit(f"failed to run Kubelet: unable to load bootstrap kubeconfig or certificate: {err}") \
                from None
    client = Clientset.from_flags(master=args.master, kubeconfig=args.kubeconfig, user_agent="kubelet")
    provisioner_client = Clientset.from_flags(kubeconfig=args.provisioner_kubeconfig,
                                              user_agent="local-path-provisioner") \
        if args.provisioner_kubeconfig else None
    capacity = machine_capacity()
    capacity["pods"] = args.pods
    if args.cpu:
        capacity["cpu"] = args.cpu
    if args.memory:
        capacity["memory"] = args.memory
    labels = dict(kv.split("=", 1) for kv in filter(None, args.node_labels.split(",")))
    if args.hollow:
        await run_hollow(args, client, capacity, labels)
        return
    root = Path(args.root_dir).absolute()
    args.node_ip = args.node_ip or "127.0.0.1"
    docker = None
    cluster: ClusterNetwork | None = None
    linux: LinuxRuntime | None = None
    if args.runtime == "docker":
        docker = DockerRuntime(args.node_name)
        images = DockerImages(root / "images", args.crashloop_backoff, engine=docker.engine)
        try:
            await docker.connect()
            await images.relist()
        except EngineError as err:
            await docker.close()
            await client.close()
            if provisioner_client is not None:
                await provisioner_client.close()
            raise SystemExit(f"--runtime docker: no Docker engine at {docker.engine.host}: {err}") from None
        logging.info("runtime: Docker engine %s at %s", docker.version, docker.engine.host)
        kubelet = Kubelet(client, args.node_name, root, args.node_ip, backoff_base=args.crashloop_backoff,
                          runtime=docker, images=images, provisioner_client=provisioner_client,
                          dns=resolver_settings(args))
    else:
        store = ImageStore(root / "images", args.crashloop_backoff)
        linux = choose_linux(args.runtime, root, args.node_name, store)
        cluster, bridge = pod_network(args, linux)
        kubelet = Kubelet(client, args.node_name, root, args.node_ip, backoff_base=args.crashloop_backoff,
                          runtime=linux, images=store, provisioner_client=provisioner_client,
                          dns=resolver_settings(args))
        if bridge is not None:
            bridge.pod_cidr = lambda: kubelet.pod_ips.cidr
            kubelet.pod_ips.require_cidr = True
            kubelet.service_env.cluster_ips_routed = True
    if docker is not None:
        runtime_version = docker.runtime_version
    else:
        runtime_version = linux.runtime_version if linux is not None else PROCESS_RUNTIME_VERSION
    node = NodeAgent(client, args.node_name, port=args.port, host_ip=args.node_ip, capacity=capacity,
                     labels=labels, taints=_taints(args.register_with_taints),
                     lease_interval=args.node_lease_renew_interval,
                     status_interval=args.node_status_update_frequency, images=kubelet.images,
                     runtime_version=runtime_version)
    app, tls = api_server(args, kubelet, client, node.registered)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, args.address, args.port, ssl_context=tls).start()
    if cluster is not None and args.node_ip != args.address:  # the apiserver reaches kubelets at their InternalIP
        await web.SockSite(runner, cluster.serve_socket(args.node_ip, args.port), ssl_context=tls).start()
    health_runner = None
    if args.healthz_port:
        health_runner = web.AppRunner(make_healthz_app(node.registered), access_log=None)
        await health_runner.setup()
        await web.TCPSite(health_runner, "127.0.0.1", args.healthz_port).start()
        logging.info("healthz: http://127.0.0.1:%d/healthz", args.healthz_port)
    else:
        logging.info("healthz: https://127.0.0.1:%d/healthz", args.port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        # Registration retries until the apiserver answers; the pod informer meanwhile does the same on its own.
        await asyncio.gather(node.run(stop), kubelet.run(stop))
    finally:
        await runner.cleanup()
        if health_runner is not None:
            await health_runner.cleanup()
        await client.close()
        if provisioner_client is not None:
            await provisioner_client.close()
        if docker is not None:
            await docker.close()


def pod_network(args: argparse.Namespace, linux: LinuxRuntime | None) -> tuple[ClusterNetwork | None,
                                                                            BridgeNetwork | None]:
    """With ``--cluster-network`` and the linux runtime: the cluster network (created if absent), this node's
    bridge as the runtime's network, and the node's InternalIP on it (unless ``--node-ip`` named one)."""
    if not args.cluster_network:
        return None, None
    why = usable()
    if linux is None or why is not None:
        logging.warning("--cluster-network %s: not used (%s): pods share the host's network namespace",
                        args.cluster_network, why or "the runtime is not linux")
        return None, None
    cluster = ClusterNetwork(args.cluster_network)
    cluster.ensure()
    if args.node_ip == "127.0.0.1":
        args.node_ip = cluster.node_ip(args.node_name)
    bridge = BridgeNetwork(cluster, args.node_name)
    linux.network = bridge
    logging.info("pod network: bridge %s in %s, node IP %s", bridge.bridge, cluster.path, args.node_ip)
    return cluster, bridge


def choose_linux(runtime: str, root: Path, node_name: str, images: ImageStore) -> LinuxRuntime | None:
    """The linux runtime when asked for (exits if this host cannot run it) or, with ``auto``, where it can."""
    if runtime == "process":
        logging.info("runtime: process")
        return None
    why, overlay = probe(root / "tmp")
    if why is not None:
        if runtime == "linux":
            raise SystemExit(f"--runtime linux: this host cannot run Linux containers: {why}")
        logging.info("runtime: process (linux containers are not available here: %s)", why)
        return None
    logging.info("runtime: linux (%s, %s)", LINUX_RUNTIME_VERSION,
                 "overlayfs" if overlay else "a copy of the image per container")
    return LinuxRuntime(root, images, node_name, overlay=overlay)


async def run_hollow(args: argparse.Namespace, client: Clientset, capacity: dict[str, str],
                     labels: dict[str, str]) -> None:
    nodes = HollowNodes(client, prefix=args.node_name_prefix, count=args.count, capacity=capacity, labels=labels,
                        lease_interval=args.node_lease_renew_interval,
                        status_interval=args.node_status_update_frequency)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    runner = None
    if args.healthz_port:
        app = make_healthz_app()
        app.router.add_get("/debug/informers", _informers)  # hollow nodes serve no API: only these
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", args.healthz_port).start()
    logging.warning("hollow mode: %d SIMULATED nodes %s0..%d; their pods run no process", args.count,
                    args.node_name_prefix, args.count - 1)
    try:
        if await nodes.register(stop):
            await nodes.run(stop)
    finally:
        if runner is not None:
            await runner.cleanup()
        await client.close()


async def _informers(request: web.Request) -> web.Response:
    return web.json_response(informer_snapshot("kubelet (hollow)"))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    start_component(args.verbosity)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
