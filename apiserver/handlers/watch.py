"""Watch streams: chunked, newline-delimited ``WatchEvent`` JSON, fed by the watch cache.

Start position (``resourceVersion``), as kube-apiserver serves it:
- unset: the current state (consistent) as ADDED events, then changes; ``0``: the cache's current state as ADDED,
  then changes; ``R``: every change after R (exclusive) — from the cache's ring buffer, or from etcd's history
  when the buffer no longer reaches back; an ERROR event with a 410 Expired Status when etcd has compacted it.
- ``sendInitialEvents=true`` (watch-list): the state as ADDED, then a BOOKMARK annotated
  ``k8s.io/initial-events-end``; ``sendInitialEvents=false`` without a resourceVersion: only the changes from now.
The stream ends after ``timeoutSeconds`` (default: a random 30–60 minutes, as kube-apiserver's
``--min-request-timeout``), or when the client goes away. With ``allowWatchBookmarks`` an idle stream gets a
BOOKMARK carrying the cache's resourceVersion every ``BOOKMARK_INTERVAL`` seconds. Events that are already queued
are written in one chunk.

Fan-out cost: one write reaches every unfiltered watcher, so what each stream pays per event is paid a thousand
times. An event's line is encoded (and framed) once and shared by every stream that writes it next (``_LINES``).
A stream parked with nothing queued lets the cache's dispatch write the chunk to its connection at once
(``directwrite``): no task wake-up, no trip through the ASGI wrappers. Otherwise (events already queued, the
connection's buffer full, a Table stream) the stream's own task writes with the server's ``send``
(``WatchResponse``), batching what is queued.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from apimachinery import errors
from apimachinery.fields import parse_field_selector
from apimachinery.labels import parse_selector

from ..authentication import request_user
from ..instrumentation import watch_event_series
from ..registry.store import ResourceStore, filter_for
from ..storage.cacher import CachedObject, CacheWatcher
from ..storage.deliveries import RING, Watcher
from .directwrite import ChunkWriter, chunk_writer, frame
from .listoptions import list_options
from .request import Output, RequestInfo
from .table import include_object, to_table
from .watches import ACTIVE, WatchStream, register

BOOKMARK_INTERVAL = 30.0
MAX_BATCH = 500
# What the cache's dispatch may hand one stream's connection in one turn of the loop beyond its high-water mark.
MAX_DIRECT_BYTES = 256 * 1024
MIN_REQUEST_TIMEOUT = 1800


def _event_line(event_type: str, raw: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + raw + b"}\n"


class _LineCache:
    """The last event line encoded (and framed as a chunk), keyed by (type, object identity): the streams an event
    fans out to write it one after another, so one entry spares all but the first of them a copy of the object's
    bytes."""

    __slots__ = ("type", "obj", "line", "chunk")

    def __init__(self) -> None:
        self.type = ""
        self.obj: CachedObject | None = None
        self.line = b""
        self.chunk = b""

    def line_for(self, event_type: str, co: CachedObject) -> bytes:
        if co is not self.obj or event_type != self.type:
            self.type, self.obj, self.line, self.chunk = event_type, co, _event_line(event_type, co.raw), b""
        return self.line

    def chunk_for(self, event_type: str, co: CachedObject) -> bytes:
        line = self.line_for(event_type, co)
        if not self.chunk:
            self.chunk = frame(line)
        return self.chunk


_LINES = _LineCache()


def error_event(err: errors.StatusError) -> bytes:
    return _event_line("ERROR", errors.encode_status(err.to_status(), newline=False))


async def serve_watch(request: Request, info: RequestInfo, store: ResourceStore, output: Output,
                      name: str | None = None) -> Response:
    requested = time.time()
    params = request.query_params
    strategy = store.strategy
    cache = store.cache
    selector_text = params.get("fieldSelector") or ""
    if name is not None:
        selector_text = f"metadata.name={name}" + (f",{selector_text}" if selector_text else "")
    filter = filter_for(strategy, info.namespace, parse_selector(params.get("labelSelector") or ""),
                        parse_field_selector(selector_text))
    options = list_options(params, watch_path=True)
    timeout = options.timeout_seconds
    if timeout is None or timeout <= 0:
        timeout = int(MIN_REQUEST_TIMEOUT * (1 + random.random()))
    bookmarks = options.allow_watch_bookmarks
    send_initial = options.send_initial_events
    rv_param = options.resource_version
    initial_events_end = False
    from_cache = True

    if send_initial:
        if rv_param and rv_param != "0":
            await cache.wait_rv(int(rv_param))
        elif not rv_param:
            await cache.wait_fresh()
        watcher = cache.watch(None, filter)
        initial_events_end = True
    elif send_initial is False and not rv_param:  # watch-list semantics: from now on, no initial state
        await cache.wait_fresh()
        watcher = cache.watch(cache.rv, filter)
    elif not rv_param:
        await cache.wait_fresh()
        watcher = cache.watch(None, filter)
    elif rv_param == "0":
        watcher = cache.watch(None, filter)
    else:
        try:
            rv = int(rv_param)
        except ValueError:
            raise errors.BadRequest(f'resourceVersion: Invalid value: "{rv_param}"') from None
        if rv > cache.rv:
            await cache.wait_rv(rv)
        try:
            watcher = cache.watch(rv, filter)
        except errors.Gone:
            watcher = cache.watch_from_storage(rv, filter)
            from_cache = False

    encoder = _Encoder(store, output, params)
    resource = f"{strategy.resource}.{strategy.group}" if strategy.group else strategy.resource
    stream = WatchStream(request_user().username, request.headers.get("user-agent", ""), resource,
                         info.namespace or "", params.get("labelSelector") or "", selector_text, watcher, cache)
    return WatchResponse(watcher, lambda write, write_now: _stream(
        watcher, store, encoder, timeout, bookmarks, initial_events_end, from_cache, stream, requested, write,
        write_now))


Write = Callable[[bytes], Awaitable[None]]


class WatchResponse(Response):
    """A watch's chunked ``application/json`` response: ``run(write, write_now)`` writes the stream's chunks, each
    with the server's ``send`` from the request's own task, or (``write_now``, when the server allows it) straight
    to the connection from the cache's dispatch; the client going away closes the watcher, which ends it."""

    media_type = "application/json"

    def __init__(self, watcher: CacheWatcher, run: Callable[[Write, ChunkWriter | None], Awaitable[None]]) -> None:
        self.status_code = 200
        self.background = None
        self.init_headers(None)
        self._watcher = watcher
        self._run = run

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def listen() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            self._watcher.close()

        async def write(body: bytes) -> None:
            await send({"type": "http.response.body", "body": body, "more_body": True})

        listener = asyncio.create_task(listen())
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            await self._run(write, chunk_writer(scope))
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            listener.cancel()


