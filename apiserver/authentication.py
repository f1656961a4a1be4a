"""Who a request comes as: kube-apiserver's authentication and impersonation filters.

Impersonation headers change the authenticated user as kube-apiserver's ``WithImpersonation`` filter does, each
part checked against the ``impersonate`` verb (``ImpersonationCheck``, given by the app: the authorizer's), so
``kubectl --as alice --as-group dev auth whoami`` answers ``alice`` in ``dev``:

* ``Impersonate-User`` names the user (resource ``users``); ``system:serviceaccount:<ns>:<name>`` is checked as
  that service account (``serviceaccounts`` in ``<ns>``) and also brings the service account groups when no group
  is given;
* ``Impersonate-Group`` (repeated, ``groups``), ``Impersonate-Uid`` (``uids``) and ``Impersonate-Extra-<key>``
  (lower-cased key, each value one entry; ``userextras/<key>``) add to it; without ``Impersonate-User`` they are an
  error (500, as kube-apiserver answers);
* a user other than ``system:anonymous`` is also put in ``system:authenticated``, unless the groups already name
  ``system:authenticated`` or ``system:unauthenticated``.

Before impersonation, ``RequestAuthenticator`` finds who the request really comes from, as kube-apiserver's
authenticator union does (``apiserver.authenticators`` holds the credential checks):

* a client certificate the TLS handshake verified against ``--client-ca-file``: CN the user, O the groups
  (the certificate travels in the scope under ``PEER_CERT``, put there by ``apiserver.serving``);
* ``Authorization: Bearer <token>``: each registered ``TokenAuthenticator`` in turn (``--token-auth-file`` first,
  then service-account tokens); a token none of them knows is a 401 ``Unauthorized`` Status, as kube answers,
  even when anonymous requests are allowed;
* no credential: on the plain-HTTP port, kube's old insecure port's user ``system:unsecured`` in
  ``system:masters`` (full rights under any authorization mode); over HTTPS ``system:anonymous`` in
  ``system:unauthenticated`` when ``--anonymous-auth`` (the default), else 401;
* an authenticated user gets ``system:authenticated`` (kube's ``AuthenticatedGroupAdder``).

``AuthenticationMiddleware`` works the user out once per request and keeps it in a context variable, as
kube-apiserver keeps it in the request context; ``request_user()`` reads it wherever it is needed (the reviews,
admission, the authorization filter).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from apimachinery import errors

ANONYMOUS_USER = "system:anonymous"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
IMPERSONATE_USER = b"impersonate-user"
IMPERSONATE_GROUP = b"impersonate-group"
IMPERSONATE_UID = b"impersonate-uid"
IMPERSONATE_EXTRA = b"impersonate-extra-"
PEER_CERT = "kubelab.peercert"  # scope key: the verified client certificate (``ssl.SSLSocket.getpeercert()``)
REQUESTER = "kubelab.requester"  # scope key: the authenticated user when it impersonates another (the audit log's)


@dataclass(frozen=True)
class UserInfo:
    """``user.Info``: what authorizers and the self reviews see of the requesting user."""

    username: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``authentication.k8s.io/v1`` UserInfo: empty fields left out (``omitempty``)."""
        out: dict[str, Any] = {"username": self.username}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {key: list(values) for key, values in self.extra.items()}
        return out


ANONYMOUS = UserInfo(ANONYMOUS_USER, (ALL_UNAUTHENTICATED,))
UNSECURED = UserInfo("system:unsecured", ("system:masters", ALL_AUTHENTICATED))
AUTHENTICATION_GROUP = "authentication.k8s.io"
# Raises a StatusError (403) unless the user may do the ``impersonate`` request the attributes describe.
ImpersonationCheck = Callable[[UserInfo, dict[str, Any]], None]

_user: ContextVar[UserInfo] = ContextVar("user", default=ANONYMOUS)


def request_user() -> UserInfo:
    """The user the current request comes as (anonymous outside a request)."""
    return _user.get()


def service_account_groups(username: str) -> tuple[str, ...]:
    """``system:serviceaccount:ns:name`` → its groups (``serviceaccount.MakeGroupNames``); () for other users."""
    parts = username.split(":")
    if not username.startswith(SERVICE_ACCOUNT_PREFIX) or len(parts) != 4 or not parts[2] or not parts[3]:
        return ()
    return ("system:serviceaccounts", f"system:serviceaccounts:{parts[2]}")


def impersonation_attributes(username: str, groups: list[str], uid: str,
                             extra: dict[str, list[str]]) -> list[dict[str, Any]]:
    """The ``impersonate`` checks an impersonation needs (kube's ``buildImpersonationRequests``)."""
    checks: list[dict[str, Any]] = []
    parts = username.split(":")
    if service_account_groups(username):
        checks.append({"verb": "impersonate", "group": "", "resource": "serviceaccounts", "namespace": parts[2],
                       "name": parts[3]})
    else:
        checks.append({"verb": "impersonate", "group": "", "resource": "users", "name": username})
    checks.extend({"verb": "impersonate", "group": "", "resource": "groups", "name": g} for g in groups)
    for key, values in extra.items():
        checks.extend({"verb": "impersonate", "group": AUTHENTICATION_GROUP, "resource": "userextras",
                       "subresource": key, "name": value} for value in values)
    if uid:
        checks.append({"verb": "impersonate", "group": AUTHENTICATION_GROUP, "resource": "uids", "name": uid})
    return checks


