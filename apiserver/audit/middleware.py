"""The audit filter: one ``audit.k8s.io/v1`` Event per request, handed to the backend at each stage.

It sits after authentication (the event's ``user`` is the authenticated one, ``impersonatedUser`` the one
impersonated) and before authorization, which leaves its decision in the scope for the
``authorization.k8s.io/decision`` and ``/reason`` annotations, as kube's ``WithAudit`` does. The policy is asked
with the authenticated user; a request at level None costs one policy evaluation.

Stages: ``RequestReceived`` before the request is handled; ``ResponseStarted`` when the headers of a long-running
request (watch, exec/attach/portforward/proxy, ``log?follow``) are sent; ``ResponseComplete`` when the response
is done (a watch: when its stream closes); ``Panic`` with a 500 when the handler raises. HTTP requests only:
a websocket upgrade (exec, attach, portforward over websockets) is not audited yet. Each event carries
``requestReceivedTimestamp`` and ``stageTimestamp`` in µs (MicroTime), and the response carries the
``Audit-Id`` header (a request may bring its own, as kube accepts).

By level: Metadata logs the request's metadata and ``responseStatus``; Request adds ``requestObject`` (the JSON
body as sent, a patch as is); RequestResponse adds ``responseObject``; ``omitManagedFields`` strips
``metadata.managedFields`` from both. ``objectRef`` is completed from the request object as kube does, except its
``resourceVersion``, ``uid`` and a create's ``name``, which come from the response: the revision the write stored
(kube takes the request object's, which for an update is only the precondition) — what ``kubelab trace`` matches
against etcd's history.
"""

from __future__ import annotations

import itertools
import os
import time
import uuid
from collections.abc import Mapping
from typing import Any

import orjson

from apimachinery.meta import micro_time

from ..authentication import REQUESTER, request_user
from ..authz.filter import AUTHZ_DECISION, request_attributes
from .backend import AuditBackend
from .policy import Level, Policy, Verdict

__all__ = ["AuditMiddleware", "new_audit_id"]

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
STREAMS = frozenset({"exec", "attach", "portforward", "proxy"})
MAX_CAPTURE = 3 * 1024 * 1024  # bodies larger than etcd's request limit are not decoded into the event


# Audit IDs are version-4 UUIDs as kube's: one drawn per process, whose last 48 (random) bits then count up from a
# random start, so each request costs a counter step, not os.urandom and a UUID object.
_ID_PREFIX = str(uuid.uuid4())[:24]
_ID_SEQUENCE = itertools.count(int.from_bytes(os.urandom(6), "big"))


def new_audit_id() -> str:
    """A fresh audit ID (``Audit-Id``), unique within this process and, by its random part, among processes."""
    return f"{_ID_PREFIX}{next(_ID_SEQUENCE) & 0xFFFF_FFFF_FFFF:012x}"


def _long_running(attrs: Mapping[str, Any], query: bytes) -> bool:
    if attrs.get("verb") == "watch" or attrs.get("subresource") in STREAMS:
        return True
    return attrs.get("subresource") == "log" and b"follow=true" in query


