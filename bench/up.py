"""`kubelab up --nodes 3` (the user's command, `make up`) until ``kubectl get nodes`` shows 3 Nodes Ready (issue 18:
≤ 2 s), phase by phase, with the library's ``kubelab.Cluster(nodes=3)`` start as the same-run baseline.

Each run is a fresh data dir and a fresh ``python -m kubelab up --nodes 3`` process (its interpreter start and
imports, its zygote, the PKI, etcd, the apiserver, the bootstrap objects, controller-manager/scheduler, the
kubelets, the pod network and the addons). Measured with monotonic time from just before the command's exec:
- each of the command's output lines, time-stamped as they arrive: "starting" (interpreter, imports, the zygote's
  fork, the ``Cluster``'s set-up) and one ``✓ NAME`` per component reported healthy, "up" for "kubelab is up";
- "3 Ready": the first ``kubectl get nodes`` (polled every 0.1 s) that lists 3 Nodes, each ``Ready``.
Then SIGINT (foreground; ``--detach``: ``kubelab down``) and the time until the command exits.

Shapes: ``default`` (``--runtime auto --pod-network auto``: linux + bridge as root) and ``process`` (``--runtime
process --pod-network host``), so the linux runtime's and the bridge's cost show; runs of the shapes and the
library baseline are interleaved (the same moment's load). With ``KUBELAB_BRIDGE_LOCK=FILE`` (machines where
several people run bridge clusters: the bridge's host routes are host-global) every run holds that file's
flock(2) while its cluster is up (not inherited by the cluster's processes: a detached supervisor would keep it).

    python bench/up.py [--runs 3] [--shapes default,process] [--detach] [--no-baseline] [--keep] [--base DIR]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kubelab  # noqa: E402
from kubelab.net import free_ports_from  # noqa: E402

TARGET = 2.0
LOCK = Path(os.environ["KUBELAB_BRIDGE_LOCK"]) if os.environ.get("KUBELAB_BRIDGE_LOCK") else None
SHAPES = {"default": [], "process": ["--runtime", "process", "--pod-network", "host"]}
KUBECTL = os.environ.get("KUBECTL", "kubectl")


@contextmanager
def bridge_lock() -> Iterator[None]:
    """The host-global bridge network's lock (``KUBELAB_BRIDGE_LOCK``); a no-op without one."""
    if LOCK is None or not LOCK.exists():
        yield
        return
    with open(LOCK) as f:  # Python's files are not inherited across exec: the cluster never holds it
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def nodes_ready(port: int, want: int) -> bool:
    out = subprocess.run([KUBECTL, "-s", f"http://127.0.0.1:{port}", "get", "nodes", "--no-headers"],
                         capture_output=True, text=True, check=False).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return len(rows) >= want and all(len(r) > 1 and r[1] == "Ready" for r in rows)


def phase_of(line: str) -> str | None:
    text = line.strip()
    if text.startswith("kubelab: starting"):
        return "starting"
    if text.startswith("✓"):
        return text.split()[1]
    if text.startswith("kubelab is up"):
        return "up"
    return None


def one_up(tree: Path, shape: list[str], detach: bool, keep: bool) -> tuple[float, dict[str, float], float]:
    """(seconds to 3 Ready, {phase: seconds}, seconds to stop) of one fresh `kubelab up --nodes 3` run from
    ``tree`` (``python -m`` puts the working directory first: that tree's kubelab and components)."""
    data_dir = Path(tempfile.mkdtemp(prefix="kubelab-up-bench-"))
    # not the kernel's ephemeral range, where etcd's and other clusters' ports come from: an apiserver once lost its
    # port to one of them between this check and its bind
    port, secure_port = free_ports_from(random.randrange(20000, 30000), 2)
    cmd = [sys.executable, "-m", "kubelab", "up", "--nodes", "3", "--data-dir", str(data_dir), "--port", str(port),
           "--secure-port", str(secure_port), *shape, *(["--detach"] if detach else [])]
    phases: dict[str, float] = {}
    with bridge_lock():
        began = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tree)
        lines: list[str] = []

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                name = phase_of(line)
                if name is not None and name not in phases:
                    phases[name] = time.monotonic() - began

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        ready = None
        while time.monotonic() - began < 120:
            if proc.poll() is not None and not detach:
                break
            if "starting" in phases and nodes_ready(port, 3):
                ready = time.monotonic() - began
                break
            time.sleep(0.1)
        while ready is not None and "up" not in phases and proc.poll() is None and time.monotonic() - began < 120:
            time.sleep(0.1)  # SIGINT while the console starts left the console running (a launcher bug, both trees)
        stop_began = time.monotonic()
        if detach:
            subprocess.run([sys.executable, "-m", "kubelab", "down", "--data-dir", str(data_dir)], cwd=tree,
                           capture_output=True, check=False)
        else:
            proc.send_signal(signal.SIGINT)
        proc.wait(60)
        stopped = time.monotonic() - stop_began
        subprocess.run([sys.executable, "-m", "kubelab", "down", "--data-dir", str(data_dir)], cwd=tree,
                       capture_output=True, check=False)  # whatever a failed start left
        reader.join(5)
    if ready is None:
        sys.exit(f"3 Nodes not Ready within 120 s ({data_dir}):\n{''.join(lines)}")
    if not keep:
        subprocess.run(["rm", "-rf", str(data_dir)], check=False)
    return ready, phases, stopped


