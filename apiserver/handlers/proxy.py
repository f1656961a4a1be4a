"""``pods/{name}/log``, ``pods/{name}/exec``, ``pods/{name}/attach`` and ``pods/{name}/portforward``: proxied to
the kubelet of the pod's node, as kube-apiserver does.

The kubelet's address comes from the Node object (``kubeletclient.node_kubelet_url``), and every call to it goes
over HTTPS/WSS with the apiserver's kubelet client certificate (``kubeletclient.ssl_context``). The kubelet serves
its own API (``/containerLogs/{ns}/{pod}/{container}`` and the ``/exec/…``, ``/attach/{ns}/{pod}/{container}`` and
``/portForward/{ns}/{pod}`` websockets); this module only finds it, checks the request as kube-apiserver's pod
strategy does (``streamLocation``: container name, pod bound), and streams bytes both ways.

exec and attach (``STREAMS``: the same channel protocol, the same code here) arrive as a websocket
(kubectl ≥ 1.30) or as an ``Upgrade: SPDY/3.1`` POST (kubectl ≤ 1.29, client-go's SPDY executor).
kube-apiserver relays SPDY to the kubelet untouched; here the kubelet speaks websockets only, so
the apiserver ends SPDY itself (``apiserver.spdy``) and bridges its streams to the kubelet's websocket.

portforward is a ``STREAMS`` member too, in three shapes: SPDY/3.1 with ``portforward.k8s.io`` (kubectl ≤ 1.30,
and newer ones as fallback), a websocket with subprotocol ``SPDY/3.1+portforward.k8s.io`` whose binary messages
carry the same SPDY bytes (kubectl ≥ 1.31's tunnel, translated here as kube-apiserver's tunneling handler does),
both bridged by ``spdy.portforward``; and kubelet's own websocket protocol (``v4.channel.k8s.io``, channel pairs
per port: the Python client), relayed to the kubelet untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Protocol
from urllib.parse import urlencode

import aiohttp
import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from apimachinery import errors

from ..admission import AdmissionChain
from ..kubeletclient import node_kubelet_url, ssl_context, ws_url
from ..registry.registry import Registry
from ..registry.store import ResourceStore
from ..spdy import portforward, remotecommand, upgrade
from ..spdy.session import Session
from .admit import admit_connect
from .logoptions import pod_log_options
from .request import RequestInfo

STREAMS = ("exec", "attach", "portforward")  # the subresources relayed as streaming sessions
TUNNEL_PROTOCOL = "SPDY/3.1+" + portforward.PROTOCOL  # client-go's SPDY-over-websocket port-forward
EXEC_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io",
                  "channel.k8s.io")


def _container_name(pod: dict[str, Any], requested: str | None) -> str:
    """The container a log/exec/attach request means: the named one, or the only one (else 400 as Kubernetes says)."""
    spec = pod.get("spec", {})
    containers: list[str] = [c["name"] for c in spec.get("containers", [])]
    init = [c["name"] for c in spec.get("initContainers", []) or []]
    ephemeral = [c["name"] for c in spec.get("ephemeralContainers", []) or []]
    name = pod["metadata"]["name"]
    if requested:
        if requested not in containers and requested not in init and requested not in ephemeral:
            raise errors.BadRequest(f"container {requested} is not valid for pod {name}")
        return requested
    if len(containers) == 1:
        return containers[0]
    message = f"a container name must be specified for pod {name}, choose one of: [{' '.join(containers)}]"
    if init:
        message += f" or one of the init containers: [{' '.join(init)}]"
    if ephemeral:
        message += f" or one of the ephemeral containers: [{' '.join(ephemeral)}]"
    raise errors.BadRequest(message)


async def kubelet_base_url(registry: Registry, pod: dict[str, Any]) -> str:
    node_name = pod.get("spec", {}).get("nodeName")
    name = pod["metadata"]["name"]
    if not node_name:
        raise errors.BadRequest(f"pod {name} does not have a host assigned")
    nodes = registry.get("", "nodes")
    try:
        node = (await nodes.get(None, node_name)).obj
    except errors.NotFound:
        raise errors.not_found("nodes", node_name) from None
    url = node_kubelet_url(node)
    if url is None:
        raise errors.ServiceUnavailable(f"no kubelet endpoint is known for node {node_name}")
    return url


async def kubelet_stream_url(registry: Registry, pod: dict[str, Any], subresource: str,
                             params: Any) -> str:
    """The kubelet websocket for an exec/attach/portforward request (``params``: the request's query)."""
    base = ws_url(await kubelet_base_url(registry, pod))
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    if subresource == "portforward":
        return f"{base}/portForward/{namespace}/{name}?{urlencode([('ports', p) for p in params.getlist('ports')])}"
    container = _container_name(pod, params.get("container"))
    query = [(k, v) for k, v in params.multi_items() if k != "container"]
    return f"{base}/{subresource}/{namespace}/{name}/{container}?{urlencode(query)}"


async def serve(request: Request, info: RequestInfo, pods: ResourceStore, registry: Registry,
                admission: AdmissionChain | None) -> Response:
    """``log`` (streamed from the kubelet) and the SPDY forms of the ``STREAMS`` (``registry``: the pod's Node)."""
    assert info.name is not None
    if info.subresource in STREAMS and request.method in ("GET", "POST") and _wants_spdy(request):
        return await _spdy_stream(registry, request, info.namespace, info.name, info.subresource, admission)
    if info.subresource != "log" or request.method != "GET":
        raise errors.MethodNotAllowed(f"the server does not allow this method on the requested resource "
                                      f"({request.method} {info.subresource}); {info.subresource} needs a "
                                      f"websocket or SPDY/3.1 upgrade")
    params = request.query_params
    options = pod_log_options(params, info.name)  # checked before the pod is read, as kube's LogREST does
    pod = (await pods.get(info.namespace, info.name)).obj
    container = _container_name(pod, params.get("container"))
    base = await kubelet_base_url(registry, pod)
    query = urlencode(options)
    url = f"{base}/containerLogs/{info.namespace}/{info.name}/{container}" + (f"?{query}" if query else "")
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=5))
    try:
        upstream = await session.get(url, ssl=ssl_context())
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
    return StreamingResponse(relay_body(upstream, session), media_type="text/plain")


