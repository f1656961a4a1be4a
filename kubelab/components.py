"""The one table of control-plane components: how to run each, and how to tell it is healthy.

Why a table: `kubelab up`, `kubelab status` and `kubelab <component>` all need the same facts (the
Python package behind a component, its flags, its health check), and adding a component should be one
row here.

Health checks:
- ``http``: GET a URL until it answers 200 (the apiserver's ``/healthz`` answers ``ok``).
- ``alive``: if the component prints its own health URL in its log (any ``http://127.0.0.1:PORT/healthz``
  or ``.../readyz``), it is up as soon as that URL answers 200, so a component opts into a real check
  without changing the launcher; otherwise it is up once the process has survived a short settle.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "COMPONENTS",
    "Component",
    "HEALTH_URL_IN_LOG",
    "component_argv",
    "kubelet_node_name",
]

HealthKind = Literal["http", "alive"]

# A component that wants a real health check prints its health URL, e.g. "healthz: http://127.0.0.1:10257/healthz".
HEALTH_URL_IN_LOG = re.compile(r"https?://(?:127\.0\.0\.1|localhost):\d+/(?:healthz|readyz|livez)")


@dataclass(frozen=True)
class Component:
    """A control-plane component run as ``python -m <package>``."""

    name: str  # command and log name: `kubelab <name>`, logs/<name>.log
    package: str  # the Python package with a __main__.py
    summary: str  # one line for `kubelab --help`
    health: HealthKind = "alive"
    health_path: str = "/healthz"
    settle: float = 1.0  # seconds an "alive" component without a health URL must survive to count as up
    startup_timeout: float = 60.0  # cold Python imports on a busy 2-core machine take seconds


COMPONENTS: dict[str, Component] = {
    c.name: c
    for c in (
        Component(
            "apiserver",
            "apiserver",
            "the API server (REST + watch over etcd)",
            health="http",
        ),
        Component(
            "controller-manager",
            "controllers",
            "the controllers (replication, replicaset, deployment, node lifecycle, gc ...)",
        ),
        Component(
            "scheduler",
            "scheduler",
            "the scheduler (filter, score, bind)",
        ),
        Component(
            "kubelet",
            "kubelet",
            "the node agent (runs pods as real processes)",
            settle=1.5,
        ),
        Component(
            "dns",
            "clusterdns",
            "the cluster DNS (<svc>.<ns>.svc.cluster.local behind kube-system/kube-dns)",
        ),
        Component(
            "ui",
            "kubelab.ui",
            "the web console (live nodes × pods, 13-step traces, the scheduler's view, watch streams, what-if)",
            health="http",  # its /healthz on the --port it is given: known at once, not once it prints it
        ),
        Component(
            "proxy",
            "proxy",
            "kube-proxy: Services as nftables or iptables rules in the cluster network (with the bridge pod network)",
        ),
    )
}


def component_argv(component: Component, args: list[str]) -> list[str]:
    """The command line that runs a component with this interpreter."""
    return [sys.executable, "-m", component.package, *args]


def kubelet_node_name(index: int) -> str:
    """node01, node02, ... (index counts from 1)."""
    return f"node{index:02d}"
