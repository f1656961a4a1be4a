"""What a kubelet that did not stop cleanly leaves on the host, and its removal (a test harness's clean-up).

A kubelet stopped with SIGTERM stops its pods and removes their sandboxes and cgroups itself (``Kubelet.run``,
then the runtime's ``shutdown``). Unlike Kubernetes' kubelet, which leaves its pods running when it stops, this
is deliberate: a learner's `kubelab down` and a test's teardown must leave no container behind. A kubelet killed
with SIGKILL (a restart test, a stop that timed out) cannot: its containers run on under their shims, its linux
pods' pause processes hold their namespaces, their cgroups stay. ``clean(root_dir)`` removes all of that from what
the root directory records:

    containers/<id>/pid.json   each container's process group (SIGKILL; a pid only with its recorded start)
    sandboxes/<uid>/pid.json   each pod's pause process group (SIGKILL): its UTS, IPC and network namespaces
                               go with it, and a bridge pod's veth pair with its namespace
    pod<uid> cgroups           found by the pod UIDs of both, in every hierarchy whatever the node's name (the
                               UID is unique, so another cluster's node of the same name is never touched):
                               what is left in them killed, then removed, children first

Mounts need nothing: a container's are in its own mount namespace, gone with its last process. The shim zygote
ends by itself once the kubelet is gone and its shims have ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from pathlib import Path

from .cgroups import ROOT, V1_CONTROLLERS, remove
from .process import start_ticks

__all__ = ["clean"]

EXIT_WAIT = 5.0  # seconds clean waits for the processes it SIGKILLed to be gone (a kill is delivered, not done)


def clean(root_dir: Path, cgroup_root: Path = ROOT) -> list[str]:
    """Kill and remove every container and pod sandbox the kubelet with ``--root-dir root_dir`` left; returns
    the UIDs of the pods whose cgroups it removed. Safe to call on a root directory that has none."""
    uids: set[str] = set()
    killed: dict[int, int] = {}  # pid -> its recorded start
    for kind in ("containers", "sandboxes"):
        for state in (root_dir / kind).glob("*/pid.json"):
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                recorded = json.loads(state.read_text())
                if start_ticks(int(recorded["pid"])) == recorded["start"]:  # never a reused pid
                    _kill_group(int(recorded["pid"]))
                    killed[int(recorded["pid"])] = recorded["start"]
            uids.add(state.parent.name if kind == "sandboxes" else _pod_uid(state.parent))
    uids.discard("")
    _wait_gone(killed)
    removed = [uid for uid in sorted(uids) if _remove_pod_cgroups(uid, cgroup_root)]
    for sandbox in (root_dir / "sandboxes").glob("*"):
        shutil.rmtree(sandbox, ignore_errors=True)
    return removed


def _pod_uid(state: Path) -> str:
    try:
        return str(json.loads((state / "meta.json").read_text()).get("pod_uid") or "")
    except (OSError, ValueError):
        return ""


def _wait_gone(pids: dict[int, int], timeout: float = EXIT_WAIT) -> None:
    """Until none of ``pids`` runs (exited, a zombie, or its pid reused), or ``timeout``: returning while a killed
    container still runs for a few ms would let a caller see it alive after the clean-up."""
    deadline = time.monotonic() + timeout
    while any(start_ticks(pid) == start for pid, start in pids.items()) and time.monotonic() < deadline:
        time.sleep(0.005)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _remove_pod_cgroups(uid: str, cgroup_root: Path) -> bool:
    """The pod's cgroups under ``kubelab/<any node>/pod<uid>`` in the v1 hierarchies or the v2 tree."""
    pods = [d for base in [cgroup_root, *(cgroup_root / c for c in V1_CONTROLLERS)]
            for d in base.glob(f"kubelab/*/pod{uid}") if d.is_dir()]
    for pod in pods:
        remove(pod)
        for parent in (pod.parent, pod.parent.parent):  # the node's and kubelab's, gone with their last pod
            with contextlib.suppress(OSError):
                parent.rmdir()
    return bool(pods)
