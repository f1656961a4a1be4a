"""How the suite is spread over pytest-xdist workers (`make test`: ``-n 2``): the one place that says which tests touch
something the whole host shares, and which start first.

Every module is one unit of work (a worker takes a module whole, so its module fixtures start once, as ``--dist
loadfile`` would), except the tests of ``HOST_GLOBAL``: they are all one unit, ``host-global``, which one worker runs
from start to end, so no two of them ever run at once. Tests belong there when they take something of the host that
two workers cannot both have: the host's routes to the bridge pod network (10.244.0.0/16, 10.96.0.0/12: the first
cluster network on the machine takes them, a second one's pods are not reachable from the host), which every
`kubelab up` as root without ``--pod-network host`` creates, even with ``--nodes 0``; the host's netfilter tables,
network namespaces, podman's rootful networks, port 53 of a loopback address.

``Scheduler`` (conftest's ``pytest_xdist_make_scheduler``, whatever ``--dist`` says but ``each``) hands the units
out in collection order, and under xdist ``order`` sorts the items so that ``host-global`` (the English walkthrough
first, the longest) and then the long modules of ``LONG`` start first, not last; without xdist (``-n 0``) the order
stays pytest's. (xdist's own ``--dist loadgroup`` cannot say this: with pytest 9.2 it no longer groups at all.)
"""

from __future__ import annotations

import os

import pytest
from xdist.scheduler import LoadScopeScheduling

__all__ = ["HOST_GLOBAL", "HOST_GLOBAL_GROUP", "LONG", "Scheduler", "group_of", "order"]

HOST_GLOBAL_GROUP = "host-global"

# A module (relative to tests/), or a prefix of test ids in it, -> what of the host it takes. Run in this order.
HOST_GLOBAL = {
    "integration/test_walkthrough.py::test_walkthrough[en-": "`kubelab up` on the linux runtime and the bridge network",
    "integration/test_supervision.py": "`kubelab up --nodes 1`: the bridge network's host routes",
    "integration/test_launcher.py": "`kubelab up --nodes 0`: the bridge network's host routes",
    "integration/test_etcd_snapshot.py": "`kubelab up --nodes 0`: the bridge network's host routes",
    "integration/test_pod_bridge.py": "a bridge cluster network: host routes, pods reached from the host",
    "integration/test_jobs.py": "`kubelab up --nodes 1`: the bridge network's host routes",
    "integration/test_compose_cluster.py": "rootful podman: a netavark bridge network and podman's store",
    "integration/test_launcher_defaults.py": "`kubelab up` on the bridge network, pods reached from the host",
    "integration/test_launcher_apiservers.py": "`kubelab up --nodes 0`: the bridge network's host routes",
    "integration/test_proxy_iptables.py": "a bridge cluster network and kube-proxy's iptables rules",
    "integration/test_pod_network_cluster.py": "kubelab.Cluster(pod_network='bridge'): host routes",
    "integration/test_cluster_dns_pods.py": "kubelab dns on 127.0.0.x:53 for the linux runtime's pods",
}

# Long modules outside the group (about 25 s or more serially), longest first: started early so that the last
# unit a worker takes is a short one. The walkthrough's Chinese page runs `--runtime process` on the host network.
LONG = [
    "integration/test_walkthrough.py",
    "chaos/test_openapi_fuzz.py",
    "integration/test_pytest_plugin.py",
    "integration/test_prometheus_metrics.py",
    "chaos/test_component_kills.py",
    "integration/test_kubelet_linux.py",
    "integration/test_etcd_tls.py",
]


def _host_global_index(test: str) -> int | None:
    """``test``: a node id relative to tests/; its entry's index in ``HOST_GLOBAL``, None if it has none."""
    for index, prefix in enumerate(HOST_GLOBAL):
        if test.startswith(prefix if "::" in prefix else prefix + "::"):
            return index
    return None


def group_of(nodeid: str) -> str:
    """The unit of work of a test (its node id, relative to the repository): ``host-global`` or its module."""
    test = nodeid.removeprefix("tests/")
    return HOST_GLOBAL_GROUP if _host_global_index(test) is not None else test.split("::", 1)[0]


def _rank(nodeid: str) -> int:
    test = nodeid.removeprefix("tests/")
    index = _host_global_index(test)
    if index is not None:
        return index
    module = test.split("::", 1)[0]
    return len(HOST_GLOBAL) + (LONG.index(module) if module in LONG else len(LONG))


def order(items: list[pytest.Item]) -> None:
    """In an xdist worker, sort the items as the module docstring says (stable: pytest's order within a module)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: _rank(item.nodeid))


class Scheduler(LoadScopeScheduling):
    """xdist's ``loadscope`` with ``group_of`` as the scope, in collection order."""

    def __init__(self, config: pytest.Config, log: object = None) -> None:
        config.option.loadscopereorder = False  # the order is ``order``'s, not the biggest unit first
        super().__init__(config, log)  # type: ignore[arg-type]

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)
