"""Which mode runs (``--proxy-mode auto``) and the removal of other modes' leftovers when one takes over.

``auto`` chooses as kube-proxy's modes would fit here: without a cluster network there is no namespace to hold
rules (the process runtime's pods are host processes), so ``userspace``; with one, ``nftables`` where ``nft`` works
inside it (kube-proxy's newer mode: one atomic transaction, verdict maps), else ``iptables`` where
``iptables-restore`` is installed. Like kube-proxy starting in one mode, the chosen one first deletes what the
other left in the namespace (a cluster restarted with another ``--proxy-mode``), so no Service is DNATed twice.
"""

from __future__ import annotations

import contextlib

from apimachinery.sysbin import find

from . import iptables, nftables
from .proxier import Run

MODES = ("auto", "nftables", "iptables", "userspace")


def resolve(requested: str, cluster_network: str, run: Run | None) -> tuple[str, str]:
    """(the mode, why): ``requested`` itself unless it is ``auto``; ``run`` runs commands in the cluster network
    (None without one). Raises RuntimeError when the namespace exists but neither nft nor iptables works."""
    if requested != "auto":
        return requested, "--proxy-mode"
    if not cluster_network or run is None:
        return "userspace", "no pod network (no --cluster-network)"
    try:
        run(["nft", "list", "tables"], "")
        return "nftables", "nft works in the cluster network"
    except (RuntimeError, OSError) as err:
        refused = str(err)
    if find("iptables-restore"):
        return "iptables", f"nft does not work in the cluster network ({refused})"
    raise RuntimeError(f"neither nft ({refused}) nor iptables-restore works here: install nftables or iptables, "
                       f"or run --proxy-mode userspace")


def remove_leftovers(mode: str, run: Run) -> None:
    """Delete the other mode's rules from the cluster network: the ``ip kube-proxy`` table for iptables mode, the
    KUBE-* chains and their jump rules for nftables mode. Best effort: what is not there is no error."""
    if mode == "iptables":
        with contextlib.suppress(RuntimeError, OSError):
            run(["nft", "delete", "table", "ip", nftables.TABLE], "")
    elif mode == "nftables" and find("iptables-save"):
        with contextlib.suppress(RuntimeError, OSError):
            script = iptables.cleanup(iptables.Saved.parse(run(["iptables-save"], "")))
            if script:
                run(["iptables-restore", "--noflush"], script)
