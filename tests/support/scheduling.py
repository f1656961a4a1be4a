"""How `make test` spreads the suite over pytest-xdist workers (``-n 2 --dist loadgroup --no-loadscope-reorder``):
the one place that says which modules touch something the whole host shares, and which start first.

Every module is one xdist group (a worker takes a module whole, so its module fixtures start once, as
``--dist loadfile`` would), except the modules of ``HOST_GLOBAL``: they are all one group, ``host-global``, which
one worker runs from start to end, so no two of them ever run at once. A module belongs there when it takes
something of the host that two workers cannot both have: the host's routes to the bridge pod network
(10.244.0.0/16, 10.96.0.0/12: the first cluster network on the machine takes them, a second one's pods are not
reachable from the host), which every `kubelab up` as root without ``--pod-network host`` creates, even with
``--nodes 0``; the host's netfilter tables, network namespaces, podman's rootful networks, port 53.

xdist hands out groups in collection order; under xdist the suite is ordered so that ``host-global`` (the
walkthrough first, the longest module) and then the long modules of ``LONG`` start first, not last; without
xdist (``-n 0``) the order stays pytest's.
"""

from __future__ import annotations

import os

import pytest

__all__ = ["HOST_GLOBAL", "HOST_GLOBAL_GROUP", "LONG", "assign_groups"]

HOST_GLOBAL_GROUP = "host-global"

# Module (relative to tests/) -> what of the host it takes. Longest first: the group runs in this order.
HOST_GLOBAL = {
    "integration/test_walkthrough.py": "`kubelab up` on the linux runtime and the bridge network (the English page)",
    "integration/test_supervision.py": "`kubelab up --nodes 1`: the bridge network's host routes",
    "integration/test_launcher.py": "`kubelab up --nodes 0`: the bridge network's host routes",
    "integration/test_etcd_snapshot.py": "`kubelab up --nodes 0`: the bridge network's host routes",
    "integration/test_pod_bridge.py": "a bridge cluster network: host routes, reached from the host",
    "integration/test_jobs.py": "`kubelab up --nodes 1`: the bridge network's host routes",
    "integration/test_compose_cluster.py": "rootful podman: a netavark bridge network and podman's store",
    "integration/test_launcher_defaults.py": "`kubelab up` on the bridge network, pods reached from the host",
    "integration/test_launcher_apiservers.py": "`kubelab up --nodes 0`: the bridge network's host routes",
    "integration/test_proxy_iptables.py": "a bridge cluster network and kube-proxy's iptables rules",
    "integration/test_pod_network_cluster.py": "kubelab.Cluster(pod_network='bridge'): host routes",
    "integration/test_cluster_dns_pods.py": "kubelab dns on 127.0.0.x:53 for the linux runtime's pods",
}

# Long modules outside the group (about 25 s or more serially), longest first: started early so that the last
# module a worker takes is a short one.
LONG = [
    "chaos/test_openapi_fuzz.py",
    "integration/test_pytest_plugin.py",
    "integration/test_prometheus_metrics.py",
    "chaos/test_component_kills.py",
    "integration/test_kubelet_linux.py",
    "integration/test_etcd_tls.py",
]


def _module(item: pytest.Item, tests_dir: str) -> str:
    return os.path.relpath(str(item.path), tests_dir).replace(os.sep, "/")


def assign_groups(items: list[pytest.Item], tests_dir: str) -> None:
    """Mark every item with its xdist group and, in an xdist worker, order the items as the module docstring says
    (the workers' order is the order xdist hands the groups out in)."""
    rank: dict[str, int] = {}
    for item in items:
        module = _module(item, tests_dir)
        if module in HOST_GLOBAL:
            item.add_marker(pytest.mark.xdist_group(HOST_GLOBAL_GROUP))
            rank.setdefault(item.nodeid, list(HOST_GLOBAL).index(module))
        else:
            item.add_marker(pytest.mark.xdist_group(module))
            rank.setdefault(item.nodeid, len(HOST_GLOBAL) + (LONG.index(module) if module in LONG else len(LONG)))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: rank[item.nodeid])  # stable: pytest's order within a module
