"""``python -m apiserver`` / ``kubelab apiserver``: serve the Kubernetes API over etcd (kube-apiserver's flags)."""

from __future__ import annotations

import argparse
import logging
import sys

import uvicorn

from apimachinery.meta import parse_duration

from .app import Config, create_app
from .authorizer import parse_modes
from .storage.encryptionconfig import EncryptionConfigError
from .storage.etcd3 import EtcdTLS, uses_tls
from .registry.store import ETCD_MAX_REQUEST_BYTES
from .spdy.upgrade import HttpToolsProtocol


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="kubelab apiserver",
        description="The kubelab API server: Kubernetes REST, list and watch over a real etcd.",
    )
    parser.add_argument("--etcd-servers", default="http://127.0.0.1:2379",
                        help="comma-separated etcd client URLs, http:// or https:// (default: %(default)s)")
    parser.add_argument("--etcd-cafile", default=None, help="SSL Certificate Authority file used to secure etcd "
                        "communication")
    parser.add_argument("--etcd-certfile", default=None, help="SSL certification file used to secure etcd "
                        "communication")
    parser.add_argument("--etcd-keyfile", default=None, help="SSL key file used to secure etcd communication")
    parser.add_argument("--port", "--secure-port", dest="port", type=int, default=8080,
                        help="port to serve plain HTTP on (default: %(default)s, kubectl's default server)")
    parser.add_argument("--bind-address", default="127.0.0.1",
                        help="address to listen on (default: %(default)s)")
    parser.add_argument("--advertise-address", default=None,
                        help="address:port advertised in /api (default: bind address and port)")
    parser.add_argument("--watch-cache-size", type=int, default=10_000,
                        help="events kept per resource for watch resumption (default: %(default)s)")
    parser.add_argument("--encryption-provider-config", default=None, metavar="FILE",
                        help="an apiserver.config.k8s.io/v1 EncryptionConfiguration: how resources (Secrets) are "
                             "encrypted at rest in etcd (default: stored as they are)")
    parser.add_argument("--etcd-compaction-interval", type=_duration, default="5m", metavar="DURATION",
                        help="how often etcd's history is compacted, keeping one interval of it (Go duration; "
                             "0 disables; default: %(default)s)")
    parser.add_argument("--etcd-max-request-bytes", type=int, default=ETCD_MAX_REQUEST_BYTES,
                        help="etcd's --max-request-bytes: an object whose stored form (with its key) is larger is "
                             "refused with 413 before it is written (default: %(default)s, etcd's default)")
    parser.add_argument("--authorization-mode", type=_modes, default="AlwaysAllow", metavar="MODES",
                        help="ordered comma list of authorizers: AlwaysAllow, AlwaysDeny, Node, RBAC (kubelab up "
                             "passes Node,RBAC; default: %(default)s)")
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=1,
                        help="log verbosity: 0 warnings, 1 info, 2+ debug and access log (default: %(default)s)")
    return parser.parse_args(argv)


def _modes(text: str) -> list[str]:
    try:
        return parse_modes(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    level = logging.WARNING if args.verbosity <= 0 else logging.INFO if args.verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    servers = [s.strip() for s in args.etcd_servers.split(",") if s.strip()]
    tls = EtcdTLS(args.etcd_cafile, args.etcd_certfile, args.etcd_keyfile)
    if (tls.certfile is None) != (tls.keyfile is None):
        sys.exit("kubelab apiserver: --etcd-certfile and --etcd-keyfile go together")
    try:
        uses_tls(servers, tls)
    except ValueError as err:
        sys.exit(f"kubelab apiserver: {err}")
    config = Config(
        etcd_servers=servers,
        etcd_tls=tls,
        advertise_address=args.advertise_address or f"{args.bind_address}:{args.port}",
        watch_cache_size=args.watch_cache_size,
        port=args.port,
        encryption_provider_config=args.encryption_provider_config,
        etcd_compaction_interval=args.etcd_compaction_interval,
        etcd_max_request_bytes=args.etcd_max_request_bytes,
        authorization_modes=args.authorization_mode,
    )
    try:
        app = create_app(config)
    except EncryptionConfigError as err:
        print(f"Error: {err}", file=sys.stderr)
        sys.exit(1)
    uvicorn.run(
        app,
        host=args.bind_address,
        port=args.port,
        loop="uvloop",
        http=HttpToolsProtocol,  # httptools, plus SPDY/3.1 upgrades for old kubectl's exec (apiserver.spdy.upgrade)
        access_log=args.verbosity >= 2,
        log_level="info" if args.verbosity >= 1 else "warning",
        timeout_graceful_shutdown=2,
    )


if __name__ == "__main__":
    main()