def user_from_headers(headers: list[tuple[bytes, bytes]], requester: UserInfo = ANONYMOUS,
                      check: ImpersonationCheck | None = None) -> UserInfo:
    """``requester``, or whom the impersonation headers name (raw ASGI headers, names lower-case) once ``check``
    allows each part."""
    username = ""
    groups: list[str] = []
    uid = ""
    extra: dict[str, list[str]] = {}
    for name, raw in headers:
        if not name.startswith(b"impersonate-"):
            continue
        value = raw.decode("latin-1")
        if name == IMPERSONATE_USER:
            username = username or value
        elif name == IMPERSONATE_GROUP:
            groups.append(value)
        elif name == IMPERSONATE_UID:
            uid = uid or value
        elif name.startswith(IMPERSONATE_EXTRA):
            key = unquote(name[len(IMPERSONATE_EXTRA):].decode("latin-1")).lower()
            extra.setdefault(key, []).append(value)
    if not username:
        if groups or uid or extra:
            requested = [*(f"Group {g}" for g in groups), *(f"UserExtra {k}" for k in extra), *(["UID"] if uid else [])]
            raise errors.InternalError(f"requested {orjson.dumps(requested).decode()} without impersonating a user")
        return requester
    if check is not None:
        for attributes in impersonation_attributes(username, groups, uid, extra):
            check(requester, attributes)
    if not groups:
        groups = list(service_account_groups(username))
    if username != ANONYMOUS_USER and ALL_AUTHENTICATED not in groups and ALL_UNAUTHENTICATED not in groups:
        groups.append(ALL_AUTHENTICATED)
    return UserInfo(username, tuple(groups), uid, extra)


class TokenAuthenticator(Protocol):
    """kube's ``authenticator.Token``: who a bearer token belongs to, or None when this authenticator does not know
    it (the chain then asks the next one)."""

    async def authenticate_token(self, token: str) -> UserInfo | None: ...


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """kube's ``AuthenticatedGroupAdder``: ``system:authenticated`` for every user but the anonymous one."""
    if user.username == ANONYMOUS_USER or ALL_AUTHENTICATED in user.groups:
        return user
    return UserInfo(user.username, (*user.groups, ALL_AUTHENTICATED), user.uid, user.extra)


def user_from_peer_cert(cert: dict[str, Any]) -> UserInfo | None:
    """kube's x509 ``CommonNameUserConversion``: CN the user, each O a group (None without a CN)."""
    common_name = ""
    groups: list[str] = []
    for rdn in cert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                common_name = value
            elif key == "organizationName":
                groups.append(value)
    return UserInfo(common_name, tuple(groups)) if common_name else None


def bearer_token(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The token of ``Authorization: Bearer <token>`` (None without one, as kube's bearer-token authenticator)."""
    for name, value in headers:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None


class RequestAuthenticator:
    """kube-apiserver's authenticator union for one server: x509, then the token authenticators, then anonymous.

    ``tokens`` may be extended after construction (the service-account token authenticator needs the registry)."""

    def __init__(self, tokens: Sequence[TokenAuthenticator] = (), *, anonymous: bool = True) -> None:
        self.tokens: list[TokenAuthenticator] = list(tokens)
        self.anonymous = anonymous

    async def authenticate(self, scope: Scope) -> UserInfo:
        """The request's user before impersonation; raises ``Unauthorized`` as kube answers 401."""
        cert = scope.get(PEER_CERT)
        if cert:
            user = user_from_peer_cert(cert)
            if user is not None:
                return with_authenticated_group(user)
        token = bearer_token(scope.get("headers") or [])
        if token is not None:
            for authenticator in self.tokens:
                user = await authenticator.authenticate_token(token)
                if user is not None:
                    return with_authenticated_group(user)
            raise errors.Unauthorized("Unauthorized")
        if scope.get("scheme") in ("http", "ws"):
            return UNSECURED  # the plain port (kube's old insecure port): whoever can reach the loopback, full rights
        if self.anonymous:
            return ANONYMOUS
        raise errors.Unauthorized("Unauthorized")


def _impersonates(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(name.startswith(b"impersonate-") for name, _ in headers)


class AuthenticationMiddleware:
    """Pure ASGI middleware: sets the request's user for the handlers; a refused credential is a 401 Status and
    a bad impersonation a 500 (a refused websocket gets the same answer before the upgrade)."""

    def __init__(self, app: ASGIApp, authenticator: RequestAuthenticator | None = None,
                 check: ImpersonationCheck | None = None) -> None:
        self.app = app
        self.authenticator = authenticator or RequestAuthenticator()
        self.check = check

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        try:
            user = await self.authenticator.authenticate(scope)
            headers = scope.get("headers") or []
            if _impersonates(headers):
                scope[REQUESTER] = user
                user = user_from_headers(headers, user, self.check)
        except errors.StatusError as err:
            await send_status(scope, send, err)
            return
        token = _user.set(user)
        try:
            await self.app(scope, receive, send)
        finally:
            _user.reset(token)


async def send_status(scope: Scope, send: Send, err: errors.StatusError) -> None:
    """Answer with a Status before the app runs; a websocket upgrade gets the same HTTP response where the server
    supports it (ASGI's websocket.http.response), else the upgrade is refused (403)."""
    body = err.to_json()
    if scope["type"] == "websocket" and "websocket.http.response" not in (scope.get("extensions") or {}):
        await send({"type": "websocket.close", "code": 1008, "reason": err.message[:120]})
        return
    prefix = "websocket.http" if scope["type"] == "websocket" else "http"
    await send({"type": f"{prefix}.response.start", "status": err.code,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": f"{prefix}.response.body", "body": body})
