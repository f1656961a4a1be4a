"""The authorization filter (kube's ``endpoints/filters/authorization.go``) and the impersonation check.

Every request is turned into authorizer attributes as kube's ``RequestInfoFactory`` does — a resource request
(``/api/v1/…``, ``/apis/{group}/{version}/…``: verb from the method, ``list``/``watch``/``deletecollection`` when no
name is given, group, resource, subresource, namespace, name) or a non-resource one (the path, the lower-cased
method) — and asked of the authorizer. A refusal is kube's 403 Status::

    pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"

With ``AlwaysAllow`` first in the chain nothing is asked; members of ``system:masters`` pass before the attributes
are even built, so the admin's requests (and the components', on the plain port) cost one set look-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from apimachinery import errors

from ..authentication import UserInfo, request_user, send_status
from ..authorizer import AUTHORIZER, PRIVILEGED_GROUP
from ..handlers.request import parse_path

AUTHZ_DECISION = "kubelab.authz"  # scope key: ("allow" | "forbid", reason), for the audit log's annotations
METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "GET": "get", "HEAD": "get"}


def request_attributes(scope: Mapping[str, Any]) -> dict[str, Any]:
    """The authorizer attributes of one ASGI request (a websocket upgrade to exec/attach/portforward: ``create``)."""
    path: str = scope["path"]
    method = "POST" if scope["type"] == "websocket" else scope.get("method", "GET")
    parts = path.split("/", 5)
    info = None
    try:
        if len(parts) > 3 and parts[1] == "api" and parts[2] == "v1" and parts[3]:
            info = parse_path("", "v1", path[len("/api/v1/"):])
        elif len(parts) > 4 and parts[1] == "apis" and parts[4]:
            info = parse_path(parts[2], parts[3], path[len(f"/apis/{parts[2]}/{parts[3]}/"):])
    except errors.StatusError:
        info = None
    if info is None:
        return {"verb": method.lower(), "path": path}
    verb = METHOD_VERBS.get(method, method.lower())
    if info.watch_path:
        verb = "watch"
    elif verb == "get" and info.name is None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        verb = "watch" if (query.get("watch") or [""])[0] in ("true", "1") else "list"
    elif verb == "delete" and info.name is None:
        verb = "deletecollection"
    namespace = info.namespace or ""
    if info.group == "" and info.resource == "namespaces" and info.name:
        namespace = info.name
    return {"verb": verb, "group": info.group, "version": info.version, "resource": info.resource,
            "subresource": info.subresource, "namespace": namespace, "name": info.name or ""}


def forbidden_message(user: UserInfo, attrs: Mapping[str, Any]) -> str:
    """kube's ``forbiddenMessage``."""
    if "path" in attrs:
        return f'User "{user.username}" cannot {attrs["verb"]} path "{attrs["path"]}"'
    resource = attrs["resource"] + (f"/{attrs['subresource']}" if attrs.get("subresource") else "")
    where = f'in the namespace "{attrs["namespace"]}"' if attrs.get("namespace") else "at the cluster scope"
    return (f'User "{user.username}" cannot {attrs["verb"]} resource "{resource}" in API group '
            f'"{attrs.get("group") or ""}" {where}')


def forbidden(user: UserInfo, attrs: Mapping[str, Any], reason: str) -> errors.Forbidden:
    """``responsewriters.Forbidden``: the message, the authorizer's reason after a colon, and the resource."""
    message = forbidden_message(user, attrs) + (f": {reason}" if reason else "")
    if "path" in attrs:
        return errors.Forbidden(f"forbidden: {message}")
    group, resource, name = attrs.get("group") or "", attrs["resource"], attrs.get("name") or ""
    qualified = f"{resource}.{group}" if group else resource
    text = f'{qualified} "{name}" is forbidden: {message}' if name else f"{qualified} is forbidden: {message}"
    return errors.Forbidden(text, name=name, group=group, kind=resource)


def check(user: UserInfo, attrs: Mapping[str, Any]) -> None:
    """Raise kube's 403 unless the authorizer allows ``user`` the request ``attrs``."""
    decision = AUTHORIZER.authorize(user, attrs)
    if not decision.allowed:
        raise forbidden(user, attrs, decision.reason)


class AuthorizationMiddleware:
    """Pure ASGI: authorizes each HTTP request and websocket upgrade as the request's user (``request_user``)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            scope[AUTHZ_DECISION] = ("allow", "")
        if scope["type"] in ("http", "websocket") and not AUTHORIZER.allows_all:
            user = request_user()
            if PRIVILEGED_GROUP not in user.groups:
                decision_attrs = request_attributes(scope)
                decision = AUTHORIZER.authorize(user, decision_attrs)
                scope[AUTHZ_DECISION] = ("allow" if decision.allowed else "forbid", decision.reason)
                if not decision.allowed:
                    await send_status(scope, send, forbidden(user, decision_attrs, decision.reason))
                    return
        await self.app(scope, receive, send)
