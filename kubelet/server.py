"""The kubelet's own HTTPS API (kubelet port 10250's role; TLS and who may use it: ``tlsserving``, ``auth``),
which the apiserver proxies ``pods/log``, ``pods/exec``, ``pods/attach``, ``pods/portforward`` and
``nodes/proxy`` to.

``GET /healthz`` (503 until the node is registered), ``GET /containerLogs/{namespace}/{pod}/{container}`` with
``follow``, ``sinceSeconds``, ``sinceTime``, ``tailLines``, ``timestamps``, ``previous``, ``limitBytes``
(``logs``), and the
``/exec/{namespace}/{pod}/{container}``, ``/attach/{namespace}/{pod}/{container}`` and
``/portForward/{namespace}/{pod}`` websockets (``exec``, ``attach``, ``portforward``), and
``GET /metrics/resource``: the containers' and the node's CPU and memory (``stats``), which the apiserver's
``metrics.k8s.io`` scrapes; ``GET /metrics``: the kubelet's Prometheus metrics (``metrics``). Log files hold
CRI-format lines (``<time> <stream> F <text>``); without ``timestamps`` only the text is served, as ``kubectl logs``
prints it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from apimachinery import prometheus
from kubeclient import metrics as kubeclient_metrics
from kubeclient.informer import snapshot as informer_snapshot

from . import attach, logs, portforward, stats
from . import exec as exec_
from .kubelet import Kubelet

FOLLOW_POLL = 0.2


def _status(code: int, reason: str, message: str) -> web.Response:
    return web.json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": message, "reason": reason, "code": code}, status=code)


def healthz_handler(registered: asyncio.Event | None) -> Callable[[web.Request], Awaitable[web.Response]]:
    """``GET /healthz``: 503 until ``registered`` is set (the Node is in the API), so a launcher that waits for the
    kubelet to be healthy also waits for its node to exist."""

    async def healthz(request: web.Request) -> web.Response:
        if registered is not None and not registered.is_set():
            return web.Response(status=503, text="node not registered with the API server yet")
        return web.Response(text="ok")

    return healthz


def make_healthz_app(registered: asyncio.Event | None = None) -> web.Application:
    """The plain-HTTP ``--healthz-port`` (kube's 10248): ``/healthz`` only, no authentication."""
    app = web.Application()
    app.router.add_get("/healthz", healthz_handler(registered))
    return app


def make_app(kubelet: Kubelet, registered: asyncio.Event | None = None,
             middlewares: Sequence[Any] = ()) -> web.Application:
    """The API; ``middlewares``: the auth filter (``auth.middleware``) when the kubelet authenticates requests."""
    healthz = healthz_handler(registered)

    async def container_logs(request: web.Request) -> web.StreamResponse:
        ns, pod, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        worker = kubelet.worker_for(ns, pod)
        if worker is None:
            return _status(404, "NotFound", f'pods "{pod}" not found on node {kubelet.node_name}')
        query = request.query
        previous = query.get("previous") in ("true", "1")
        path: Path = worker.log_path(container, previous)
        if not path.exists():
            if previous:
                return _status(400, "BadRequest", f'previous terminated container "{container}" in pod "{pod}" '
                                                  f"not found")
            return _status(400, "BadRequest", f'container "{container}" in pod "{pod}" is waiting to start')
        timestamps = query.get("timestamps") in ("true", "1")
        body = logs.select(path.read_text(encoding="utf-8", errors="replace").splitlines(), query)
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        await response.write(body.encode())
        if query.get("follow") in ("true", "1"):
            offset = path.stat().st_size
            while worker.containers.get(container) is not None and not worker.task.done():
                await asyncio.sleep(FOLLOW_POLL)
                size = path.stat().st_size if path.exists() else 0
                if size > offset:
                    with open(path, encoding="utf-8", errors="replace") as f:
                        f.seek(offset)
                        chunk = f.read()
                    offset = size
                    await response.write("".join(logs.render(line, timestamps) + "\n"
                                                 for line in chunk.splitlines()).encode())
                record = worker.containers[container]
                if record.process is None and record.done:
                    break
        await response.write_eof()
        return response

    async def container_exec(request: web.Request) -> web.StreamResponse:
        ns, pod, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        worker = kubelet.worker_for(ns, pod)
        record = worker.containers.get(container) if worker is not None else None
        if worker is None:
            problem: str | None = f'pod "{pod}" not found on node {kubelet.node_name}'
        elif record is None or record.process is None or record.target is None:
            problem = f'container "{container}" in pod "{pod}" is not running'
        else:
            problem = None
        return await exec_.serve(request, record.target if record is not None else None, problem)

    analyzer = stats.ResourceAnalyzer(kubelet)

    async def resource_metrics(request: web.Request) -> web.Response:
        body = prometheus.render(await analyzer.families())
        return web.Response(body=body.encode(), headers={"Content-Type": prometheus.CONTENT_TYPE})

    async def container_attach(request: web.Request) -> web.StreamResponse:
        ns, pod, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        worker = kubelet.worker_for(ns, pod)
        record = worker.containers.get(container) if worker is not None else None
        if worker is None:
            return await attach.serve(request, None, None, f'pod "{pod}" not found on node {kubelet.node_name}')
        if record is None or record.process is None or record.process.returncode is not None:
            return await attach.serve(request, None, None, f'container "{container}" in pod "{pod}" is not running')
        return await attach.serve(request, record.spec, kubelet.runtime.attach_socket(record.process), None)

    async def pod_port_forward(request: web.Request) -> web.StreamResponse:
        ns, pod = request.match_info["namespace"], request.match_info["pod"]
        worker = kubelet.worker_for(ns, pod)
        if worker is None:
            return await portforward.serve(request, None, "", f'pod "{pod}" not found on node {kubelet.node_name}')
        pod_ip = (worker.pod.get("status") or {}).get("podIP") or kubelet.host_ip
        return await portforward.serve(request, worker.pod, pod_ip, None)

    app = web.Application(middlewares=list(middlewares))
    app.router.add_get("/metrics/resource", resource_metrics)
    app.router.add_get("/metrics", kubeclient_metrics.serve)  # kubelet_* (kubelet.metrics), rest_client_*, process_*
    app.router.add_get("/healthz", healthz)
    async def informers(_: web.Request) -> web.Response:
        return web.json_response(informer_snapshot(f"kubelet {kubelet.node_name}"))

    app.router.add_get("/debug/informers", informers)
    app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", container_logs)
    app.router.add_get("/exec/{namespace}/{pod}/{container}", container_exec)
    app.router.add_get("/attach/{namespace}/{pod}/{container}", container_attach)
    app.router.add_get("/portForward/{namespace}/{pod}", pod_port_forward)
    return app
