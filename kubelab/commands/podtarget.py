"""What ``kubelab trace pod`` and ``kubelab explain pod`` share: naming a pod and reaching the apiserver.

Both take ``pod NAME [-n NS] [--master URL] [--kubeconfig PATH] [-o table|json] [--request-timeout S]``,
find the server as kubectl does (``--master``, else the kubeconfig's, else http://localhost:8080), and
report an unreachable apiserver in one line instead of a traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import httpx

from kubeclient.config import ConfigError, build_config

DEFAULT_SERVER = "http://localhost:8080"  # kubectl's default server, where `kubelab up` puts the apiserver


def add_pod_arguments(parser: argparse.ArgumentParser, verb: str, why_pods: str) -> None:
    parser.add_argument("kind", choices=("pod", "pods", "po"), help=f"what to {verb} ({why_pods})")
    parser.add_argument("name", help="the pod's name")
    parser.add_argument("-n", "--namespace", default="default", help="the pod's namespace (default: default)")
    parser.add_argument("--master", default=None, metavar="URL",
                        help=f"the apiserver URL (default: the kubeconfig's server, else {DEFAULT_SERVER})")
    parser.add_argument("--kubeconfig", default=None, metavar="PATH",
                        help="kubeconfig to read the server from (default: $KUBECONFIG, ~/.kube/config)")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="output format")
    parser.add_argument("--request-timeout", type=float, default=30.0, metavar="SECONDS",
                        help="timeout for each request (default 30)")


def apiserver_client(args: argparse.Namespace, command: str) -> httpx.Client | None:
    """An httpx client for the apiserver the flags name; None (after saying why on stderr) if they are wrong."""
    agent = f"kubelab-{command}"
    try:
        config = build_config(master=args.master, kubeconfig=args.kubeconfig, user_agent=agent)
    except ConfigError as e:
        if args.master or args.kubeconfig:
            print(f"kubelab {command}: {e}", file=sys.stderr)
            return None
        config = build_config(master=DEFAULT_SERVER, user_agent=agent)
    headers = {"User-Agent": config.user_agent, **({"Authorization": f"Bearer {config.token}"} if config.token else {})}
    verify: Any = config.ssl_context() or True
    return httpx.Client(base_url=config.host, headers=headers, verify=verify, timeout=args.request_timeout)


def unreachable(command: str, client: httpx.Client, error: httpx.HTTPError) -> int:
    print(f"kubelab {command}: cannot reach the apiserver at {client.base_url}: {error}", file=sys.stderr)
    return 1
