"""The sync loop: informers mark the proxy dirty, ``sync`` turns the caches into ``ServicePort``s and hands them to
a ``Backend``: ``NftBackend`` applies the nftables renderer's transaction (only the changed Service ports; see
``nftables``), ``IptablesBackend`` the iptables renderer's ``iptables-restore --noflush`` input (``iptables``),
``userspace.UserspaceBackend`` relays connections itself.

Guarantees: a sync starts at most ``min_sync_period`` after the change that asked for it and no sooner than that
after the previous one; one runs at least every ``sync_period`` even without changes (a failed one is retried
then as a full sync that replaces the table); ``healthy`` is False before the first sync and once a wanted sync is
overdue (kube-proxy's ``/healthz``)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from apimachinery.sysbin import system_binary
from kubeclient import Clientset, SharedInformer

from . import iptables, metrics
from .model import ServicePort, service_ports
from .nftables import Renderer

log = logging.getLogger(__name__)

SERVICE_NAME_LABEL = "kubernetes.io/service-name"

Apply = Callable[[str], None]  # raises RuntimeError with nft's message
Run = Callable[[Sequence[str], str], str]  # (argv, standard input) → standard output; RuntimeError on failure


def run_in(netns_path: str) -> Run:
    """Run commands inside the network namespace at ``netns_path`` (``nsenter --net``)."""
    def run(argv: Sequence[str], stdin: str) -> str:
        command = [system_binary("nsenter"), f"--net={netns_path}", system_binary(argv[0]), *argv[1:]]
        done = subprocess.run(command, input=stdin, text=True, capture_output=True)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip() or f"{argv[0]} exited {done.returncode}")
        return done.stdout
    return run


def nft_in(netns_path: str) -> Apply:
    """Apply a script with ``nft -f -`` inside the namespace at ``netns_path`` (one transaction)."""
    run = run_in(netns_path)

    def apply(script: str) -> None:
        run(["nft", "-f", "-"], script)
    return apply


class Backend(Protocol):
    """Where the Service ports go (kube-proxy's proxier modes)."""

    async def sync(self, ports: Mapping[str, ServicePort], node_ips: Sequence[str]) -> bool:
        """Make the data path match; False when it failed (the next sync is a full one)."""
        ...


class Rendering(Protocol):
    """A renderer's bookkeeping (``nftables.Renderer``, ``iptables.Renderer``): what the kernel holds by Service
    port, told whether the last rendered change was applied."""

    @property
    def current(self) -> Mapping[str, Any]: ...

    def applied(self) -> None: ...

    def failed(self) -> None: ...


async def sync_rules(renderer: Rendering, render: Callable[[], str], apply: Apply) -> bool:
    """Render and apply one change off the event loop; False (and the next sync a full one) when it failed."""
    started = time.monotonic()

    def render_and_apply() -> str:
        script = render()
        if script:
            apply(script)
        return script
    try:
        script = await asyncio.to_thread(render_and_apply)
    except (RuntimeError, OSError) as err:
        log.error("sync failed (retried as a full sync): %s", err)
        renderer.failed()
        return False
    renderer.applied()
    if script:
        log.info("synced %d service ports in %.0f ms (%d lines)", len(renderer.current),
                 (time.monotonic() - started) * 1000, script.count("\n"))
    return True


class NftBackend:
    """kube-proxy's nftables mode: the renderer's transaction, applied with ``apply``."""

    def __init__(self, apply: Apply, cluster_cidr: str) -> None:
        self.apply = apply
        self.renderer = Renderer(cluster_cidr)

    async def sync(self, ports: Mapping[str, ServicePort], node_ips: Sequence[str]) -> bool:
        return await sync_rules(self.renderer, lambda: self.renderer.sync(ports, node_ips), self.apply)


class IptablesBackend:
    """kube-proxy's iptables mode: the renderer's input, applied with ``iptables-restore --noflush`` (the
    rest of the tables untouched); a full sync first reads the tables with ``iptables-save``."""

    RESTORE = ("iptables-restore", "-w", "5", "--noflush")

    def __init__(self, run: Run, cluster_cidr: str) -> None:
        self.run = run
        self.renderer = iptables.Renderer(cluster_cidr)

    async def sync(self, ports: Mapping[str, ServicePort], node_ips: Sequence[str]) -> bool:
        def render() -> str:
            full = not self.renderer.synced
            saved = iptables.Saved.parse(self.run(["iptables-save"], "")) if full else None
            return self.renderer.sync(ports, node_ips, saved)
        return await sync_rules(self.renderer, render, self.restore)

    def restore(self, script: str) -> None:
        self.run(self.RESTORE, script)


class Proxier:
    def __init__(self, client: Clientset, backend: Backend, *, sync_period: float = 30.0,
                 min_sync_period: float = 0.1) -> None:
        self.backend = backend
        self.synced = False
        self.sync_period = sync_period
        self.min_sync_period = min_sync_period
        self.services = SharedInformer(client.services)
        self.slices = SharedInformer(client.endpoint_slices)
        self.nodes = SharedInformer(client.nodes)
        self.dirty = asyncio.Event()
        self.last_sync = 0.0  # time.monotonic() of the last successful sync
        self.wanted_since: float | None = None
        for informer in (self.services, self.slices, self.nodes):
            informer.add_event_handler(self._changed, lambda old, new: self._changed(new), self._changed)

    def _changed(self, obj: Any) -> None:
        if self.wanted_since is None:
            self.wanted_since = time.monotonic()
        metrics.LAST_QUEUED.set(time.time())
        self.dirty.set()

    def healthy(self) -> bool:
        """The rules are in place (a first sync succeeded) and no sync has been wanted for longer than
        ``sync_period`` plus a margin."""
        if not self.last_sync:
            return False
        return self.wanted_since is None or time.monotonic() - self.wanted_since < self.sync_period + 10

    def service_ports(self) -> dict[str, ServicePort]:
        slices: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for s in self.slices.store.list():
            meta = s["metadata"]
            name = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
            if name:
                slices[(meta.get("namespace", "default"), name)].append(s)
        ports: dict[str, ServicePort] = {}
        for svc in self.services.store.list():
            meta = svc["metadata"]
            for sp in service_ports(svc, slices.get((meta.get("namespace", "default"), meta["name"]), [])):
                ports[sp.key] = sp
        return ports

    def node_ips(self) -> list[str]:
        """Every node's InternalIP but loopback ones: where NodePorts answer."""
        ips = []
        for node in self.nodes.store.list():
            for address in (node.get("status") or {}).get("addresses") or []:
                if address.get("type") == "InternalIP" and not address["address"].startswith("127."):
                    ips.append(address["address"])
        return ips

    async def sync(self) -> None:
        """One backend sync; on failure the next one is full (``kubeproxy_sync_proxy_rules_*``: proxy/metrics.py)."""
        started = time.monotonic()
        ports = self.service_ports()
        self.synced = await self.backend.sync(ports, self.node_ips())
        metrics.SYNC_DURATION.observe(time.monotonic() - started)
        if self.synced:
            self.last_sync = time.monotonic()
            metrics.LAST_SYNC.set(time.time())
            metrics.SERVICE_PORTS.set(len(ports))
        else:
            metrics.SYNC_ERRORS.inc()

    async def run(self, stop: asyncio.Event) -> None:
        tasks = [asyncio.create_task(i.run(stop)) for i in (self.services, self.slices, self.nodes)]
        try:
            for informer in (self.services, self.slices, self.nodes):
                await informer.wait_for_sync()
            while not stop.is_set():
                self.wanted_since = None
                self.dirty.clear()
                await self.sync()
                if not self.synced:
                    self.wanted_since = self.wanted_since or time.monotonic()
                await asyncio.sleep(self.min_sync_period)
                waits = [asyncio.create_task(self.dirty.wait()), asyncio.create_task(stop.wait())]
                await asyncio.wait(waits, timeout=self.sync_period, return_when=asyncio.FIRST_COMPLETED)
                for w in waits:
                    w.cancel()
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
