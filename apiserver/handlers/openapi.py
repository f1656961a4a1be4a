"""``/openapi/v2`` and ``/openapi/v3``: the API's OpenAPI documents, served the way kube-openapi serves them.

What the real kubectl asks for (observed with ``-v=8`` against this router; pinned by
tests/integration/test_kubectl_openapi.py):

* ``create``/``apply -f`` (default ``--validate=strict``): kubectl 1.27 and 1.28 first GET ``/openapi/v2`` with
  ``Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and ``proto.Unmarshal`` it into gnostic's
  ``openapi_v2.Document`` (no JSON fallback); 1.29–1.33 skip that. All then GET ``/openapi/v3`` and
  ``/openapi/v3/api/v1?hash=…`` (JSON) and look for ``fieldValidation`` among the *operation* parameters of the
  PATCH carrying the kind's ``x-kubernetes-group-version-kind``. Found → the POST/PATCH goes out with
  ``?fieldValidation=Strict`` and the server validates. When ``/openapi/v3`` is missing they fall back to the
  same check on the v2 protobuf, and when neither has the parameter they validate client-side against the v2
  models ("unknown field "bogus" in io.k8s.api.core.v1.Container"). With no OpenAPI at all the create is
  refused (1.32: "error validating data: failed to download openapi"; 1.27: "Error from server (NotFound)").
* ``explain``: ``/openapi/v3`` then the group-version document (1.27/1.28 also fetch v2); the kind is found through
  the ``x-kubernetes-group-version-kind`` of the list/get operation and of ``components.schemas``.
  ``explain --output=plaintext-openapiv2`` renders from the v2 protobuf.
* ``apply`` to an existing object diffs lists by ``x-kubernetes-patch-merge-key`` (``$setElementOrder/containers``,
  ``$patch: delete``) and sends a strategic merge patch.
* A second run revalidates ``/openapi/v3`` (and v2) with ``If-None-Match`` and takes the hashed group-version
  document from its disk cache without asking.

Caching, as kube-apiserver does it: every response carries an ETag (upper-case hex SHA-512 of the body) and
answers ``If-None-Match`` with 304. A v3 group-version URL with the current ``?hash=`` is immutable
(``Cache-Control: public, immutable``, ``Expires`` a year ahead); a stale hash is redirected (301) to the current
URL. The bodies are pre-encoded, and pre-gzipped when the client accepts gzip (Go clients always do).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from apimachinery.errors import NotAcceptable, NotFound, StatusError
from apiserver.openapi import Encoded, v2_json, v2_protobuf, v3_discovery, v3_documents, v3_url
from apiserver.routes import get

# client-go asks with the "@" spelling, which Go's mime parser rejects in a Content-Type: kube-openapi answers
# both spellings with the dotted one.
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
V2_PROTOBUF_REQUESTED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
JSON = "application/json"
_V2_OFFERS: dict[str, Callable[[], Encoded]] = {JSON: v2_json, V2_PROTOBUF_REQUESTED: v2_protobuf,
                                                 V2_PROTOBUF: v2_protobuf}
NO_CACHE = "no-cache, private"


async def openapi_v2(request: Request) -> Response:
    """JSON or gnostic protobuf, by ``Accept``."""
    accept = request.headers.get("accept", "")
    chosen = negotiate(accept, list(_V2_OFFERS))
    if chosen is None:
        return _status(NotAcceptable(f"only the following media types are accepted: {', '.join(_V2_OFFERS)}"))
    headers = {"Cache-Control": NO_CACHE, "Vary": "Accept", "X-Varied-Accept": accept}
    return _send(request, _V2_OFFERS[chosen](), headers)


async def openapi_v3_discovery(request: Request) -> Response:
    """``{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=…"}, …}}``."""
    return _send(request, v3_discovery(), {"Cache-Control": NO_CACHE})


async def openapi_v3_document(request: Request) -> Response:
    group_version: str = request.path_params["group_version"]
    documents = v3_documents()
    if group_version not in documents:
        return _status(NotFound("the server could not find the requested resource"))
    if negotiate(request.headers.get("accept", ""), [JSON]) is None:
        return _status(NotAcceptable(f"only the following media types are accepted: {JSON}"))
    document = documents[group_version]
    wanted = request.query_params.get("hash")
    if wanted is None:
        return _send(request, document, {"Cache-Control": NO_CACHE})
    if wanted != document.etag:
        return RedirectResponse(v3_url(group_version), status_code=301)
    expires = format_datetime(datetime.now(UTC) + timedelta(days=365), usegmt=True)
    return _send(request, document, {"Cache-Control": "public, immutable", "Expires": expires, "Vary": "Accept"})


routes: list[Route] = [get("/openapi/v2", openapi_v2), get("/openapi/v3", openapi_v3_discovery),
                       get("/openapi/v3/{group_version:path}", openapi_v3_document)]


def negotiate(accept: str, offered: Sequence[str]) -> str | None:
    """The first offer matching the highest-quality ``Accept`` clause (an empty header accepts anything)."""
    clauses: list[tuple[float, str, str]] = []
    for clause in (accept or "*/*").split(","):
        media, *params = (part.strip() for part in clause.split(";"))
        if "/" not in media:
            continue
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        kind, _, sub = media.partition("/")
        clauses.append((quality, kind, sub))
    for quality, kind, sub in sorted(clauses, key=lambda c: -c[0]):
        if quality <= 0:
            continue
        for offer in offered:
            offer_kind, _, offer_sub = offer.partition("/")
            if kind in ("*", offer_kind) and sub in ("*", offer_sub):
                return offer
    return None


def _send(request: Request, encoded: Encoded, headers: dict[str, str]) -> Response:
    """The pre-encoded body with its ETag; 304 when the client already has it; gzip when the client takes it."""
    headers = {**headers, "ETag": f'"{encoded.etag}"'}
    if _etag_matches(request.headers.get("if-none-match", ""), encoded.etag):
        return Response(status_code=304, headers=headers)
    body = encoded.body
    if _accepts_gzip(request.headers.get("accept-encoding", "")):
        body = encoded.gzipped
        headers["Content-Encoding"] = "gzip"
        headers["Vary"] = ", ".join(filter(None, [headers.get("Vary"), "Accept-Encoding"]))
    return Response(body, media_type=encoded.media_type, headers=headers)


def _etag_matches(if_none_match: str, etag: str) -> bool:
    tags = [t.strip().removeprefix("W/").strip('"') for t in if_none_match.split(",") if t.strip()]
    return "*" in tags or etag in tags


def _accepts_gzip(accept_encoding: str) -> bool:
    for coding in accept_encoding.split(","):
        name, *params = (p.strip() for p in coding.split(";"))
        if name.lower() == "gzip":
            return not any(p.replace(" ", "") in ("q=0", "q=0.0", "q=0.00", "q=0.000") for p in params)
    return False


def _status(err: StatusError) -> Response:
    return Response(err.to_json(), status_code=err.code, media_type="application/json")