def _decode(body: bytes) -> Any:
    if not body or len(body) > MAX_CAPTURE:
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _without_managed_fields(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return obj
    out = dict(obj)
    if isinstance(out.get("metadata"), dict) and "managedFields" in out["metadata"]:
        out["metadata"] = {k: v for k, v in out["metadata"].items() if k != "managedFields"}
    if isinstance(out.get("items"), list):
        out["items"] = [_without_managed_fields(item) for item in out["items"]]
    return out


def _object_ref(attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    if "path" in attrs:
        return None
    ref = {"resource": attrs["resource"], "namespace": attrs.get("namespace"), "name": attrs.get("name"),
           "apiGroup": attrs.get("group"), "apiVersion": attrs.get("version"),
           "subresource": attrs.get("subresource")}
    return {k: v for k, v in ref.items() if v}


class _Request:
    """The event being built for one request, and what it needs from the response."""

    def __init__(self, scope: dict[str, Any], verdict: Verdict, attrs: Mapping[str, Any], backend: AuditBackend,
                 audit_id: str) -> None:
        self.scope, self.verdict, self.backend = scope, verdict, backend
        self.long_running = _long_running(attrs, scope.get("query_string") or b"")
        self.capture = not self.long_running and (verdict.level >= Level.REQUEST_RESPONSE
                                                  or attrs.get("verb") in WRITE_VERBS)
        self.request_body: list[bytes] = []
        self.response_body: list[bytes] = []
        self.status: int | None = None
        user = request_user()
        requester = scope.get(REQUESTER) or user
        query = (scope.get("query_string") or b"").decode("latin-1")
        headers = dict(scope.get("headers") or [])
        forwarded = [ip.strip() for ip in headers.get(b"x-forwarded-for", b"").decode("latin-1").split(",")
                     if ip.strip()]
        client = scope.get("client")
        self.event: dict[str, Any] = {
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": verdict.level.wire, "auditID": audit_id,
            "requestURI": scope.get("raw_path", scope["path"].encode()).decode("latin-1")
            + (f"?{query}" if query else ""),
            "verb": attrs["verb"], "user": requester.to_dict(),
            "sourceIPs": forwarded + ([client[0]] if client and client[0] not in forwarded else []),
            "userAgent": headers.get(b"user-agent", b"").decode("latin-1") or None,
        }
        if requester is not user:
            self.event["impersonatedUser"] = user.to_dict()
        if (ref := _object_ref(attrs)) is not None:
            self.event["objectRef"] = ref
        if self.event["userAgent"] is None:
            del self.event["userAgent"]
        self.event["requestReceivedTimestamp"] = micro_time(time.time_ns())

    def emit(self, stage: str) -> None:
        if stage in self.verdict.omit_stages:
            return
        event = dict(self.event, stage=stage, stageTimestamp=micro_time(time.time_ns()))
        if stage != "RequestReceived" and (decision := self.scope.get(AUTHZ_DECISION)) is not None:
            event["annotations"] = {"authorization.k8s.io/decision": decision[0],
                                    "authorization.k8s.io/reason": decision[1]}
        self.backend.process(event)

    def complete(self) -> None:
        """Fill in the response's part of the event (status, objects, the stored version)."""
        code = self.status or 500
        response = _decode(b"".join(self.response_body)) if self.response_body else None
        request = _decode(b"".join(self.request_body)) if self.request_body else None
        status: dict[str, Any] = {"metadata": {}, "code": code}
        if isinstance(response, dict) and response.get("kind") == "Status":
            status.update({k: response[k] for k in ("status", "message", "reason", "details") if response.get(k)})
        self.event["responseStatus"] = status
        ref = self.event.get("objectRef")
        if ref is not None:
            for obj, fields in ((request, ("namespace", "name", "uid")),
                                (response, ("name", "uid", "resourceVersion"))):
                meta = obj.get("metadata") if isinstance(obj, dict) and obj.get("kind") != "Status" else None
                if not isinstance(meta, dict):
                    continue
                for key in fields:
                    if meta.get(key) and (key == "resourceVersion" or not ref.get(key)):
                        ref[key] = meta[key]
        omit = self.verdict.omit_managed_fields
        if self.verdict.level >= Level.REQUEST and request is not None:
            self.event["requestObject"] = _without_managed_fields(request) if omit else request
        if self.verdict.level >= Level.REQUEST_RESPONSE and response is not None:
            self.event["responseObject"] = _without_managed_fields(response) if omit else response


class AuditMiddleware:
    """Pure ASGI: audits each HTTP request per ``policy`` into ``backend``; see the module docstring."""

    def __init__(self, app: Any, policy: Policy, backend: AuditBackend) -> None:
        self.app = app
        self.policy = policy
        self.backend = backend

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        attrs = request_attributes(scope)
        requester = scope.get(REQUESTER) or request_user()
        verdict = self.policy.evaluate(requester.username, requester.groups, attrs)
        if verdict.level == Level.NONE:
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"audit-id", b"").decode("latin-1")
        req = _Request(scope, verdict, attrs, self.backend, given or new_audit_id())
        req.emit("RequestReceived")
        keep_request = verdict.level >= Level.REQUEST or req.capture

        async def receive_audited() -> Any:
            message = await receive()
            if keep_request and message["type"] == "http.request":
                req.request_body.append(message.get("body", b""))
            return message

        async def send_audited(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                req.status = message["status"]
                req.capture = req.capture or req.status >= 400  # an error's Status is in responseStatus
                headers = [*message.get("headers", []), (b"audit-id", req.event["auditID"].encode())]
                message = dict(message, headers=headers)
                if req.long_running:
                    req.event["responseStatus"] = {"metadata": {}, "code": req.status}
                    req.emit("ResponseStarted")
            elif message["type"] == "http.response.body" and req.capture:
                req.response_body.append(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive_audited, send_audited)
        except Exception:
            req.status = 500
            req.complete()
            req.emit("Panic")
            raise
        except BaseException:  # cancelled (the client went away, shutdown): the response ends here
            req.complete()
            req.emit("ResponseComplete")
            raise
        req.complete()
        req.emit("ResponseComplete")
