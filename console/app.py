"""The console's HTTP server: the pages (``static/``), the live stream, and the JSON the pages fetch.

Routes::

    GET  /                              nodes × pods, live          GET  /api/stream     server-sent events
    GET  /pod/{namespace}/{name}        one pod: 13 steps, scheduler GET  /api/pods/{ns}/{name}/trace|explain
    GET  /events                        the event stream, live      GET  /api/watches    apiserver + informers
    GET  /watches                       watch streams and informers POST /api/whatif     → the scheduler
    GET  /whatif                        the what-if form            GET  /healthz, /metrics (Prometheus)

``Providers`` carries what the launcher knows how to compute and a component may not import (the trace, the
smallest change that would make a pod fit); without them the API answers 501 and the page says why.
"""

from __future__ import annotations

import asyncio
import ssl
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from apimachinery import errors
from apimachinery.metrics import Gauge
from kubeclient import Clientset, metrics

from .feed import Feed
from .sources import SourceError, Sources

__all__ = ["Console", "Providers"]

STATIC = Path(__file__).parent / "static"
# path -> (page name in static/pages/, title); every page is static/shell.html around its own <main>.
PAGES = {"/": ("cluster", "nodes × pods"), "/pod/{namespace}/{name}": ("pod", "pod"), "/events": ("events", "events"),
         "/watches": ("watches", "watch streams"), "/whatif": ("whatif", "what-if")}
KEEPALIVE = 15.0
# This project's (kube has no console); beside it on /metrics: rest_client_* of its client, process_*.
STREAMS = Gauge("console_event_streams", "Browsers following the cluster over /api/stream (server-sent events)")

# (namespace, name) -> a JSON document; called in a worker thread (the launcher's code is synchronous).
Provider = Callable[[str, str], dict[str, Any]]


@dataclass(frozen=True)
class Providers:
    trace: Provider | None = None  # kubelab trace pod NAME -o json
    explain: Provider | None = None  # kubelab explain pod NAME, with the nearest node and its changes


def _status(code: int, reason: str, message: str) -> web.Response:
    return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                              "code": code, "message": message}, status=code)


class Console:
    def __init__(self, client: Clientset, providers: Providers | None = None,
                 components: dict[str, str] | None = None, tls: ssl.SSLContext | None = None) -> None:
        self.client = client
        self.providers = providers or Providers()
        self.feed = Feed(client)
        self.sources = Sources(client, self.feed.nodes.store.list, components, tls)
        self._runner: web.AppRunner | None = None
        self.port = 0

    # --- pages and the stream ----------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application()
        shell = (STATIC / "shell.html").read_text()
        for path, (page, title) in PAGES.items():
            html = shell.replace("{title}", title).replace("{page}", page).replace(
                "{main}", (STATIC / "pages" / f"{page}.html").read_text().rstrip("\n"))
            app.router.add_get(path, self._page(html))
        app.router.add_static("/static/", STATIC)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", metrics.serve)
        app.router.add_get("/api/stream", self._stream)
        app.router.add_get("/api/pods/{namespace}/{name}", self._pod)
        app.router.add_get("/api/pods/{namespace}/{name}/trace", self._provided("trace"))
        app.router.add_get("/api/pods/{namespace}/{name}/explain", self._explain)
        app.router.add_get("/api/watches", self._watches)
        app.router.add_post("/api/whatif", self._whatif)
        return app

    @staticmethod
    def _page(html: str) -> Callable[[web.Request], Any]:
        async def page(_: web.Request) -> web.Response:
            return web.Response(text=html, content_type="text/html", headers={"Cache-Control": "no-cache"})
        return page

    @staticmethod
    async def _healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        queue = self.feed.subscribe()
        STREAMS.labels().inc()
        try:
            while True:
                try:
                    message = await asyncio.wait_for(queue.get(), KEEPALIVE)
                except TimeoutError:
                    message = b": keepalive\n\n"
                await resp.write(message)
        except ConnectionResetError:  # the browser went away (a cancellation propagates: shutdown)
            pass
        finally:
            STREAMS.labels().dec()
            self.feed.unsubscribe(queue)
        return resp

    # --- JSON for the pages ----------------------------------------------------------------------------------
    async def _pod(self, request: web.Request) -> web.Response:
        ns, name = request.match_info["namespace"], request.match_info["name"]
        view = self.feed.pod(ns, name)
        return web.json_response(view) if view else _status(404, "NotFound", f'pods "{name}" not found')

    def _provided(self, what: str) -> Callable[[web.Request], Any]:
        async def handler(request: web.Request) -> web.Response:
            provider: Provider | None = getattr(self.providers, what)
            if provider is None:
                return _status(501, "NotImplemented", f"this console has no {what}: run it as `kubelab ui`")
            ns, name = request.match_info["namespace"], request.match_info["name"]
            try:
                return web.json_response(await asyncio.to_thread(provider, ns, name))
            except Exception as err:  # the provider's own error (pod gone, scheduler away) is the page's message
                return _status(502, "BadGateway", str(err))
        return handler

    async def _explain(self, request: web.Request) -> web.Response:
        if self.providers.explain is not None:
            return await self._provided("explain")(request)  # type: ignore[no-any-return]
        ns, name = request.match_info["namespace"], request.match_info["name"]
        try:
            return web.json_response({"diagnosis": await self.sources.explain(ns, name)})
        except SourceError as err:
            return _status(502, "BadGateway", str(err))

    async def _watches(self, _: web.Request) -> web.Response:
        try:
            apiserver: dict[str, Any] = await self.sources.watches()
        except errors.StatusError as err:
            apiserver = {"error": str(err), "items": []}
        return web.json_response({"apiserver": apiserver, "informers": await self.sources.informers()})

    async def _whatif(self, request: web.Request) -> web.Response:
        try:
            form = await request.json()
            change: dict[str, Any] = {"action": form.get("action"), "node": form.get("node") or ""}
            if form.get("taint"):
                key_value, _, effect = str(form["taint"]).rpartition(":")
                key, _, value = key_value.partition("=")
                change["taint"] = {"key": key, "value": value, "effect": effect}
            if form.get("pods"):
                change["pods"] = [d for d in yaml.safe_load_all(form["pods"]) if d]
        except (ValueError, yaml.YAMLError, AttributeError) as err:
            return _status(400, "BadRequest", f"cannot read the change: {err}")
        try:
            code, body = await self.sources.whatif(change)
        except SourceError as err:
            return _status(502, "BadGateway", str(err))
        return web.json_response(body, status=code)

    # --- lifecycle -------------------------------------------------------------------------------------------
    async def start(self, host: str, port: int) -> str:
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.port}/"
        print(f"console: {url}", file=sys.stderr, flush=True)
        print(f"healthz: {url}healthz", file=sys.stderr, flush=True)  # the launcher's health check
        return url

    async def run(self, stop: asyncio.Event, host: str = "127.0.0.1", port: int = 0) -> None:
        await self.start(host, port)
        try:
            await self.feed.run(stop)
        finally:
            if self._runner is not None:
                await self._runner.cleanup()
            await self.sources.close()
            await self.client.close()
