"""kube-proxy's userspace mode, for the process runtime: the proxy itself accepts each Service's connections and
relays them to an endpoint.

Without a pod network there is no namespace to hold nft rules and pods are host processes, so for every TCP Service
port the proxy listens on the ClusterIP's loopback stand-in (``apimachinery.serviceip``: 10.96.0.1 → 127.96.0.1)
and the kubelet's Service variables name that address. Each connection goes to a random ready endpoint, or with
``sessionAffinity: ClientIP`` to the one the client's address used last (within the timeout); listeners follow the
Services (opened, re-pointed, closed) at each sync. UDP and NodePorts are not relayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Mapping, Sequence

from apimachinery.serviceip import loopback_address

from .model import Endpoint, ServicePort

log = logging.getLogger(__name__)

BUFFER = 65536


class Listener:
    """One Service port's listening socket and the endpoints it relays to."""

    def __init__(self, port: ServicePort) -> None:
        self.port = port
        self.affinity: dict[str, tuple[Endpoint, float]] = {}  # client IP → (endpoint, last used)
        self.server: asyncio.Server | None = None

    def choose(self, client: str) -> Endpoint | None:
        endpoints = self.port.endpoints
        if not endpoints:
            return None
        now = time.monotonic()
        if self.port.affinity_seconds:
            known = self.affinity.get(client)
            if known and known[0] in endpoints and now - known[1] < self.port.affinity_seconds:
                self.affinity[client] = (known[0], now)
                return known[0]
        chosen = random.choice(endpoints)
        if self.port.affinity_seconds:
            self.affinity[client] = (chosen, now)
        return chosen

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("", 0)
        endpoint = self.choose(peer[0])
        if endpoint is None:  # no ready endpoint: closed at once (the nft mode rejects)
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(endpoint.ip, endpoint.port)
        except OSError as err:
            log.info("%s: %s:%d: %s", self.port.key, endpoint.ip, endpoint.port, err)
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        for w in (writer, up_writer):
            w.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(BUFFER):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()
            else:
                writer.close()


class UserspaceBackend:
    """A ``proxier.Backend``: one ``Listener`` per TCP Service port and ClusterIP."""

    def __init__(self) -> None:
        self.listeners: dict[tuple[str, int], Listener] = {}  # (loopback address, port)

    async def sync(self, ports: Mapping[str, ServicePort], node_ips: Sequence[str]) -> bool:
        wanted = {(loopback_address(ip), sp.port): sp for sp in ports.values() if sp.protocol == "TCP"
                  for ip in sp.cluster_ips}
        for key in [k for k in self.listeners if k not in wanted]:
            gone = self.listeners.pop(key)
            if gone.server is not None:
                gone.server.close()
        for (address, number), sp in wanted.items():
            found = self.listeners.get((address, number))
            if found is not None:
                found.port = sp
                continue
            listener = Listener(sp)
            try:
                listener.server = await asyncio.start_server(listener.handle, address, number)
            except OSError as err:  # taken (another cluster's proxy on this machine): tried again at each sync
                log.error("%s: cannot listen on %s:%d: %s", sp.key, address, number, err)
                continue
            self.listeners[(address, number)] = listener
            log.info("%s: listening on %s:%d", sp.key, address, number)
        return True

    def close(self) -> None:
        for listener in self.listeners.values():
            if listener.server is not None:
                listener.server.close()
        self.listeners.clear()
