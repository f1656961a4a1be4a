"""What the console reads from other processes when a page asks: the apiserver's watch streams, the components'
informers, the scheduler's explanation and what-if.

Components are found as ``kubelab explain`` finds the scheduler: the leader Lease ``kube-system/kube-scheduler``
names its debug endpoint (``kubelab.io/debug-endpoint``); each Node's ``status.daemonEndpoints.kubeletEndpoint``
and address name its kubelet (tried over HTTP, then HTTPS without verifying the serving certificate: these are
read-only debug counters; over HTTPS the console presents its client certificate, which the kubelet authorizes as
``nodes/informers``, see kubelet/auth.py); others (the controller-manager) are given with ``--component
NAME=URL``. A component that does not answer is listed with its error, the others still are.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any

import aiohttp

from apimachinery import errors
from kubeclient import Clientset

__all__ = ["Sources", "SCHEDULER_LEASE", "DEBUG_ENDPOINT_ANNOTATION"]

Object = dict[str, Any]
SCHEDULER_LEASE = ("kube-system", "kube-scheduler")
DEBUG_ENDPOINT_ANNOTATION = "kubelab.io/debug-endpoint"
TIMEOUT = aiohttp.ClientTimeout(total=5)


class SourceError(Exception):
    """A process the page needs could not answer (its message is shown)."""


class Sources:
    def __init__(self, client: Clientset, nodes: Callable[[], list[Object]],
                 components: dict[str, str] | None = None, tls: ssl.SSLContext | None = None) -> None:
        self.client = client
        self.nodes = nodes  # the console's node informer: finding the kubelets costs no request
        self.components = dict(components or {})
        self.tls: ssl.SSLContext | bool = tls or False  # for https: the console's client certificate, unverified
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=TIMEOUT)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def _json(self, method: str, url: str, body: Any = None) -> tuple[int, Any]:
        try:
            async with self._http().request(method, url, json=body, ssl=self.tls) as resp:
                return resp.status, await resp.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as err:
            raise SourceError(f"{method} {url}: {err or type(err).__name__}") from err

    # --- finding the components ------------------------------------------------------------------------------
    async def scheduler(self) -> str:
        if "scheduler" in self.components:
            return self.components["scheduler"].rstrip("/")
        namespace, name = SCHEDULER_LEASE
        try:
            lease = await self.client.leases.get(name, namespace)
        except errors.StatusError as err:
            raise SourceError(f"the scheduler's lease {namespace}/{name}: {err}") from err
        endpoint = ((lease.get("metadata") or {}).get("annotations") or {}).get(DEBUG_ENDPOINT_ANNOTATION)
        if not endpoint:
            raise SourceError(f"the scheduler's lease has no {DEBUG_ENDPOINT_ANNOTATION} annotation")
        return str(endpoint).rstrip("/")

    def kubelets(self) -> dict[str, str]:
        out = {}
        for node in self.nodes():
            status = node.get("status") or {}
            port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
            addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
            host = addresses.get("InternalIP") or addresses.get("Hostname")
            if port and host:
                out[f"kubelet {node['metadata']['name']}"] = f"{host}:{port}"
        return out

    # --- what the pages ask for ------------------------------------------------------------------------------
    async def watches(self) -> Object:
        return await self.client.rest.request("GET", "/debug/watches")

    async def _informers_of(self, name: str, url: str) -> Object:
        urls = [url] if "://" in url else [f"http://{url}", f"https://{url}"]
        last = ""
        for base in urls:
            try:
                code, body = await self._json("GET", f"{base.rstrip('/')}/debug/informers")
            except SourceError as err:
                last = str(err)
                continue
            if code == 200 and isinstance(body, dict):
                return {"component": name, "url": base, "items": body.get("items") or []}
            last = f"GET {base}/debug/informers: {code}"
        return {"component": name, "url": urls[0], "error": last, "items": []}

    async def informers(self) -> list[Object]:
        targets: dict[str, str] = dict(self.components)
        failed: list[Object] = []
        try:
            targets.setdefault("scheduler", await self.scheduler())
        except SourceError as err:
            failed.append({"component": "scheduler", "url": "", "error": str(err), "items": []})
        targets.update({k: v for k, v in self.kubelets().items() if k not in targets})
        jobs = [self._informers_of(name, url) for name, url in sorted(targets.items()) if url]
        results = list(await asyncio.gather(*jobs))
        return failed + results

    async def explain(self, namespace: str, name: str) -> Object:
        url = await self.scheduler()
        code, body = await self._json("GET", f"{url}/debug/explain/{namespace}/{name}")
        if code != 200:
            raise SourceError((body or {}).get("message") or f"the scheduler answered {code}")
        result: Object = body
        return result

    async def whatif(self, change: Object) -> tuple[int, Object]:
        url = await self.scheduler()
        code, body = await self._json("POST", f"{url}/debug/whatif", change)
        return code, body
