"""Who may use the kubelet's API, as kube's kubelet decides (``pkg/kubelet/server/auth.go`` and the delegating
authenticator/authorizer of ``k8s.io/apiserver``).

Authentication, in kube's order: a client certificate verified against ``--client-ca-file`` (CN the user, O the
groups), then a bearer token checked with a TokenReview against the apiserver (``--authentication-token-webhook``;
answers cached for ``--authentication-token-webhook-cache-ttl``, refusals for ``FAILURE_TTL``), then — with
``--anonymous-auth`` — ``system:anonymous`` in ``system:unauthenticated``. Anything else is ``401 Unauthorized``.
An authenticated user also gets ``system:authenticated``.

Authorization (``--authorization-mode``): ``AlwaysAllow``, or ``Webhook`` — a SubjectAccessReview per request for
the node as a resource: the verb from the HTTP method, ``nodes``, the node's name, and the subresource from the
path (``SUBRESOURCES``; everything else, exec/attach/portForward/containerLogs/pods/healthz included, is
``proxy``). A path may map to several subresources, asked in turn until one is allowed, as kube's does for its
read-only pages (``KubeletFineGrainedAuthz``: ``/configz`` is ``configz``, then ``proxy``): this kubelet's
``/debug/informers`` (kubelab's: kube has no such page) is ``informers``, then ``proxy``, so a reader of the
informer counters (the console) needs no ``nodes/proxy``, which would let it exec into every container. Allowed
answers are cached for ``--authorization-webhook-cache-authorized-ttl``, denials for
``--authorization-webhook-cache-unauthorized-ttl``. A denial is ``403`` with kube's text, e.g.
``Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[proxy])``.

The reviews go to the apiserver with the kubelet's own credentials (its kubeconfig): kube's Node authorizer lets
``system:node:<name>`` create TokenReviews and SubjectAccessReviews.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from kubeclient import Clientset
from kubeclient.resources import Resource

log = logging.getLogger(__name__)

TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False)
SUBJECT_ACCESS_REVIEWS = Resource("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview",
                                  False)
ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"
FAILURE_TTL = 10.0  # seconds a refused token stays refused (the delegating authenticator's failure TTL)
VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
# kubelet's auth.go: a path and the paths below it -> the subresources of nodes it is authorized as (the first
# allowed one lets it through); any other path is "proxy".
SUBRESOURCES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("/stats", ("stats",)), ("/metrics", ("metrics",)), ("/logs", ("log",)), ("/spec", ("spec",)),
    ("/checkpoint", ("checkpoint",)), ("/debug/informers", ("informers", "proxy")))


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict, hash=False, compare=False)


def request_attributes(method: str, path: str) -> tuple[str, tuple[str, ...]]:
    """The verb and the subresources of ``nodes`` (in the order asked) kube's kubelet authorizes a request as."""
    verb = VERBS.get(method.upper(), method.lower())
    for prefix, subresources in SUBRESOURCES:
        if path == prefix or (path.startswith(prefix) and path[len(prefix)] == "/"):  # kube's isSubpath
            return verb, subresources
    return verb, ("proxy",)


class _TTLCache:
    """Answers kept for a time (per entry), so a burst of requests costs one review."""

    def __init__(self) -> None:
        self._entries: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any) -> tuple[bool, Any]:
        entry = self._entries.get(key)
        if entry is None or entry[0] < time.monotonic():
            self._entries.pop(key, None)
            return False, None
        return True, entry[1]

    def put(self, key: Any, value: Any, ttl: float) -> None:
        if ttl > 0:
            if len(self._entries) > 4096:
                self._entries.clear()
            self._entries[key] = (time.monotonic() + ttl, value)


