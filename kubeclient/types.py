"""Wire shapes shared by every client layer, typed the kopf way: plain dicts, ``TypedDict`` and ``Literal``.

Objects stay the ``dict`` that JSON decoding produced — no model round-trip on the hot path (informers
decode thousands of events); a caller that wants a pydantic model validates at its own edge.  Objects handed
out by an informer's store are shared: treat them as read-only and copy before changing.

``Transport`` is the one interface below ``ResourceClient``: ``RESTClient`` implements it over HTTP and
``FakeAPIServer`` in memory, so the same client code runs against either.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any, Literal, Protocol, TypedDict

from apimachinery.meta import Object, ObjectKey

__all__ = ["Object", "ObjectKey", "Transport", "WatchEvent", "WatchEventType"]

WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]


class WatchEvent(TypedDict):
    """One line of a watch stream; ``ERROR`` carries a ``Status`` object (410 Expired when the RV is too old)."""

    type: WatchEventType
    object: Object


class Transport(Protocol):
    """What ``ResourceClient`` needs from the layer below: one request, or one newline-delimited JSON stream.

    Implementations raise ``apimachinery.errors.StatusError`` subclasses and nothing else for server and
    transport failures.
    """

    async def request(
        self,
        verb: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
    ) -> Object:
        """Send one request and return the decoded JSON body."""
        ...

    def stream(self, path: str, *, params: Mapping[str, str] | None = None) -> AsyncGenerator[Object, None]:
        """GET ``path`` and yield each JSON line of the response until the server ends it."""
        ...