def library_run() -> float:
    """``kubelab.Cluster(nodes=3)`` start → 3 Nodes Ready (its own wait), as bench/startup.py measures it."""
    with bridge_lock():
        cluster = kubelab.Cluster(nodes=3)
        began = time.monotonic()
        cluster.start()
        started = time.monotonic() - began
        cluster.stop()
    return started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shapes", default="default,process")
    parser.add_argument("--detach", action="store_true", help="`kubelab up --detach` (stopped with `kubelab down`)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the library's kubelab.Cluster(nodes=3)")
    parser.add_argument("--keep", action="store_true", help="keep each run's data dir (logs)")
    parser.add_argument("--base", type=Path, default=None,
                        help="also run `kubelab up` from this tree (e.g. a `git archive` of main) in turn: an A/B")
    args = parser.parse_args()
    os.environ.setdefault("KUBELAB_ETCD_UNSAFE_NO_FSYNC", "1")
    variants = {"this": ROOT, **({"base": args.base.resolve()} if args.base else {})}
    runs = [(v, shape) for v in variants for shape in args.shapes.split(",")]
    totals: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
    stops: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
    baseline: list[float] = []
    loads = [os.getloadavg()[0]]
    if not args.no_baseline:
        library_run()  # the bench process's zygote starts here (its imports), not in a measured run
    for index in range(args.runs):
        for variant, shape in runs if index % 2 == 0 else runs[::-1]:
            ready, phases, stopped = one_up(variants[variant], SHAPES[shape], args.detach, args.keep)
            totals[variant, shape].append(ready)
            stops[variant, shape].append(stopped)
            print(f"{variant:<4} {shape:<8} run {index + 1}: 3 Ready {ready:5.2f}s  "
                  + " ".join(f"{name}@{at:.2f}" for name, at in sorted(phases.items(), key=lambda kv: kv[1]))
                  + f"  (stop {stopped:.2f}s, load {os.getloadavg()[0]:.1f})", flush=True)
        if not args.no_baseline:
            baseline.append(library_run())
            print(f"library run {index + 1}: kubelab.Cluster(nodes=3) {baseline[-1]:5.2f}s", flush=True)
        loads.append(os.getloadavg()[0])
    mode = "up --detach" if args.detach else "up"
    lib = statistics.median(baseline) if baseline else None
    for variant, shape in runs:
        times = totals[variant, shape]
        median = statistics.median(times)
        verdict = "met" if median <= TARGET else "missed"
        ratio = f", {median / lib:.1f}x the library's {lib:.2f}s" if lib else ""
        if variant == "this" and ("base", shape) in totals:
            ratio += f", {median / statistics.median(totals['base', shape]):.2f}x the base's"
        print(f"{variant:<4} kubelab {mode} --nodes 3 ({shape}): median {median:.2f}s to 3 Ready over {len(times)} "
              f"(min {min(times):.2f}, max {max(times):.2f}; stop {statistics.median(stops[variant, shape]):.2f}s)"
              f"{ratio}; target {TARGET:.1f}s {verdict}")
    print(f"load average (1 min) over the runs: {min(loads):.1f}–{max(loads):.1f} (2 cores, shared)")


if __name__ == "__main__":
    from stopping import stop_on_termination

    stop_on_termination()
    main()
