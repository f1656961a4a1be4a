"""Starlette routes for what the apiserver serves besides resources (discovery, health, OpenAPI, websockets).

Why plain Starlette: these routes were FastAPI's, which the apiserver used for nothing but routing (every
endpoint answers a ready ``Response``; no models, no validation, no generated docs), and importing FastAPI — its
OpenAPI models, pydantic — cost ~0.4 s of CPU on every cold start of an apiserver, a fifth of its import.
Two things FastAPI did that a client could see are kept here: a route answers only the methods it names
(Starlette's would also answer HEAD for GET), and the 405 that a method no route takes gets is FastAPI's JSON
``{"detail": "Method Not Allowed"}`` with its ``Allow`` header.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

Endpoint = Callable[[Request], Awaitable[Response]]


def route(path: str, endpoint: Endpoint, methods: Sequence[str]) -> Route:
    """A route answering exactly ``methods``."""
    served = Route(path, endpoint, methods=list(methods), include_in_schema=False)
    served.methods = set(methods)  # no implicit HEAD
    return served


def get(path: str, endpoint: Endpoint) -> Route:
    return route(path, endpoint, ["GET"])


async def http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own HTTP errors (a 405 for a method no route takes) as FastAPI's JSON ``detail``."""
    assert isinstance(exc, HTTPException)
    if exc.status_code < 200 or exc.status_code in (204, 205, 304):  # no body allowed
        return Response(status_code=exc.status_code, headers=exc.headers)
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)