class _Encoder:
    """Turns (type, object) into wire bytes: the stored JSON as is, or a one-row Table for ``kubectl get -w``."""

    def __init__(self, store: ResourceStore, output: Output, params: Any) -> None:
        self.store = store
        self.table = output.table
        self.include = include_object(params) if output.table else "Object"
        self.headers_sent = False
        self.counted, self.sizes = watch_event_series(store.strategy.group, store.strategy.version,
                                                      store.strategy.kind)

    def event(self, event_type: str, co: CachedObject) -> bytes:
        if not self.table:
            line = _LINES.line_for(event_type, co)
        else:
            table = to_table(self.store.strategy, [co.obj], self.include, {"resourceVersion": str(co.rv)},
                             no_headers=self.headers_sent)
            self.headers_sent = True
            line = _event_line(event_type, orjson.dumps(table))
        self.sent(len(line))
        return line

    def sent(self, size: int) -> None:
        self.counted.inc()
        self.sizes.observe(size)

    def bookmark(self, rv: int, initial_events_end: bool = False) -> bytes:
        strategy = self.store.strategy
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_events_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return _event_line("BOOKMARK", orjson.dumps({"kind": strategy.kind, "apiVersion": strategy.api_version,
                                                      "metadata": meta}))


async def _stream(watcher: CacheWatcher, store: ResourceStore, encoder: _Encoder, timeout: float,
                  bookmarks: bool, initial_events_end: bool, from_cache: bool,
                  stream: WatchStream, requested: float, write: Write, write_now: ChunkWriter | None) -> None:
    """Write the watcher's events as they come; each chunk is recorded in the deliveries (storage/deliveries.py).

    While parked on an empty queue, the stream lets the cache's dispatch take an event at once (``deliver``): its
    chunk is written to the connection at the end of the loop's turn (``flush``), with whatever else that
    dispatch (an etcd watch response of many events) brought, as the stream's task would batch its queue: one
    write and one read for the client per burst, not one per event. The task flushes before it writes anything
    itself, so the order holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last_rv = 0
    register(stream)
    receiver = Watcher(stream.user, stream.user_agent, stream.resource, requested)
    delivered: list[tuple[str, str, int]] = []
    pending: list[bytes] = []  # chunks ``deliver`` took, not written yet
    pending_events: list[tuple[str, str, int]] = []
    pending_bytes = 0

    def flush() -> None:
        nonlocal pending, pending_events, pending_bytes
        if not pending:
            return
        assert write_now is not None
        chunks, events = pending, pending_events
        pending, pending_events, pending_bytes = [], [], 0
        # Timed before the write: on loopback the client can wake and act on the chunk before the write returns.
        RING.record(receiver, time.time(), events)
        write_now.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))

    def deliver(event_type: str, co: CachedObject) -> bool:
        nonlocal last_rv, pending_bytes
        assert write_now is not None
        if not pending:
            if not write_now.writable():
                return False
            loop.call_soon(flush)
        elif pending_bytes >= MAX_DIRECT_BYTES or len(pending) >= MAX_BATCH:
            return False  # queued: the task wakes, flushes these, then writes the queue
        chunk = _LINES.chunk_for(event_type, co)
        pending.append(chunk)
        pending_bytes += len(chunk)
        pending_events.append((event_type, co.key, co.rv))
        encoder.sent(len(_LINES.line))
        last_rv = max(last_rv, co.rv)
        stream.wrote(1, co.rv)
        return True

    direct = deliver if write_now is not None and not encoder.table else None
    try:
        if initial_events_end:
            initial = []
            while not watcher.queue.empty():
                item = watcher.queue.get_nowait()
                if item is None:
                    break
                initial.append(encoder.event(item[0], item[1]))
                delivered.append((item[0], item[1].key, item[1].rv))
                stream.wrote(1, item[1].rv)
            initial.append(encoder.bookmark(store.cache.rv, initial_events_end=True))
            RING.record(receiver, time.time(), delivered)
            await write(b"".join(initial))
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            wait = min(remaining, BOOKMARK_INTERVAL) if bookmarks and from_cache else remaining
            try:  # asyncio.timeout: no task per wait, and a client gone is never swallowed (3.11 wait_for can)
                async with asyncio.timeout(wait):
                    watcher.direct = direct
                    try:
                        item = await watcher.next()
                    finally:
                        watcher.direct = None
                        flush()
            except TimeoutError:
                if bookmarks and from_cache and loop.time() < deadline:
                    rv = max(store.cache.rv, last_rv)
                    await write(encoder.bookmark(rv))
                continue
            chunks = []
            delivered = []
            while item is not None:
                chunks.append(encoder.event(item[0], item[1]))
                delivered.append((item[0], item[1].key, item[1].rv))
                last_rv = max(last_rv, item[1].rv)
                if len(chunks) >= MAX_BATCH or watcher.queue.empty():
                    break
                item = watcher.queue.get_nowait()
            if chunks:
                stream.wrote(len(chunks), last_rv)
                RING.record(receiver, time.time(), delivered)
                await write(chunks[0] if len(chunks) == 1 else b"".join(chunks))
            if item is None:
                if watcher.error is not None:
                    await write(error_event(watcher.error))
                return
    finally:
        ACTIVE.discard(stream)
        watcher.close()
