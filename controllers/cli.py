"""The command line: kube-controller-manager's flags (the subset kubelab implements) and ``main``.

Flag names and defaults are kube-controller-manager's; durations are Go durations (``50s``, ``1m30s``,
``500ms``) or plain seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from apimachinery.meta import parse_duration
from apimachinery.process import start_component
from controllers.manager import CONTROLLERS, enabled_controllers, run
from controllers.nodeipam import DEFAULT_CLUSTER_CIDR, DEFAULT_NODE_CIDR_MASK_SIZE, CidrSet


def duration(text: str) -> float:
    """Seconds in a Go duration string (``1m30s`` → 90.0) or a plain number of seconds."""
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kubelab controller-manager",
        description="The kubelab controller-manager: Kubernetes' core control loops over List-Watch "
                    "(replication, ReplicaSets, Deployments, node IPAM, node lifecycle, NoExecute taint eviction, "
                    "pod GC, garbage collection, namespaces, service accounts, endpoints and EndpointSlices, "
                    "disruption budgets, DaemonSets, Jobs, CronJobs and HorizontalPodAutoscalers).")
    p.add_argument("--master", default=None, help="URL of the apiserver (overrides the kubeconfig's server)")
    p.add_argument("--kubeconfig", default=None, help="kubeconfig file with the apiserver's address and credentials")
    names = ", ".join(f"{n} ({'/'.join(a)})" if a else n for n, (a, _) in CONTROLLERS.items())
    p.add_argument("--controllers", default=["*"], type=lambda s: s.split(","),
                   help=f"controllers to run: '*' all, 'foo' enables foo, '-foo' disables foo; known: {names} "
                        "(default: *)")
    g = p.add_argument_group("leader election")
    g.add_argument("--leader-elect", type=_bool, default=True, nargs="?", const=True,
                   help="run controllers only while holding the leader Lease, so several managers can run "
                        "(default: true)")
    g.add_argument("--leader-elect-lease-duration", type=duration, default=15.0,
                   help="how long a non-leader waits after the last renewal before taking over (default: 15s)")
    g.add_argument("--leader-elect-renew-deadline", type=duration, default=10.0,
                   help="how long the leader keeps retrying a renewal before giving up (default: 10s)")
    g.add_argument("--leader-elect-retry-period", type=duration, default=2.0,
                   help="interval between acquire/renew attempts (default: 2s)")
    g.add_argument("--leader-elect-resource-namespace", default="kube-system",
                   help="namespace of the leader Lease (default: kube-system)")
    g.add_argument("--leader-elect-resource-name", default="kube-controller-manager",
                   help="name of the leader Lease (default: kube-controller-manager)")
    g = p.add_argument_group("controllers")
    p.add_argument("--use-service-account-credentials", type=_bool, nargs="?", const=True, default=False,
                   metavar="BOOL", help="each controller writes as its own service account kube-system/<name>, "
                   "with a token from TokenRequest (kubelab up passes it; default: false)")
    g.add_argument("--root-ca-file", default=None, metavar="FILE",
                   help="the cluster's root CA bundle, published as ConfigMap kube-root-ca.crt in every namespace "
                        "(root-ca-certificate-publisher-controller; not started without it)")
    g.add_argument("--concurrent-replicaset-syncs", type=int, default=5,
                   help="ReplicaSets synced concurrently (default: 5)")
    g.add_argument("--concurrent-rc-syncs", "--concurrent_rc_syncs", dest="concurrent_rc_syncs", type=int, default=5,
                   help="ReplicationControllers synced concurrently (default: 5)")
    g.add_argument("--concurrent-deployment-syncs", type=int, default=5,
                   help="Deployments synced concurrently (default: 5)")
    g.add_argument("--concurrent-job-syncs", type=int, default=5,
                   help="Jobs synced concurrently (default: 5)")
    g.add_argument("--job-pod-failure-backoff", type=duration, default=10.0,
                   help="kubelab: the first wait before a failed Job pod is replaced, doubled per failure up to 6m "
                        "(kube-controller-manager's fixed 10s; shorter for tests) (default: 10s)")
    g.add_argument("--concurrent-cron-job-syncs", type=int, default=5,
                   help="CronJobs synced concurrently (default: 5)")
    g.add_argument("--concurrent-ttl-after-finished-syncs", type=int, default=5,
                   help="finished Jobs checked for their TTL concurrently (default: 5)")
    g.add_argument("--concurrent-gc-syncs", type=int, default=20,
                   help="garbage collector workers (default: 20)")
    g.add_argument("--concurrent-namespace-syncs", type=int, default=10,
                   help="namespaces emptied concurrently (default: 10)")
    g.add_argument("--concurrent-daemonset-syncs", type=int, default=2,
                   help="DaemonSets synced concurrently (default: 2)")
    g.add_argument("--concurrent-statefulset-syncs", type=int, default=5,
                   help="StatefulSets synced concurrently (default: 5)")
    g.add_argument("--concurrent-endpoint-syncs", type=int, default=5,
                   help="Services whose Endpoints are synced concurrently (default: 5)")
    g.add_argument("--concurrent-service-endpoint-syncs", type=int, default=5,
                   help="Services whose EndpointSlices are synced concurrently (default: 5)")
    g.add_argument("--mirroring-concurrent-service-endpoint-syncs", type=int, default=5,
                   help="Endpoints mirrored to EndpointSlices concurrently (default: 5)")
    g.add_argument("--max-endpoints-per-slice", type=int, default=100,
                   help="endpoints in one EndpointSlice at most (default: 100)")
    g.add_argument("--node-monitor-period", type=duration, default=5.0,
                   help="how often node health is checked (default: 5s)")
    g.add_argument("--node-monitor-grace-period", type=duration, default=50.0,
                   help="how long a node may go without a heartbeat (Lease or status) before it is marked "
                        "Unknown and tainted unreachable (default: 50s)")
    g.add_argument("--node-startup-grace-period", type=duration, default=60.0,
                   help="how long a new node may take to post its first status before it is marked Unknown "
                        "(default: 1m)")
    g.add_argument("--allocate-node-cidrs", type=_bool, default=True, nargs="?", const=True,
                   help="give every Node a pod CIDR from --cluster-cidr (spec.podCIDR), from which its kubelet "
                        "gives its pods their IPs (default: true, unlike kube-controller-manager: kubelab has no "
                        "CNI plugin to do it)")
    g.add_argument("--cluster-cidr", default=DEFAULT_CLUSTER_CIDR,
                   help=f"CIDR range of the pods (default: {DEFAULT_CLUSTER_CIDR}: inside 127.0.0.0/8, which "
                        "Linux routes to lo and lets processes bind without any set-up, and clear of 127.0.0.1 "
                        "and Debian's 127.0.1.1)")
    g.add_argument("--node-cidr-mask-size", type=int, default=DEFAULT_NODE_CIDR_MASK_SIZE,
                   help=f"mask size of each Node's pod CIDR (default: {DEFAULT_NODE_CIDR_MASK_SIZE})")
    g.add_argument("--concurrent-horizontal-pod-autoscaler-syncs", type=int, default=5,
                   help="HorizontalPodAutoscalers reconciled concurrently (default: 5)")
    g.add_argument("--horizontal-pod-autoscaler-sync-period", type=duration, default=15.0,
                   help="how often each HorizontalPodAutoscaler is reconciled (default: 15s)")
    g.add_argument("--horizontal-pod-autoscaler-downscale-stabilization", type=duration, default=300.0,
                   help="how far back the autoscaler looks for higher recommendations before scaling down, for "
                        "HPAs without spec.behavior.scaleDown.stabilizationWindowSeconds (default: 5m)")
    g.add_argument("--horizontal-pod-autoscaler-tolerance", type=float, default=0.1,
                   help="the minimum change of the usage ratio from 1.0 that makes the autoscaler act "
                        "(default: 0.1)")
    g.add_argument("--horizontal-pod-autoscaler-cpu-initialization-period", type=duration, default=300.0,
                   help="after a pod starts, how long its CPU samples count only once it is Ready and a whole "
                        "sample was taken since (default: 5m)")
    g.add_argument("--horizontal-pod-autoscaler-initial-readiness-delay", type=duration, default=30.0,
                   help="after a pod starts, how long its readiness may flap without it counting as never ready "
                        "(default: 30s)")
    g.add_argument("--resource-quota-sync-period", type=duration, default=300.0,
                   help="how often every quota's usage is recounted in full (kube: 5m0s)")
    g.add_argument("--concurrent-resource-quota-syncs", type=int, default=5,
                   help="quotas synced at once")
    g.add_argument("--terminated-pod-gc-threshold", type=int, default=12500,
                   help="terminated pods kept before the pod GC deletes the oldest; <= 0 disables (default: 12500)")
    g.add_argument("--cluster-signing-cert-file", default=None, metavar="FILE",
                   help="the CA certificate the CSR signing controller issues with (kubeadm: the cluster CA)")
    g.add_argument("--cluster-signing-key-file", default=None, metavar="FILE",
                   help="the key of --cluster-signing-cert-file (without both, CSRs are not signed)")
    g.add_argument("--cluster-signing-duration", type=duration, default=365 * 24 * 3600.0,
                   help="the longest validity of an issued certificate (kube: 8760h0m0s)")
    p.add_argument("--healthz-port", type=int, default=0,
                   help="serve /healthz on BIND-ADDRESS:PORT (0: any free port, as the scheduler; <0: off)")
    p.add_argument("--bind-address", default="127.0.0.1",
                   help="address the /healthz server listens on (default: %(default)s)")
    p.add_argument("-v", "--v", dest="verbosity", type=int, default=1,
                   help="log verbosity: 0 warnings, 1 info, 2+ debug (default: 1)")
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    options = build_parser().parse_args(argv)
    try:
        enabled_controllers(options.controllers)
        if options.allocate_node_cidrs:
            CidrSet(options.cluster_cidr, options.node_cidr_mask_size)
    except ValueError as err:
        build_parser().error(str(err))
    return options


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    level = start_component(options.verbosity)
    if options.verbosity < 3:
        logging.getLogger("kubeclient").setLevel(max(level, logging.INFO))
    return asyncio.run(run(options))
