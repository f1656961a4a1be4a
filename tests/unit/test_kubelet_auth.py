"""The kubelet's auth filter without a server: kube's request attributes, and the reviews it asks for and caches."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubelet.auth import Authenticator, Authorizer, User, request_attributes


@pytest.mark.parametrize(("method", "path", "expected"), [
    ("GET", "/containerLogs/default/web/web", ("get", ("proxy",))),
    ("POST", "/exec/default/web/web", ("create", ("proxy",))),
    ("GET", "/healthz", ("get", ("proxy",))),
    ("GET", "/pods", ("get", ("proxy",))),
    ("GET", "/metrics/resource", ("get", ("metrics",))),
    ("GET", "/metrics", ("get", ("metrics",))),
    ("GET", "/stats/summary", ("get", ("stats",))),
    ("GET", "/statsfoo", ("get", ("proxy",))),  # a path below /stats, not one that starts alike (kube's isSubpath)
    ("GET", "/logs/syslog", ("get", ("log",))),
    ("GET", "/spec/", ("get", ("spec",))),
    ("POST", "/checkpoint/default/web/web", ("create", ("checkpoint",))),
    ("GET", "/debug/informers", ("get", ("informers", "proxy"))),  # a narrow right first, as kube's read-only pages
    ("GET", "/debug/pprof/profile", ("get", ("proxy",))),  # kube's other /debug pages stay under proxy
    ("PUT", "/x", ("update", ("proxy",))), ("PATCH", "/x", ("patch", ("proxy",))),
    ("DELETE", "/x", ("delete", ("proxy",))),
])
def test_request_attributes_as_kube_s_kubelet(method: str, path: str, expected: tuple[str, tuple[str, ...]]) -> None:
    assert request_attributes(method, path) == expected


class _Reviews:
    """A stand-in clientset answering TokenReviews and SubjectAccessReviews, counting them."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer, self.asked = answer, []

    def resource(self, resource: Any) -> _Reviews:
        return self

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(obj)
        return {**obj, "status": self.answer}


class _Request:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers, self.transport = headers, None


def test_a_reviewed_token_is_cached_and_gets_system_authenticated() -> None:
    reviews = _Reviews({"authenticated": True, "user": {"username": "alice", "groups": ["dev"]}})
    authn = Authenticator(reviews, anonymous=False, webhook=True)  # type: ignore[arg-type]
    request: Any = _Request({"Authorization": "Bearer t0ken"})
    for _ in range(3):
        assert asyncio.run(authn.authenticate(request)) == User("alice", ("dev", "system:authenticated"))
    assert [r["spec"] for r in reviews.asked] == [{"token": "t0ken"}]


def test_anonymous_only_without_a_token_the_webhook_refused() -> None:
    reviews = _Reviews({"authenticated": False})
    authn = Authenticator(reviews, anonymous=True, webhook=True)  # type: ignore[arg-type]
    assert asyncio.run(authn.authenticate(_Request({"Authorization": "Bearer bad"}))) is None  # type: ignore[arg-type]
    assert asyncio.run(authn.authenticate(_Request({}))) == User("system:anonymous",  # type: ignore[arg-type]
                                                                  ("system:unauthenticated",))
    closed = Authenticator(None, anonymous=False)
    assert asyncio.run(closed.authenticate(_Request({}))) is None  # type: ignore[arg-type]


def test_the_access_review_names_the_node_and_is_cached() -> None:
    reviews = _Reviews({"allowed": False})
    authz = Authorizer("Webhook", reviews, "node01")  # type: ignore[arg-type]
    user = User("bob", ("system:authenticated",))
    assert not asyncio.run(authz.allowed(user, "get", "proxy"))
    assert not asyncio.run(authz.allowed(user, "get", "proxy"))
    assert reviews.asked == [{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": "bob", "groups": ["system:authenticated"],
        "resourceAttributes": {"verb": "get", "group": "", "version": "v1", "resource": "nodes",
                               "subresource": "proxy", "name": "node01"}}}]
    assert asyncio.run(Authorizer("AlwaysAllow", None, "node01").allowed(user, "create", "proxy"))


class _AllowsOnly(_Reviews):
    """SubjectAccessReviews allowed for one subresource of nodes only."""

    def __init__(self, subresource: str) -> None:
        super().__init__({})
        self.subresource = subresource

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(obj)
        return {**obj, "status": {"allowed": obj["spec"]["resourceAttributes"]["subresource"] == self.subresource}}


@pytest.mark.parametrize(("rights", "allowed", "asked"), [
    ("informers", True, ["informers"]),  # the narrow right: proxy is not asked
    ("proxy", True, ["informers", "proxy"]),  # nodes/proxy (system:kubelet-api-admin) still passes
    ("log", False, ["informers", "proxy"]),
])
def test_several_subresources_are_asked_in_turn_until_one_is_allowed(rights: str, allowed: bool,
                                                                      asked: list[str]) -> None:
    reviews = _AllowsOnly(rights)
    authz = Authorizer("Webhook", reviews, "node01")  # type: ignore[arg-type]
    user = User("kubelab:console", ("system:authenticated",))
    assert asyncio.run(authz.allowed_any(user, "get", ("informers", "proxy"))) is allowed
    assert [r["spec"]["resourceAttributes"]["subresource"] for r in reviews.asked] == asked
