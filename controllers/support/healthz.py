"""``/healthz`` and ``/metrics`` for the controller-manager: a tiny HTTP endpoint the launcher (and people) poll.

``ok`` (200) while every check passes; otherwise 500 with the failing check named, as kube-controller-manager
answers ``[-]leaderElection failed``. Port 0 picks a free port; the URL printed says which.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from aiohttp import web

from kubeclient import metrics
from kubeclient.informer import snapshot as informer_snapshot

log = logging.getLogger(__name__)

Check = Callable[[], bool]


class HealthServer:
    def __init__(self, port: int, checks: dict[str, Check], host: str = "127.0.0.1") -> None:
        self.port = port
        self.host = host
        self.checks = checks
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/healthz"

    async def _healthz(self, request: web.Request) -> web.Response:
        failed = [name for name, check in self.checks.items() if not check()]
        if not failed:
            return web.Response(text="ok")
        body = "".join(f"[-]{name} failed\n" for name in failed) + "healthz check failed\n"
        return web.Response(status=500, text=body)

    @staticmethod
    async def _informers(request: web.Request) -> web.Response:
        return web.json_response(informer_snapshot("kube-controller-manager"))

    async def start(self) -> None:
        app = web.Application()
        for path in ("/healthz", "/livez", "/readyz"):
            app.router.add_get(path, self._healthz)
        app.router.add_get("/debug/informers", self._informers)
        app.router.add_get("/metrics", metrics.serve)  # workqueue_*, rest_client_*, process_* (kubeclient.metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]  # the one chosen when asked for port 0
        print(f"healthz: {self.url}", file=sys.stderr, flush=True)  # the launcher finds the URL in the log

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
