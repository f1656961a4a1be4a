"""The probes behind ComponentStatuses: where the scheduler and the controller-manager answer ``/healthz``, and
each etcd member (``etcd-0``, ``etcd-1`` … in ``--etcd-servers`` order), as kube-apiserver probes them.

kube-apiserver assumes the components on its own host at their default secure ports (10259, 10257); kubelab's
components serve plain HTTP on a port of their choosing, so the URLs are flags (``--scheduler-healthz-url``,
``--controller-manager-healthz-url``), which ``kubelab up`` sets, with kube's ports as the defaults.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import urlsplit

import aiohttp

from .registry.componentstatuses import Probe, ProbeResult
from .storage.etcd3 import EtcdStorage, EtcdTLS

DEFAULT_SCHEDULER_HEALTHZ = "http://127.0.0.1:10259/healthz"
DEFAULT_CONTROLLER_MANAGER_HEALTHZ = "http://127.0.0.1:10257/healthz"
PROBE_TIMEOUT = 5.0


def http_probe(url: str) -> Callable[[], Awaitable[ProbeResult]]:
    """GET ``url``: 200 is healthy with the body as the message; anything else, Go's wording of the failure."""
    async def check() -> ProbeResult:
        try:
            async with (aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT)) as session,
                        session.get(url) as response):
                    body = (await response.text())[:1024]
                    if response.status == 200:
                        return ProbeResult(True, body)
                    return ProbeResult(False, body, f"unhealthy http status code: {response.status} "
                                                    f"({response.reason})")
        except aiohttp.ClientConnectorError:
            host = urlsplit(url).netloc
            return ProbeResult(False, error=f'Get "{url}": dial tcp {host}: connect: connection refused')
        except (TimeoutError, aiohttp.ClientError) as err:
            return ProbeResult(False, error=f'Get "{url}": {err or type(err).__name__}')
    return check


def etcd_probe(server: str, tls: EtcdTLS | None) -> Callable[[], Awaitable[ProbeResult]]:
    """One etcd member answers a read (kube's storage health check of that server)."""
    async def check() -> ProbeResult:
        member = EtcdStorage([server], timeout=PROBE_TIMEOUT, tls=tls)
        try:
            await member.connect()
            await member.current_revision()
            return ProbeResult(True, "ok")
        except Exception as err:  # noqa: BLE001 - any failure is what the status reports
            return ProbeResult(False, error=str(err) or type(err).__name__)
        finally:
            await member.close()
    return check


def component_probes(scheduler_url: str, controller_manager_url: str, etcd_servers: Sequence[str],
                     etcd_tls: EtcdTLS | None) -> list[Probe]:
    return [Probe("scheduler", http_probe(scheduler_url)),
            Probe("controller-manager", http_probe(controller_manager_url)),
            *(Probe(f"etcd-{i}", etcd_probe(server, etcd_tls)) for i, server in enumerate(etcd_servers))]
