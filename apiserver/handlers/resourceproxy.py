"""``pods/{name}/proxy``, ``services/{name}/proxy`` and ``nodes/{name}/proxy`` (with ``[/path]``): HTTP relayed
to where the object leads, as kube-apiserver's ``ProxyREST``s do (``pkg/registry/core/{pod,service,node}``).

The name segment is ``[scheme:]name[:port]`` (``net.SplitSchemeNamePort``):

* a pod: its ``status.podIP`` and the port given, else its first declared ``containerPort`` (an address-less pod
  is ``400 address not allowed``);
* a service: a ready endpoint of its EndpointSlices for the service port named — by name, or by number (then the
  service port with that number names it) — chosen at random; none is ``503 no endpoints available for service
  "<name>"``;
* a node: its kubelet (``https``, the apiserver's kubelet client certificate) when no port or the kubelet's port is
  given, else plain ``http`` to that port on the node's address.

Admission sees a ``CONNECT`` of ``<resource>/proxy`` with a ``<Kind>ProxyOptions`` (its ``path``) first. All
methods are relayed with the query and body; hop-by-hop headers and the client's credentials are not; an
``https`` pod or service is not verified (kube's proxy transport skips verification); a request without a path
after ``proxy`` is redirected (301) to one with ``/``, as kube's proxy handler does. The
apiserver has already authorized the request as ``<verb> pods/proxy`` (etc.) by then. Upgrades (websockets
through a Service) are not relayed.
"""

from __future__ import annotations

import random
from typing import Any

import aiohttp
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from apimachinery import errors
from apimachinery.fields import parse_field_selector
from apimachinery.labels import parse_selector

from ..admission import AdmissionChain
from ..kubeletclient import node_kubelet_url, ssl_context
from ..registry.registry import Registry
from ..registry.store import ResourceStore, filter_for
from .admit import admit_object
from .proxy import relay_body
from .request import RequestInfo

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "transfer-encoding", "upgrade", "host", "content-length", "authorization",
                        "impersonate-user", "impersonate-group", "impersonate-uid"})
DIAL_TIMEOUT = 10.0


def split_scheme_name_port(segment: str) -> tuple[str, str, str]:
    """``[scheme:]name[:port]`` → (scheme, name, port), as kube's ``SplitSchemeNamePort`` (400 when malformed)."""
    parts = segment.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        scheme = name = ""
    if not name or (scheme and scheme not in ("http", "https")):
        raise errors.BadRequest(f"invalid service request {segment}")
    return scheme, name, port


async def serve(request: Request, info: RequestInfo, store: ResourceStore, registry: Registry,
                admission: AdmissionChain | None) -> Response:
    """``{pods,services,nodes}/{name}/proxy/{path}``: the request relayed to the object's address (``registry``:
    a service's EndpointSlices)."""
    assert info.name is not None
    scheme, name, port = split_scheme_name_port(info.name)
    tls: Any = None
    if info.resource == "pods":
        location = await _pod_location(store, info.namespace, name, scheme, port)
    elif info.resource == "services":
        location = await _service_location(registry, store, info.namespace, name, scheme, port)
    else:
        location, tls = await _node_location(store, name, scheme, port)
    options = {"kind": f"{store.strategy.kind}ProxyOptions", "apiVersion": "v1", "path": info.proxy_path}
    await admit_object(admission, store, "CONNECT", info.namespace, info.name, "proxy",
                       ("", "v1", options["kind"]), options)  # webhooks and policies may refuse a CONNECT
    if not info.proxy_path:  # kube's UpgradeAwareHandler: an empty path is redirected to one ending in '/'
        query = request.url.query
        return Response(status_code=301, headers={"Location": request.url.path + "/" + (f"?{query}" if query else "")})
    return await _relay(request, location + info.proxy_path, tls)


async def _pod_location(store: ResourceStore, namespace: str | None, name: str, scheme: str, port: str) -> str:
    pod = (await store.get(namespace, name)).obj
    if not port:
        port = next((str(p["containerPort"]) for c in pod.get("spec", {}).get("containers", [])
                     for p in c.get("ports") or [] if p.get("containerPort")), "")
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        raise errors.BadRequest("address not allowed")
    host = f"[{ip}]" if ":" in ip else ip
    return f"{scheme or 'http'}://{host}" + (f":{port}" if port else "")


async def _service_location(registry: Registry, store: ResourceStore, namespace: str | None, name: str,
                            scheme: str, port: str) -> str:
    service = (await store.get(namespace, name)).obj
    port_name = port
    if port.isdigit():  # a number: the service port with that number names the endpoint port
        port_name = next((p.get("name", "") for p in service.get("spec", {}).get("ports") or []
                          if p.get("port") == int(port)), port)
    slices = registry.get("discovery.k8s.io", "endpointslices")
    selected = filter_for(slices.strategy, namespace, parse_selector(f"kubernetes.io/service-name={name}"),
                          parse_field_selector(""))
    await slices.cache.wait_fresh()
    candidates: list[tuple[str, int]] = []
    for co in slices.cache.list(selected):
        ports = [p for p in co.obj.get("ports") or [] if (p.get("name") or "") == port_name and p.get("port")]
        if not ports:
            continue
        for endpoint in co.obj.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            candidates.extend((address, ports[0]["port"]) for address in endpoint.get("addresses") or [])
    if not candidates:
        raise errors.ServiceUnavailable(f'no endpoints available for service "{name}"')
    address, target = random.choice(candidates)
    host = f"[{address}]" if ":" in address else address
    return f"{scheme or 'http'}://{host}:{target}"


async def _node_location(store: ResourceStore, name: str, scheme: str, port: str) -> tuple[str, Any]:
    node = (await store.get(None, name)).obj
    kubelet = node_kubelet_url(node)
    kubelet_port = kubelet.rsplit(":", 1)[1] if kubelet else ""
    if not port or port == kubelet_port:
        if kubelet is None:
            raise errors.ServiceUnavailable(f"no kubelet endpoint is known for node {name}")
        return kubelet, ssl_context()
    host = kubelet.split("//", 1)[1].rsplit(":", 1)[0] if kubelet else name
    return f"{scheme or 'http'}://{host}:{port}", None


async def _relay(request: Request, url: str, tls: Any) -> Response:
    query = request.url.query
    headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
    body = await request.body()
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=DIAL_TIMEOUT),
                                    auto_decompress=False)
    try:
        upstream = await session.request(request.method, url + (f"?{query}" if query else ""), headers=headers,
                                         data=body or None, allow_redirects=False,
                                         ssl=tls if tls is not None else False)
    except (aiohttp.ClientError, OSError) as err:
        await session.close()
        raise errors.ServiceUnavailable(f"error trying to reach service: {err}") from None
    out = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP}
    return StreamingResponse(relay_body(upstream, session), status_code=upstream.status, headers=out)