async def relay_body(upstream: aiohttp.ClientResponse, session: aiohttp.ClientSession) -> AsyncIterator[bytes]:
    """An upstream response's body as it arrives; the response and its session are closed at the end."""
    try:
        async for chunk in upstream.content.iter_any():
            yield chunk
    finally:
        upstream.release()
        await session.close()


async def serve_stream(websocket: WebSocket, registry: Registry, namespace: str, name: str, subresource: str,
                       admission: AdmissionChain | None = None) -> None:
    """The exec/attach/portforward websocket: accept the client's channel protocol, dial the kubelet with it, relay
    frames (or, for port-forward's SPDY tunnel, end SPDY here)."""
    pods = registry.get("", "pods")
    offered = [p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
    try:
        pod = (await pods.get(namespace, name)).obj
        await admit_connect(admission, pods, namespace, name, subresource, websocket.query_params)
        if subresource == "portforward" and TUNNEL_PROTOCOL in offered:
            base = ws_url(await kubelet_base_url(registry, pod))
            await _spdy_tunnel(websocket, f"{base}/portForward/{namespace}/{name}")
            return
        url = await kubelet_stream_url(registry, pod, subresource, websocket.query_params)
    except errors.StatusError as err:
        await websocket.close(code=1011, reason=err.message[:120])
        return
    protocols = [p for p in offered if p in EXEC_PROTOCOLS] or offered
    async with aiohttp.ClientSession() as session:
        try:
            upstream = await session.ws_connect(url, protocols=protocols, max_msg_size=0, ssl=ssl_context())
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
            with contextlib.suppress(RuntimeError):
                await client.close()

    tasks = [asyncio.create_task(client_to_upstream()), asyncio.create_task(upstream_to_client())]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    await asyncio.gather(*done, return_exceptions=True)
    if pending:  # asyncio.wait refuses an empty set (both directions may end together)
        await asyncio.wait(pending, timeout=5)
    for task in pending:
        task.cancel()


# --- exec, attach and portforward over SPDY/3.1 ----------------------------------------------------------------
def _wants_spdy(request: Request) -> bool:
    connection = [t.strip().lower() for t in request.headers.get("connection", "").split(",")]
    return "upgrade" in connection and request.headers.get("upgrade", "").lower() == "spdy/3.1"


async def _spdy_stream(registry: Registry, request: Request, namespace: str | None, name: str,
                       subresource: str, admission: AdmissionChain | None = None) -> Response:
    """Check the request, negotiate the channel protocol, dial the kubelet — all before answering 101, so every
    failure is still an ordinary Status response, which client-go's SPDY round tripper decodes and reports."""
    if upgrade.EXTENSION not in request.scope.get("extensions", {}):
        raise errors.BadRequest("unable to upgrade: this server cannot take over the connection for SPDY/3.1")
    offered = [p.strip() for line in request.headers.getlist("x-stream-protocol-version")
               for p in line.split(",") if p.strip()]
    if not offered:
        raise errors.BadRequest("unable to upgrade: X-Stream-Protocol-Version is required")
    accepted = (portforward.PROTOCOL,) if subresource == "portforward" else remotecommand.PROTOCOLS
    protocol = remotecommand.negotiate(offered, accepted)
    if protocol is None:
        raise errors.Forbidden(f"unable to upgrade: unable to negotiate protocol: client supports {offered}, "
                               f"server accepts {list(accepted)}")
    pods = registry.get("", "pods")
    pod = (await pods.get(namespace, name)).obj
    params = request.query_params
    await admit_connect(admission, pods, namespace, name, subresource, params)
    if subresource == "portforward":
        base = ws_url(await kubelet_base_url(registry, pod))
        return SpdyResponse(protocol, PortForwarder(f"{base}/portForward/{namespace}/{name}"))
    url = await kubelet_stream_url(registry, pod, subresource, params)
    session = aiohttp.ClientSession()
    try:
        upstream = await session.ws_connect(url, protocols=("v5.channel.k8s.io", "v4.channel.k8s.io"),
                                            max_msg_size=0, ssl=ssl_context())
    except aiohttp.ClientError as err:
        await session.close()
        raise errors.ServiceUnavailable(f"error dialing backend: {err}") from None
    return SpdyResponse(protocol, ExecBridge(protocol, remotecommand.expected_streams(protocol, params), session,
                                             upstream))


class Bridge(Protocol):
    """What a SPDY session is relayed to: ``run`` until done; ``close`` once the client left, or at the end."""

    async def run(self, session: Session) -> None: ...
    async def close(self) -> None: ...


class ExecBridge:
    """An exec/attach session on the kubelet's websocket (closing it ends the command)."""

    def __init__(self, protocol: str, expected: set[str], http: aiohttp.ClientSession,
                 upstream: aiohttp.ClientWebSocketResponse) -> None:
        self.protocol = protocol
        self.expected = expected
        self.http = http
        self.upstream = upstream

    async def run(self, session: Session) -> None:
        await remotecommand.bridge(session, self.upstream, self.protocol, self.expected)

    async def close(self) -> None:
        await self.upstream.close()
        await self.http.close()


class PortForwarder:
    """Port-forward streams, each pair on its own kubelet websocket (``{url}?ports=N``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = aiohttp.ClientSession()

    async def dial(self, port: int) -> aiohttp.ClientWebSocketResponse:
        return await self.http.ws_connect(f"{self.url}?ports={port}", protocols=("v4.channel.k8s.io",),
                                          max_msg_size=0, ssl=ssl_context())

    async def run(self, session: Session) -> None:
        await portforward.bridge(session, self.dial)

    async def close(self) -> None:
        await self.http.close()


async def run_session(session: Session, bridge: Bridge) -> None:
    """Run a SPDY session's frame loop beside its bridge until the client leaves or the bridge is done."""
    frames = asyncio.create_task(session.run())
    relay = asyncio.create_task(bridge.run(session))
    try:
        await asyncio.wait([frames, relay], return_when=asyncio.FIRST_COMPLETED)
        if frames.done():  # the client left: closing the upstream ends the command / the connections
            await bridge.close()
            await asyncio.wait([relay], timeout=5)
        else:  # the command ended and every stream got its FIN: client-go hangs up next
            await asyncio.wait([frames], timeout=10)
    finally:
        for task in (frames, relay):
            task.cancel()
        await asyncio.gather(frames, relay, return_exceptions=True)
        await bridge.close()


class SpdyResponse(Response):
    """``101 Switching Protocols`` to SPDY/3.1, then the session on the raw connection, relayed by ``bridge``."""

    def __init__(self, protocol: str, bridge: Bridge) -> None:
        super().__init__(status_code=101, headers={"Connection": "Upgrade", "Upgrade": "SPDY/3.1",
                                                   "X-Stream-Protocol-Version": protocol})
        self.bridge = bridge

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 101, "headers": self.raw_headers})

        async def read() -> bytes:
            message = await receive()
            return message.get("body", b"") if message["type"] == "http.request" else b""

        async def write(data: bytes) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": True})

        try:
            await run_session(Session(read, write), self.bridge)
        finally:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _spdy_tunnel(websocket: WebSocket, url: str) -> None:
    """kubectl ≥ 1.31's port-forward: SPDY carried in binary websocket messages, ended here as kube-apiserver's
    tunneling handler does (its kubelet speaks SPDY; this one speaks websockets, so the streams are bridged)."""
    await websocket.accept(subprotocol=TUNNEL_PROTOCOL)

    async def read() -> bytes:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return b""
            if message.get("bytes"):
                return bytes(message["bytes"])

    async def write(data: bytes) -> None:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, ConnectionError):
            await websocket.send_bytes(data)

    await run_session(Session(read, write), PortForwarder(url))
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
        await websocket.close()
