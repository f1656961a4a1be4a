"""What `kubelab up --runtime auto --pod-network auto` (the defaults) become on this host, and why.

The runtime: ``auto`` is the kubelet's own choice (``kubelet.runtime.linux.probe``, tried here once so the launcher
knows it before the kubelets start): ``linux`` where the launcher runs as root, the kernel allows the mount, PID,
UTS and IPC namespaces and ``pivot_root``, and a static busybox gives the images a root file system; else
``process``. The pod network: ``auto`` is ``bridge`` (the cluster network and kube-proxy) when the runtime is
``linux`` and the host has what the bridge needs (``kubelet.network.usable``: nft, nsenter, network namespaces;
nft and nsenter are looked up in the sbin directories too, whatever ``PATH`` says: ``apimachinery.sysbin``), ``host``
otherwise. ``bridge`` needs Linux containers: with another runtime it is an error, not a silent fallback.
The reason is kept in ``state.json`` and shown by `kubelab status`; a kubelet left on ``auto`` logs its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kubelet.network import usable
from kubelet.runtime.linux import unavailable

__all__ = ["POD_NETWORKS", "RUNTIMES", "Choice", "choose"]

RUNTIMES = ("auto", "linux", "process", "docker")
POD_NETWORKS = ("auto", "host", "bridge")  # host: pods on the host's network (loopback IPs); bridge: their own IPs


@dataclass(frozen=True)
class Choice:
    runtime: str  # linux, process or docker
    pod_network: str  # host or bridge
    why: str  # e.g. "auto: the kubelet does not run as root"


def choose(runtime: str, pod_network: str, scratch: Path) -> Choice:
    """Resolve ``auto``s (``scratch``: a directory for the runtime probe). Raises ValueError for a combination
    that cannot work (``--pod-network bridge`` without the linux runtime), with what to do instead."""
    if runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r}: choose among {list(RUNTIMES)}")
    if pod_network not in POD_NETWORKS:
        raise ValueError(f"unknown pod network {pod_network!r}: choose among {list(POD_NETWORKS)}")
    resolved, why = runtime, "--runtime"
    if runtime == "auto":
        refused = unavailable(scratch)
        resolved = "process" if refused else "linux"
        why = f"auto: {refused}" if refused else "auto: root, namespaces, pivot_root and a static busybox"
    if pod_network == "bridge" and resolved != "linux":
        raise ValueError(f"--pod-network bridge needs Linux containers, and the runtime is {resolved} ({why}); "
                         f"use --pod-network host (or auto), or --runtime linux where the host allows it")
    if pod_network != "auto":
        return Choice(resolved, pod_network, why)
    if resolved != "linux":
        return Choice(resolved, "host", why)
    try:
        missing = usable()
    except OSError as err:  # nft not installed at all
        missing = str(err)
    if missing is not None:
        return Choice(resolved, "host", f"{why}; no bridge pod network: {missing}")
    return Choice(resolved, "bridge", f"{why}; bridge pod network: root, nft and network namespaces")
