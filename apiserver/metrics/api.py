"""``/apis/metrics.k8s.io/v1beta1``: NodeMetrics and PodMetrics, as metrics-server serves them to ``kubectl top``.

Read-only (get and list; anything else is 405 as metrics-server answers). Lists take ``labelSelector`` and
``fieldSelector`` over the nodes and pods themselves (kubectl sends both), then report those whose kubelet could
be scraped and that have running containers; a get of one without metrics is a 404
(``podmetrics.metrics.k8s.io "default/web" not found``, the namespace/name spelling metrics-server uses). Each
object carries the scrape's ``timestamp``, the ``window`` its CPU rate covers, CPU in nanocores and memory as a
binary quantity (``137190727n``, ``1234Ki``); ``metadata`` holds the node's or pod's name and labels with a
``creationTimestamp`` of now, because the object is made for this answer. Nodes whose kubelet serves no endpoint
(hollow nodes: port 0) or cannot be scraped are left out, as metrics-server leaves them out (``kubectl top nodes``
prints ``<unknown>`` for them). ``kubectl get nodemetrics`` gets a
Table as metrics-server prints one: NAME, CPU, MEMORY, WINDOW (a pod's usage summed over its containers).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from apimachinery import errors
from apimachinery.fields import parse_field_selector
from apimachinery.labels import parse_selector
from apimachinery.meta import format_duration, format_rfc3339
from apimachinery.quantity import Quantity, format_cpu_nanos, format_memory_bytes, parse_quantity

from ..handlers.request import RequestInfo, bool_param, negotiate
from ..handlers.responses import json_response
from ..handlers.table import include_object, to_table
from ..kubeletclient import node_kubelet_url
from ..registry.registry import Registry
from ..registry.store import ResourceStore, filter_for
from ..registry.strategy import NAME_COLUMN, TableColumn
from .collector import Collector, NodeScrape, Point, container_point, node_point

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
RESOURCES = (
    {"name": "nodes", "singularName": "", "namespaced": False, "kind": "NodeMetrics", "verbs": ["get", "list"]},
    {"name": "pods", "singularName": "", "namespaced": True, "kind": "PodMetrics", "verbs": ["get", "list"]},
)
BY_NAME = {r["name"]: r for r in RESOURCES}
Object = dict[str, Any]


def api_group() -> Object:
    gv = {"groupVersion": API_VERSION, "version": VERSION}
    return {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [gv], "preferredVersion": gv}


def resource_list(version: str) -> Object | None:
    if version != VERSION:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": API_VERSION,
            "resources": [dict(r) for r in RESOURCES]}


def usage(point: Point) -> Object:
    return {"cpu": format_cpu_nanos(point.cpu_nanocores), "memory": format_memory_bytes(point.memory_bytes)}


def _metadata(obj: Object, now: float) -> Object:
    meta = obj["metadata"]
    out: Object = {"name": meta["name"]}
    if meta.get("namespace"):
        out["namespace"] = meta["namespace"]
    out["creationTimestamp"] = format_rfc3339(now)
    if meta.get("labels"):
        out["labels"] = dict(meta["labels"])
    return out


def node_metrics(node: Object, point: Point, now: float) -> Object:
    return {"kind": "NodeMetrics", "apiVersion": API_VERSION, "metadata": _metadata(node, now),
            "timestamp": format_rfc3339(point.timestamp), "window": format_duration(point.window),
            "usage": usage(point)}


def pod_metrics(pod: Object, base: NodeScrape, current: NodeScrape, now: float) -> Object | None:
    """The pod's running containers in spec order (running init containers — sidecars — last, as the kubelet
    reports every running container); ``None`` when none of them has a usage point."""
    meta = pod["metadata"]
    spec = pod.get("spec") or {}
    containers = []
    window = 0.0
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        key = (meta["namespace"], meta["name"], container["name"])
        point = container_point(base, current, key) if key in current.containers else None
        if point is not None:
            containers.append({"name": container["name"], "usage": usage(point)})
            window = max(window, point.window)
    if not containers:
        return None
    return {"kind": "PodMetrics", "apiVersion": API_VERSION, "metadata": _metadata(pod, now),
            "timestamp": format_rfc3339(current.timestamp), "window": format_duration(window),
            "containers": containers}


class MetricsPrinter:
    """metrics-server's table: the name, each resource's usage (summed over a pod's containers), the window."""

    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, TableColumn("cpu", format="quantity"), TableColumn("memory", format="quantity"),
                TableColumn("Window", format="duration")]

    def row(self, obj: Object) -> list[Any]:
        usages = [obj["usage"]] if "usage" in obj else [c["usage"] for c in obj["containers"]]
        totals = [sum((parse_quantity(u[name]) for u in usages), Quantity(0)) for name in ("cpu", "memory")]
        return [obj["metadata"]["name"], *(str(t) for t in totals), obj["window"]]


