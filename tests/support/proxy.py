"""A real kube-proxy process (``python -m proxy``) for integration tests, returned once its ``/healthz`` answers 200
(its first sync is done: the rules or listeners are in place)."""

from __future__ import annotations

from pathlib import Path

import httpx

from kubelab.etcd import free_port
from support.process import ComponentProcess
from support.wait import wait_for


def start_proxy(api_url: str, log: Path, *flags: str) -> ComponentProcess:
    """kube-proxy with ``flags`` (a 5 s sync period, free healthz and metrics ports); a proxy that exits fails with
    its log."""
    port = free_port()
    proc = ComponentProcess("proxy", api_url, log, "--healthz-port", str(port), "--metrics-port", str(free_port()),
                            "--sync-period", "5", *flags)

    def healthy() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
        except httpx.TransportError:
            assert proc.poll() is None, proc.log()
            return False
    try:
        wait_for(healthy, what="kube-proxy's /healthz")
    except AssertionError:
        proc.stop()
        raise
    return proc
