"""Who a request comes as: kube-apiserver's authentication and impersonation filters, for a server without credentials.

kubelab checks no credentials, so every request is authenticated as kube-apiserver's anonymous authenticator
reports it: user ``system:anonymous`` in group ``system:unauthenticated``. Impersonation headers then change the
user as kube-apiserver's ``WithImpersonation`` filter does (the allow-all authorizer lets anyone impersonate), so
``kubectl --as alice --as-group dev auth whoami`` answers ``alice`` in ``dev``:

* ``Impersonate-User`` names the user; ``system:serviceaccount:<ns>:<name>`` also brings the service account groups
  when no group is given;
* ``Impersonate-Group`` (repeated), ``Impersonate-Uid`` and ``Impersonate-Extra-<key>`` (lower-cased key, each value
  one entry) add to it; without ``Impersonate-User`` they are an error (500, as kube-apiserver answers);
* a user other than ``system:anonymous`` is also put in ``system:authenticated``, unless the groups already name
  ``system:authenticated`` or ``system:unauthenticated``.

A bearer token (``Authorization: Bearer …``) is offered to the ``TokenAuthenticator``s in order (the
service-account JWTs, ``apiserver.serviceaccount``); the first that knows it names the user, who is also put in
``system:authenticated``. A token that none accepts is a 401 ``Unauthorized``, as kube-apiserver answers (anonymous
is only for requests without credentials).

``AuthenticationMiddleware`` works the user out once per request and keeps it in a context variable, as
kube-apiserver keeps it in the request context; ``request_user()`` reads it wherever it is needed (the reviews).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from urllib.parse import unquote

import orjson

from apimachinery import errors

ANONYMOUS_USER = "system:anonymous"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
IMPERSONATE_USER = b"impersonate-user"
IMPERSONATE_GROUP = b"impersonate-group"
IMPERSONATE_UID = b"impersonate-uid"
IMPERSONATE_EXTRA = b"impersonate-extra-"


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


class TokenAuthenticator(Protocol):
    """kube's ``authenticator.Token``: the user a bearer token stands for, or None when it is not this
    authenticator's kind of token. A token of its kind that fails may raise an exception whose message says why
    (TokenReview's ``status.error``)."""

    async def authenticate_token(self, token: str) -> UserInfo | None: ...


def bearer_token(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The token of an ``Authorization: Bearer`` header (kube's ``bearertoken`` authenticator), or None."""
    for name, raw in headers:
        if name == b"authorization":
            scheme, _, token = raw.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def authenticated(user: UserInfo) -> UserInfo:
    """The user as the chain reports it: in ``system:authenticated`` (kube's group adder)."""
    if ALL_AUTHENTICATED in user.groups:
        return user
    return replace(user, groups=(*user.groups, ALL_AUTHENTICATED))


async def authenticate_token(authenticators: Sequence[TokenAuthenticator], token: str) -> UserInfo:
    """The first authenticator's answer; ``Unauthorized`` when none accepts the token."""
    for authenticator in authenticators:
        try:
            user = await authenticator.authenticate_token(token)
        except Exception:  # its kind of token, refused: the request is unauthorized
            raise errors.Unauthorized("Unauthorized") from None
        if user is not None:
            return authenticated(user)
    raise errors.Unauthorized("Unauthorized")


def user_from_headers(headers: list[tuple[bytes, bytes]], user: UserInfo = ANONYMOUS) -> UserInfo:
    """``user`` (the authenticated one, anonymous by default), or whom the impersonation headers name (raw ASGI
    headers, names lower-case)."""
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
        return user
    if not groups:
        groups = list(service_account_groups(username))
    if username != ANONYMOUS_USER and ALL_AUTHENTICATED not in groups and ALL_UNAUTHENTICATED not in groups:
        groups.append(ALL_AUTHENTICATED)
    return UserInfo(username, tuple(groups), uid, extra)


class AuthenticationMiddleware:
    """Pure ASGI middleware: sets the request's user for the handlers (a refused token is a 401 Status, a bad
    impersonation a 500)."""

    def __init__(self, app: Any, token_authenticators: Sequence[TokenAuthenticator] = ()) -> None:
        self.app = app
        self.token_authenticators = list(token_authenticators)

    async def authenticate(self, headers: list[tuple[bytes, bytes]]) -> UserInfo:
        token = bearer_token(headers) if self.token_authenticators else None
        user = ANONYMOUS if token is None else await authenticate_token(self.token_authenticators, token)
        return user_from_headers(headers, user)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            user = await self.authenticate(scope.get("headers") or [])
        except errors.StatusError as err:
            body = err.to_json()
            await send({"type": "http.response.start", "status": err.code,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        token = _user.set(user)
        try:
            await self.app(scope, receive, send)
        finally:
            _user.reset(token)
