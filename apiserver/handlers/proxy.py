"""``pods/{name}/log``, ``pods/{name}/exec`` and ``pods/{name}/attach``: proxied to the kubelet of the pod's node,
as kube-apiserver does.

The kubelet's address comes from the Node object: ``status.addresses`` (InternalIP, else Hostname) and
``status.daemonEndpoints.kubeletEndpoint.Port``. The kubelet serves its own API (``/containerLogs/{ns}/{pod}/
{container}`` and the ``/exec/…`` and ``/attach/{ns}/{pod}/{container}`` websockets); this module only finds it,
checks the request as kube-apiserver's pod strategy does (``streamLocation``: container name, pod bound), and
streams bytes both ways.

exec and attach (``STREAMS``: the same channel protocol, the same code here) arrive as a websocket
(kubectl ≥ 1.30) or as an ``Upgrade: SPDY/3.1`` POST (kubectl ≤ 1.29, client-go's SPDY executor).
kube-apiserver relays SPDY to the kubelet untouched; here the kubelet speaks websockets only, so
the apiserver ends SPDY itself (``apiserver.spdy``) and bridges its streams to the kubelet's websocket.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import aiohttp
import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from apimachinery import errors

from ..registry.registry import Registry
from ..registry.store import ResourceStore
from ..spdy import remotecommand, upgrade
from ..spdy.session import Session

if TYPE_CHECKING:
    from .request import RequestInfo
    from .rest import RESTHandler

LOG_PARAMS = ("follow", "tailLines", "sinceSeconds", "sinceTime", "timestamps", "previous", "limitBytes")
STREAMS = ("exec", "attach")  # the subresources relayed as remote command sessions
EXEC_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io",
                  "channel.k8s.io")


def _container_name(pod: dict[str, Any], requested: str | None) -> str:
    """The container a log/exec/attach request means: the named one, or the only one (else 400 as Kubernetes says)."""
    spec = pod.get("spec", {})
    containers = [c["name"] for c in spec.get("containers", [])]
    init = [c["name"] for c in spec.get("initContainers", []) or []]
    name = pod["metadata"]["name"]
    if requested:
        if requested not in containers and requested not in init:
            raise errors.BadRequest(f"container {requested} is not valid for pod {name}")
        return requested
    if len(containers) == 1:
        return containers[0]
    raise errors.BadRequest(f"a container name must be specified for pod {name}, choose one of: "
                            f"[{' '.join(containers)}]" + (f" or one of the init containers: [{' '.join(init)}]"
                                                           if init else ""))


async def kubelet_base_url(registry: Registry, pod: dict[str, Any]) -> str:
    node_name = pod.get("spec", {}).get("nodeName")
    name = pod["metadata"]["name"]
    if not node_name:
        raise errors.BadRequest(f"pod {name} does not have a host assigned")
    nodes = registry.get("", "nodes")
    try:
        node = (await nodes.get(None, node_name)).obj
    except errors.NotFound:
        raise errors.NotFound(f'nodes "{node_name}" not found') from None
    url = node_kubelet_url(node)
    if url is None:
        raise errors.ServiceUnavailable(f"no kubelet endpoint is known for node {node_name}")
    return url


def node_kubelet_url(node: dict[str, Any]) -> str | None:
    """Where a node's kubelet serves, or ``None`` when it has no endpoint (hollow nodes' port is 0)."""
    status = node.get("status", {})
    port = (status.get("daemonEndpoints") or {}).get("kubeletEndpoint", {}).get("Port")
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    host = addresses.get("InternalIP") or addresses.get("Hostname")
    return f"http://{host}:{port}" if port and host else None


async def serve(handler: RESTHandler, request: Request, info: RequestInfo, store: ResourceStore) -> Response:
    assert info.name is not None
    if info.subresource in STREAMS and request.method in ("GET", "POST") and _wants_spdy(request):
        return await _spdy_stream(handler.registry, request, info.namespace, info.name, info.subresource)
    if info.subresource != "log" or request.method != "GET":
        raise errors.MethodNotAllowed(f"the server does not allow this method on the requested resource "
                                      f"({request.method} {info.subresource}); {info.subresource} needs a "
                                      f"websocket or SPDY/3.1 upgrade")
    pod = (await store.get(info.namespace, info.name)).obj
    params = request.query_params
    container = _container_name(pod, params.get("container"))
    base = await kubelet_base_url(handler.registry, pod)
    query = urlencode({k: params[k] for k in LOG_PARAMS if k in params})
    url = f"{base}/containerLogs/{info.namespace}/{info.name}/{container}" + (f"?{query}" if query else "")
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=5))
    try:
        upstream = await session.get(url)
    except aiohttp.ClientError as err:
        await session.close()
        raise errors.ServiceUnavailable(f"error dialing the kubelet of node {pod['spec']['nodeName']}: "
                                        f"{err}") from None
    if upstream.status != 200:
        body = await upstream.read()
        upstream.release()
        await session.close()
        try:
            status = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise errors.BadRequest(body.decode(errors="replace").strip()) from None
        raise errors.StatusError.from_status(status, upstream.status)

    async def relay() -> AsyncIterator[bytes]:
        try:
            async for chunk in upstream.content.iter_any():
                yield chunk
        finally:
            upstream.release()
            await session.close()

    return StreamingResponse(relay(), media_type="text/plain")


async def serve_stream(websocket: WebSocket, registry: Registry, namespace: str, name: str, subresource: str) -> None:
    """The exec/attach websocket: accept the client's channel protocol, dial the kubelet with it, relay frames."""
    pods = registry.get("", "pods")
    params = websocket.query_params
    try:
        pod = (await pods.get(namespace, name)).obj
        container = _container_name(pod, params.get("container"))
        base = await kubelet_base_url(registry, pod)
    except errors.StatusError as err:
        await websocket.close(code=1011, reason=err.message[:120])
        return
    offered = [p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
    protocols = [p for p in offered if p in EXEC_PROTOCOLS] or offered
    query = [(k, v) for k, v in params.multi_items() if k != "container"]
    url = base.replace("http://", "ws://") + f"/{subresource}/{namespace}/{name}/{container}?{urlencode(query)}"
    async with aiohttp.ClientSession() as session:
        try:
            upstream = await session.ws_connect(url, protocols=protocols, max_msg_size=0)
        except aiohttp.ClientError as err:
            await websocket.close(code=1011, reason=f"error dialing kubelet: {err}"[:120])
            return
        await websocket.accept(subprotocol=upstream.protocol)
        await _relay_websockets(websocket, upstream)


async def _relay_websockets(client: WebSocket, upstream: aiohttp.ClientWebSocketResponse) -> None:
    async def client_to_upstream() -> None:
        try:
            while True:
                message = await client.receive()
                if message["type"] == "websocket.disconnect":
                    break
                if message.get("bytes") is not None:
                    await upstream.send_bytes(message["bytes"])
                elif message.get("text") is not None:
                    await upstream.send_str(message["text"])
        except (WebSocketDisconnect, RuntimeError, ConnectionError):
            pass
        finally:
            await upstream.close()

    async def upstream_to_client() -> None:
        try:
            async for msg in upstream:
                if msg.type == aiohttp.WSMsgType.BINARY:
                    await client.send_bytes(msg.data)
                elif msg.type == aiohttp.WSMsgType.TEXT:
                    await client.send_text(msg.data)
                else:
                    break
        except (WebSocketDisconnect, RuntimeError, ConnectionError):
            pass
        finally:
            try:
                await client.close()
            except RuntimeError:
                pass

    tasks = [asyncio.create_task(client_to_upstream()), asyncio.create_task(upstream_to_client())]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    await asyncio.gather(*done, return_exceptions=True)
    await asyncio.wait(pending, timeout=5)
    for task in pending:
        task.cancel()


# --- exec and attach over SPDY/3.1 ------------------------------------------------------------------------------------
def _wants_spdy(request: Request) -> bool:
    connection = [t.strip().lower() for t in request.headers.get("connection", "").split(",")]
    return "upgrade" in connection and request.headers.get("upgrade", "").lower() == "spdy/3.1"


async def _spdy_stream(registry: Registry, request: Request, namespace: str | None, name: str,
                       subresource: str) -> Response:
    """Check the request, negotiate the channel protocol, dial the kubelet — all before answering 101, so every
    failure is still an ordinary Status response, which client-go's SPDY round tripper decodes and reports."""
    if upgrade.EXTENSION not in request.scope.get("extensions", {}):
        raise errors.BadRequest("unable to upgrade: this server cannot take over the connection for SPDY/3.1")
    offered = [p.strip() for line in request.headers.getlist("x-stream-protocol-version")
               for p in line.split(",") if p.strip()]
    if not offered:
        raise errors.BadRequest("unable to upgrade: X-Stream-Protocol-Version is required")
    protocol = remotecommand.negotiate(offered)
    if protocol is None:
        raise errors.Forbidden(f"unable to upgrade: unable to negotiate protocol: client supports {offered}, "
                               f"server accepts {list(remotecommand.PROTOCOLS)}")
    pod = (await registry.get("", "pods").get(namespace, name)).obj
    params = request.query_params
    container = _container_name(pod, params.get("container"))
    base = await kubelet_base_url(registry, pod)
    query = [(k, v) for k, v in params.multi_items() if k != "container"]
    url = base.replace("http://", "ws://") + f"/{subresource}/{namespace}/{name}/{container}?{urlencode(query)}"
    session = aiohttp.ClientSession()
    try:
        upstream = await session.ws_connect(url, protocols=("v5.channel.k8s.io", "v4.channel.k8s.io"),
                                            max_msg_size=0)
    except aiohttp.ClientError as err:
        await session.close()
        raise errors.ServiceUnavailable(f"error dialing backend: {err}") from None
    expected = remotecommand.expected_streams(protocol, params)
    return SpdyExecResponse(protocol, expected, session, upstream)


class SpdyExecResponse(Response):
    """``101 Switching Protocols`` to SPDY/3.1, then the exec/attach session bridged to the kubelet's websocket."""

    def __init__(self, protocol: str, expected: set[str], http: aiohttp.ClientSession,
                 upstream: aiohttp.ClientWebSocketResponse) -> None:
        super().__init__(status_code=101, headers={"Connection": "Upgrade", "Upgrade": "SPDY/3.1",
                                                   "X-Stream-Protocol-Version": protocol})
        self.protocol = protocol
        self.expected = expected
        self.http = http
        self.upstream = upstream

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 101, "headers": self.raw_headers})

        async def read() -> bytes:
            message = await receive()
            return message.get("body", b"") if message["type"] == "http.request" else b""

        async def write(data: bytes) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": True})

        session = Session(read, write)
        frames = asyncio.create_task(session.run())
        relay = asyncio.create_task(remotecommand.bridge(session, self.upstream, self.protocol, self.expected))
        try:
            await asyncio.wait([frames, relay], return_when=asyncio.FIRST_COMPLETED)
            if frames.done():  # the client left: closing the websocket ends the command
                await self.upstream.close()
                await asyncio.wait([relay], timeout=5)
            else:  # the command ended and every stream got its FIN: client-go hangs up next
                await asyncio.wait([frames], timeout=10)
        finally:
            for task in (frames, relay):
                task.cancel()
            await asyncio.gather(frames, relay, return_exceptions=True)
            await self.upstream.close()
            await self.http.close()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
