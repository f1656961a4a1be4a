"""``RESTClient``: the one transport boundary between kubelab's components and the apiserver.

Everything below this module is aiohttp and sockets; everything above sees decoded JSON dicts and the
project's own exception tree, never an aiohttp or OS error::

    apimachinery.errors.StatusError
      ├─ <the Status reason's class>  a non-2xx response: its Status body rebuilt by StatusError.from_status
      │                                (NotFound 404, AlreadyExists/Conflict 409, Gone 410, Invalid 422, …);
      │                                a body that is not a Status keeps the HTTP code and its text
      ├─ Timeout 504                   the request (or connect) exceeded its client-side timeout
      ├─ ServiceUnavailable 503        connection refused/reset, DNS or TLS failure, a stream cut mid-way:
      │   │                            the server was not reached, or the request's fate is unknown
      │   └─ Unreachable               connection refused: nothing listens at the address (yet)
      └─ InternalError 500             a 2xx response whose body is not JSON

Why aiohttp: one ``ClientSession`` with a keep-alive connection pool sustains several times the request rate
of httpx's AsyncClient under concurrency (DESIGN.md).  Watches hold a pooled connection for their whole
life, so the pool limit must exceed the number of concurrent watches plus in-flight requests.

A response carrying ``Retry-After`` with status 429 or 5xx (the server said it did not process the request)
is retried up to ``max_retries`` times, as client-go does; nothing else is retried here — retry policy
belongs to the callers' loops (reflector, workqueue).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from apimachinery.errors import InternalError, ServiceUnavailable, StatusError, Timeout
from kubeclient.config import Config, build_config
from kubeclient.metrics import observe_request
from kubeclient.types import Object

_RETRYABLE_CODES = frozenset({429, 500, 502, 503, 504})


def status_error(code: int, payload: bytes, reason: str | None = None) -> StatusError:
    """The exception for a non-2xx response: its ``Status`` body if it has one, else its code and text."""
    body: Any = None
    if payload:
        try:
            body = orjson.loads(payload)
        except orjson.JSONDecodeError:
            body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return StatusError.from_status(body, code)
    if isinstance(body, dict) and "detail" in body:  # a framework error that bypassed the Status handler
        message = str(body["detail"])
    else:
        message = payload.decode(errors="replace").strip()[:1024] if payload else ""
    return StatusError.from_status({"code": code, "message": message or reason or f"HTTP {code}"}, code)


def _decode(payload: bytes, what: str) -> Object:
    if not payload:
        return {}
    try:
        body = orjson.loads(payload)
    except orjson.JSONDecodeError as e:
        raise InternalError(f"{what}: response is not JSON: {e}") from e
    if not isinstance(body, dict):
        raise InternalError(f"{what}: expected a JSON object, got {type(body).__name__}")
    return body


class Unreachable(ServiceUnavailable):
    """The connection was refused: no server listens at ``address`` (host, port), as while the apiserver is still
    starting (``until_listening`` waits for it)."""

    def __init__(self, message: str, address: tuple[str, int] | None = None) -> None:
        super().__init__(message)
        self.address = address


def _transport_error(what: str, exc: BaseException, address: tuple[str, int] | None) -> StatusError:
    if isinstance(exc, TimeoutError):
        return Timeout(f"{what}: timed out")
    message = f"{what}: {type(exc).__name__}: {exc}"
    if isinstance(exc, ConnectionRefusedError) or (
            isinstance(exc, aiohttp.ClientConnectorError) and isinstance(exc.os_error, ConnectionRefusedError)):
        return Unreachable(message, address)
    return ServiceUnavailable(message)


async def until_listening(address: tuple[str, int], poll: float = 0.05) -> None:
    """Return once something accepts a TCP connection at ``address``: a bare connect every ``poll`` seconds, a
    fraction of what a failing request costs (many informers wait like this while the apiserver starts)."""
    while True:
        try:
            _, writer = await asyncio.open_connection(*address)
        except OSError:
            await asyncio.sleep(poll)
            continue
        writer.close()
        return


def _retry_delay(header: str | None, cap: float) -> float | None:
    if header is None:
        return None
    try:
        return min(max(float(header), 0.0), cap)
    except ValueError:
        return 1.0  # an HTTP-date: retry soon rather than parse clocks


class RESTClient:
    """An apiserver connection: ``request`` for one call, ``stream`` for a watch.  Implements ``Transport``.

    The session is created on first use inside the running loop and must be closed with ``close()`` (or
    ``async with``).  JSON goes through orjson both ways; ``body`` may also be pre-encoded ``bytes``.
    """

    def __init__(
        self,
        config: Config,
        *,
        connector_limit: int = 200,
        request_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        max_retries: int = 3,
        max_retry_after: float = 10.0,
        token_source: Callable[[], str] | None = None,
    ) -> None:
        self.config = config
        # A bearer token that changes (a service account's, refreshed before it expires): asked on every request.
        self.token_source = token_source
        self._base = config.host.rstrip("/")
        url = urlsplit(self._base)
        self._metrics_host = url.netloc  # rest_client_* metrics' host label, as client-go's
        self._address = (url.hostname or "localhost", url.port or (443 if url.scheme == "https" else 80))
        headers = {"Accept": "application/json", "User-Agent": config.user_agent}
        if config.token:
            headers["Authorization"] = f"Bearer {config.token}"
        self._headers: dict[str, str] | list[tuple[str, str]] = headers
        if config.impersonate_user:  # Impersonate-Group repeats, so these headers are a list of pairs
            self._headers = [*headers.items(), ("Impersonate-User", config.impersonate_user),
                             *(("Impersonate-Group", group) for group in config.impersonate_groups)]
        self._ssl = config.ssl_context()
        self._connector_limit = connector_limit
        self._timeout = aiohttp.ClientTimeout(total=request_timeout, sock_connect=connect_timeout)
        self._connect_timeout = connect_timeout
        self._max_retries = max_retries
        self._max_retry_after = max_retry_after
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def from_flags(cls, *, master: str | None = None, kubeconfig: str | os.PathLike[str] | None = None,
                   user_agent: str = "kubelab", **kwargs: Any) -> RESTClient:
        """Build from the ``--master`` / ``--kubeconfig`` flags (see ``kubeclient.config.build_config``)."""
        return cls(build_config(master=master, kubeconfig=kubeconfig, user_agent=user_agent), **kwargs)

    def _auth_header(self) -> dict[str, str] | None:
        return {"Authorization": f"Bearer {self.token_source()}"} if self.token_source is not None else None

    @property
    def host(self) -> str:
        return self._base

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._connector_limit,
                limit_per_host=0,
                keepalive_timeout=60.0,
                ssl=self._ssl if self._ssl is not None else True,
            )
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers,
                                                  timeout=self._timeout, read_bufsize=1 << 18)
        return self._session

    async def request(
        self,
        verb: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
    ) -> Object:
        """Send ``verb path`` and return the decoded body; raises a ``StatusError`` (see module docstring)."""
        url = self._base + path
        what = f"{verb} {path}"
        data: bytes | None = None
        headers = self._auth_header()
        if body is not None:
            data = body if isinstance(body, bytes) else orjson.dumps(body)
            headers = {**(headers or {}), "Content-Type": content_type or "application/json"}
        session = self._get_session()
        attempt = 0
        while True:
            started = time.monotonic()
            try:
                async with session.request(verb, url, params=params, data=data, headers=headers) as resp:
                    payload = await resp.read()
                    code, reason, retry_after = resp.status, resp.reason, resp.headers.get("Retry-After")
            except (TimeoutError, aiohttp.ClientError, OSError) as e:
                observe_request(verb, self._metrics_host, "<error>", time.monotonic() - started)
                raise _transport_error(what, e, self._address) from e
            observe_request(verb, self._metrics_host, str(code), time.monotonic() - started)
            if code < 300:
                return _decode(payload, what)
            delay = _retry_delay(retry_after, self._max_retry_after) if code in _RETRYABLE_CODES else None
            if delay is None or attempt >= self._max_retries:
                raise status_error(code, payload, reason)
            attempt += 1
            await asyncio.sleep(delay)

    async def stream(self, path: str, *, params: Mapping[str, str] | None = None) -> AsyncGenerator[Object, None]:
        """GET ``path`` and yield each newline-delimited JSON object until the server ends the response.

        Lines may be of any length and split across chunks.  Closing the generator (``aclose``, or leaving
        ``contextlib.aclosing``) closes the connection.  There is no read timeout: a watch may be idle for
        long; the server's ``timeoutSeconds`` (plus a minute of grace, enforced here) bounds it.
        """
        url = self._base + path
        what = f"GET {path}"
        server_timeout = float((params or {}).get("timeoutSeconds", 0) or 0)
        timeout = aiohttp.ClientTimeout(total=server_timeout + 60.0 if server_timeout else None,
                                        sock_connect=self._connect_timeout)
        session = self._get_session()
        started = time.monotonic()
        try:
            async with session.get(url, params=params, timeout=timeout, headers=self._auth_header()) as resp:
                observe_request("GET", self._metrics_host, str(resp.status), time.monotonic() - started)
                if resp.status >= 300:
                    raise status_error(resp.status, await resp.read(), resp.reason)
                buf = bytearray()
                async for chunk in resp.content.iter_any():
                    buf += chunk
                    start = 0
                    while (end := buf.find(b"\n", start)) >= 0:
                        line = bytes(buf[start:end])
                        start = end + 1
                        if line.strip():
                            yield _decode(line, what)
                    del buf[:start]
                if bytes(buf).strip():
                    yield _decode(bytes(buf), what)
        except (TimeoutError, aiohttp.ClientError, OSError) as e:
            raise _transport_error(what, e, self._address) from e

    async def close(self) -> None:
        """Close the pooled connections; the client may be used again afterwards (a new pool is made)."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __aenter__(self) -> RESTClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()