class MetricsAPI:
    """Serves the group's requests from the nodes and pods in the watch cache and fresh kubelet scrapes."""

    def __init__(self, registry: Registry, collector: Collector | None = None) -> None:
        self.registry = registry
        self.collector = collector if collector is not None else Collector()

    async def handle(self, request: Request, info: RequestInfo) -> Response:
        entry = BY_NAME.get(info.resource)
        if info.version != VERSION or entry is None or info.subresource or \
                (info.namespace is not None and not entry["namespaced"]):
            raise errors.NotFound("the server could not find the requested resource")
        if request.method != "GET" or info.watch_path or bool_param(request.query_params, "watch"):
            verb = "watch" if request.method == "GET" else request.method.lower()
            raise errors.MethodNotAllowed(f"the server does not allow this method on the requested resource "
                                          f"({verb} {info.resource}.{GROUP})")
        output = negotiate(request.headers.get("accept"))  # 406 for protobuf alone: the group speaks JSON
        items = await (self._nodes if info.resource == "nodes" else self._pods)(request, info)
        if info.name is not None and not items:
            name = f"{info.namespace}/{info.name}" if info.resource == "pods" else info.name
            raise errors.not_found(str(entry["kind"]).lower(), name, GROUP)
        if output.table:
            return json_response(to_table(MetricsPrinter(), items, include_object(request.query_params)))
        if info.name is not None:
            return json_response(items[0])
        return json_response({"kind": f"{entry['kind']}List", "apiVersion": API_VERSION, "metadata": {},
                              "items": items})

    async def _selected(self, store: ResourceStore, request: Request, info: RequestInfo) -> list[Object]:
        """The nodes or pods a request names: one by name, else those its selectors match."""
        if info.name is not None:
            try:
                return [(await store.get(info.namespace, info.name)).obj]
            except errors.NotFound:
                return []
        params = request.query_params
        selected = filter_for(store.strategy, info.namespace, parse_selector(params.get("labelSelector") or ""),
                              parse_field_selector(params.get("fieldSelector") or ""))
        await store.cache.wait_fresh()
        return [co.obj for co in store.cache.list(selected)]

    async def _scrapes(self, nodes: list[Object]) -> dict[str, tuple[NodeScrape, NodeScrape]]:
        """Baseline and current scrape of each node's kubelet, by node name (unreachable ones left out)."""
        urls = {n["metadata"]["name"]: node_kubelet_url(n) for n in nodes}
        names = [name for name, url in urls.items() if url]
        pairs = await asyncio.gather(*(self.collector.pair(name, urls[name] or "") for name in names))
        return {name: pair for name, pair in zip(names, pairs, strict=False) if pair is not None}

    async def _nodes(self, request: Request, info: RequestInfo) -> list[Object]:
        nodes = await self._selected(self.registry.get("", "nodes"), request, info)
        scrapes = await self._scrapes(nodes)
        now = time.time()
        items = []
        for node in nodes:
            pair = scrapes.get(node["metadata"]["name"])
            point = node_point(*pair) if pair is not None else None
            if point is not None:
                items.append(node_metrics(node, point, now))
        return items

    async def _pods(self, request: Request, info: RequestInfo) -> list[Object]:
        pods = [p for p in await self._selected(self.registry.get("", "pods"), request, info)
                if (p.get("spec") or {}).get("nodeName")]
        nodes_store = self.registry.get("", "nodes")
        nodes = []
        for name in sorted({p["spec"]["nodeName"] for p in pods}):
            co = nodes_store.cache.get(nodes_store.etcd_key(None, name))
            if co is not None:
                nodes.append(co.obj)
        scrapes = await self._scrapes(nodes)
        now = time.time()
        items = []
        for pod in pods:
            pair = scrapes.get(pod["spec"]["nodeName"])
            metrics = pod_metrics(pod, *pair, now) if pair is not None else None
            if metrics is not None:
                items.append(metrics)
        return items
