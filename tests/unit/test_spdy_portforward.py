"""Port-forward framing: the kubelet's websocket protocol (``kubelet.portforward``: port prefixes, channel pairs,
dial errors) and the apiserver's SPDY bridge onto it (``apiserver.spdy.portforward``), end to end against a
scripted SPDY client, a real kubelet handler and a real TCP echo server."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from apiserver.spdy import framing, portforward
from apiserver.spdy.framing import DataFrame, SynStream
from kubelab.etcd import free_port
from kubelet import portforward as kubelet_portforward
from support.spdy import Peer

POD = {"metadata": {"namespace": "ns", "name": "web", "uid": "u-1"}}


def test_ports_are_parsed_as_kubelet_does() -> None:
    assert kubelet_portforward.parse_ports(["8000,9000", "53"]) == [8000, 9000, 53]
    for bad in (["0"], ["x"], ["70000"], []):
        with pytest.raises(ValueError):
            kubelet_portforward.parse_ports(bad)
    assert kubelet_portforward.port_prefix(8000) == bytes([0x40, 0x1F])  # little-endian


@pytest.fixture()
async def echo_port() -> AsyncIterator[int]:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(data.upper())
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()


@pytest.fixture()
async def kubelet_url() -> AsyncIterator[str]:
    async def handler(request: web.Request) -> web.StreamResponse:
        return await kubelet_portforward.serve(request, POD, "127.0.0.1", None)

    app = web.Application()
    app.router.add_get("/portForward/ns/web", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield f"ws://127.0.0.1:{port}/portForward/ns/web"
    await runner.cleanup()


async def test_kubelet_websocket_prefixes_each_channel_with_its_port(kubelet_url: str, echo_port: int) -> None:
    closed = free_port()
    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(f"{kubelet_url}?ports={echo_port},{closed}", protocols=("v4.channel.k8s.io",))
        first = [(await ws.receive_bytes()) for _ in range(4)]
        prefix = kubelet_portforward.port_prefix
        assert first == [b"\x00" + prefix(echo_port), b"\x01" + prefix(echo_port), b"\x02" + prefix(closed),
                         b"\x03" + prefix(closed)]
        error = await ws.receive_bytes()
        assert error[0] == 3 and b"error forwarding port %d to pod ns/web, uid u-1" % closed in error
        assert b"connection refused" in error
        await ws.send_bytes(b"\x00hello")
        assert await ws.receive_bytes() == b"\x00HELLO"
        await ws.send_bytes(bytes([255, 0]))  # half-close: the echo server sees EOF and hangs up
        assert (await ws.receive()).type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        await ws.close()


def _pair(request_id: str, port: int, first_id: int) -> tuple[SynStream, SynStream]:
    headers = {"port": [str(port)], "requestid": [request_id]}
    return (SynStream(first_id, {**headers, "streamtype": ["error"]}, framing.FLAG_FIN),
            SynStream(first_id + 2, {**headers, "streamtype": ["data"]}))


async def test_spdy_pairs_are_each_forwarded_on_their_own_connection(kubelet_url: str, echo_port: int) -> None:
    peer = Peer()
    async with aiohttp.ClientSession() as http:
        async def dial(port: int) -> aiohttp.ClientWebSocketResponse:
            return await http.ws_connect(f"{kubelet_url}?ports={port}")

        frames = asyncio.create_task(peer.session.run())
        bridge = asyncio.create_task(portforward.bridge(peer.session, dial))
        closed = free_port()
        peer.send(*_pair("0", echo_port, 1), *_pair("1", echo_port, 5), *_pair("2", closed, 9))
        peer.send(DataFrame(3, b"one"), DataFrame(7, b"two", framing.FLAG_FIN))

        def data_on(stream_id: int) -> bytes:
            return b"".join(f.data for f in peer.received if isinstance(f, DataFrame) and f.stream_id == stream_id)

        def fin_on(stream_id: int) -> bool:
            return any(isinstance(f, DataFrame) and f.stream_id == stream_id and f.flags & framing.FLAG_FIN
                       for f in peer.received)

        async with asyncio.timeout(10):
            while not (data_on(3) == b"ONE" and fin_on(7) and fin_on(9)):
                await asyncio.sleep(0.01)
        assert data_on(7) == b"TWO" and data_on(5) == b""  # its FIN reached the pod: the connection ended
        assert data_on(9).startswith(b"error forwarding port %d to pod ns/web" % closed)
        assert not fin_on(3)  # still open: the first connection goes on
        peer.hang_up()
        await frames
        await bridge


class _BrokenClient:
    """A websocket whose sends fail once the port prefixes are out (the client went away mid-stream)."""

    closed = False

    def __init__(self) -> None:
        self.sent = 0

    async def send_bytes(self, data: bytes) -> None:
        self.sent += 1
        if self.sent > 2:
            raise RuntimeError("websocket connection is closing")

    def __aiter__(self) -> _BrokenClient:
        return self

    async def __anext__(self) -> None:
        await asyncio.sleep(3600)  # the client sends nothing


def test_a_failing_pump_ends_the_forwarding_without_an_unretrieved_error() -> None:
    async def scenario() -> list[dict[str, object]]:
        loop = asyncio.get_running_loop()
        unhandled: list[dict[str, object]] = []
        loop.set_exception_handler(lambda _loop, context: unhandled.append(context))

        finished = asyncio.Event()

        async def talk(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"hello")
            await writer.drain()
            await reader.read()  # until the kubelet closes its end
            writer.close()
            await writer.wait_closed()
            finished.set()

        server = await asyncio.start_server(talk, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        forwarding = kubelet_portforward.Forwarding(_BrokenClient(), POD, "127.0.0.1", [port])  # type: ignore[arg-type]
        await asyncio.wait_for(forwarding.run(), 10)
        await asyncio.wait_for(finished.wait(), 10)
        del forwarding
        gc.collect()
        await asyncio.sleep(0)
        server.close()
        await server.wait_closed()
        return unhandled

    unretrieved = [c for c in asyncio.run(scenario()) if "never retrieved" in str(c.get("message"))]
    assert unretrieved == []


class _GoneClient:
    """kubectl gone right after the port prefixes: its transport is closing, so aiohttp refuses every later send."""

    closed = False

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    async def send_bytes(self, data: bytes) -> None:
        if len(self.sent) >= 2:
            raise aiohttp.ClientConnectionResetError("Cannot write to closing transport")
        self.sent.append(data)

    def __aiter__(self) -> _GoneClient:
        return self

    async def __anext__(self) -> None:
        raise StopAsyncIteration  # its messages ended with it


def test_a_dial_error_for_a_client_that_left_is_no_error() -> None:
    """The pod's port refuses, and the error channel's message finds the client gone: the forwarding ends quietly
    (before, the ConnectionResetError escaped the handler and aiohttp logged a traceback)."""
    closed = free_port()  # nothing listens there
    client = _GoneClient()
    forwarding = kubelet_portforward.Forwarding(client, POD, "127.0.0.1", [closed])  # type: ignore[arg-type]
    asyncio.run(asyncio.wait_for(forwarding.run(), 10))
    assert client.sent == [bytes([0]) + kubelet_portforward.port_prefix(closed),
                           bytes([1]) + kubelet_portforward.port_prefix(closed)]