class Authenticator:
    """x509, then webhook bearer tokens, then anonymous (each as configured)."""

    def __init__(self, client: Clientset | None, *, anonymous: bool = True, x509: bool = False,
                 webhook: bool = False, cache_ttl: float = 120.0) -> None:
        self.client, self.anonymous, self.x509, self.webhook, self.cache_ttl = (client, anonymous, x509, webhook,
                                                                                cache_ttl)
        self._tokens = _TTLCache()

    async def authenticate(self, request: web.Request) -> User | None:
        if self.x509:
            user = _certificate_user(request)
            if user is not None:
                return user
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if self.webhook and scheme.lower() == "bearer" and token.strip():
            user = await self._review_token(token.strip())
            if user is not None:
                return user
        if self.anonymous and not (self.webhook and token.strip()):  # a token that failed its review is a 401
            return User(ANONYMOUS, (UNAUTHENTICATED,))
        return None

    async def _review_token(self, token: str) -> User | None:
        key = hashlib.sha256(token.encode()).digest()
        hit, cached = self._tokens.get(key)
        if hit:
            return cached  # type: ignore[no-any-return]
        assert self.client is not None
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            status = (await self.client.resource(TOKEN_REVIEWS).create(review)).get("status") or {}
        except Exception as err:  # the apiserver unreachable or refusing: not authenticated, not cached
            log.warning("TokenReview failed: %s", err)
            return None
        user = None
        if status.get("authenticated"):
            info = status.get("user") or {}
            user = User(info.get("username", ""), _with_authenticated(info.get("groups") or []),
                        info.get("uid", ""), info.get("extra") or {})
        self._tokens.put(key, user, self.cache_ttl if user is not None else FAILURE_TTL)
        return user


def _with_authenticated(groups: list[str]) -> tuple[str, ...]:
    return (*groups, AUTHENTICATED) if AUTHENTICATED not in groups else tuple(groups)


def _certificate_user(request: web.Request) -> User | None:
    """The verified client certificate's CN and O (the TLS layer verified it against ``--client-ca-file``)."""
    transport = request.transport
    cert = transport.get_extra_info("peercert") if transport is not None else None
    if not cert:
        return None
    names: dict[str, list[str]] = {}
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            names.setdefault(key, []).append(value)
    common = names.get("commonName") or [""]
    if not common[0]:
        return None
    return User(common[0], _with_authenticated(names.get("organizationName", [])))


class Authorizer:
    """``AlwaysAllow``, or ``Webhook``: a cached SubjectAccessReview on ``nodes/<subresource>`` of this node."""

    def __init__(self, mode: str, client: Clientset | None, node_name: str, *, allowed_ttl: float = 300.0,
                 denied_ttl: float = 30.0) -> None:
        self.mode, self.client, self.node_name = mode, client, node_name
        self.allowed_ttl, self.denied_ttl = allowed_ttl, denied_ttl
        self._answers = _TTLCache()

    async def allowed(self, user: User, verb: str, subresource: str) -> bool:
        """Whether ``user`` may; raises when the review cannot be had (a 500, as kube's kubelet answers)."""
        if self.mode == "AlwaysAllow":
            return True
        key = (user.name, user.groups, user.uid, verb, subresource)
        hit, cached = self._answers.get(key)
        if hit:
            return bool(cached)
        assert self.client is not None
        attributes = {"verb": verb, "group": "", "version": "v1", "resource": "nodes", "subresource": subresource,
                      "name": self.node_name}
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups), "resourceAttributes": attributes}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = user.extra
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        status = (await self.client.resource(SUBJECT_ACCESS_REVIEWS).create(review)).get("status") or {}
        allowed = bool(status.get("allowed")) and not status.get("denied")
        self._answers.put(key, allowed, self.allowed_ttl if allowed else self.denied_ttl)
        return allowed

    async def allowed_any(self, user: User, verb: str, subresources: tuple[str, ...]) -> bool:
        """Whether one of ``subresources`` is allowed, asked in turn (kube's kubelet stops at the first allowed)."""
        for subresource in subresources:
            if await self.allowed(user, verb, subresource):
                return True
        return False


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def middleware(authenticator: Authenticator, authorizer: Authorizer) -> Any:
    """The kubelet's auth filter: 401 for who cannot be authenticated, 403 (kube's text) for who may not."""

    @web.middleware
    async def auth_filter(request: web.Request, handler: Handler) -> web.StreamResponse:
        user = await authenticator.authenticate(request)
        if user is None:
            return web.Response(status=401, text="Unauthorized\n")
        verb, subresources = request_attributes(request.method, request.path)
        asked = " ".join(subresources)  # as Go prints the slice: [informers proxy]
        try:
            allowed = await authorizer.allowed_any(user, verb, subresources)
        except Exception as err:
            log.warning("SubjectAccessReview failed for %s: %s", user.name, err)
            return web.Response(status=500, text=f"Authorization error (user={user.name}, verb={verb}, "
                                                 f"resource=nodes, subresource(s)=[{asked}])\n")
        if allowed:
            return await handler(request)
        log.info("Forbidden: user=%s verb=%s nodes/{%s} %s", user.name, verb, ",".join(subresources), request.path)
        return web.Response(status=403, text=f"Forbidden (user={user.name}, verb={verb}, resource=nodes, "
                                             f"subresource(s)=[{asked}])\n")

    return auth_filter
