"""Kubernetes ``Status`` errors: one exception tree mirroring the API's status reasons.

Every layer raises these; the apiserver turns them into ``Status`` bodies and the REST client turns ``Status``
bodies back into them, so a caller catches ``NotFound`` whether it talks to storage or over HTTP::

    StatusError (code, reason, message, details)
      BadRequest 400 · Unauthorized 401 · Forbidden 403 · NotFound 404 · MethodNotAllowed 405
      NotAcceptable 406 · AlreadyExists 409 · Conflict 409 · Gone 410 (reason Expired) · RequestEntityTooLarge 413
      UnsupportedMediaType 415 · Invalid 422 · TooManyRequests 429 · InternalError 500 · ServiceUnavailable 503
      Timeout 504
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

# Go's encoding/json escapes these inside strings (HTML safety, JavaScript line separators); clients that compare
# error text byte for byte see them so. Outside strings none of them can occur in JSON, so a plain replace is exact.
_GO_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
               ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def encode_status(status: dict[str, Any], *, newline: bool = True) -> bytes:
    """A ``Status`` (or any body) byte for byte as kube-apiserver's JSON serializer writes it: compact, fields in
    the order given, ``<``, ``>``, ``&`` escaped as Go does, and the encoder's trailing newline (not inside a watch
    event, whose line ends on its own)."""
    raw = orjson.dumps(status)
    for char, escaped in _GO_ESCAPES:
        raw = raw.replace(char, escaped)
    return raw + b"\n" if newline else raw


@dataclass(frozen=True, slots=True)
class Cause:
    """One ``details.causes`` entry: which field is wrong and why (``FieldValueRequired`` …)."""

    type: str
    message: str
    field: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"reason": self.type, "message": self.message} if self.type else {"message": self.message}
        if self.field:
            out["field"] = self.field
        return out


class StatusError(Exception):
    """A failure that is reported to clients as a ``metav1.Status`` with ``status: Failure``."""

    code: ClassVar[int] = 500
    reason: ClassVar[str] = "InternalError"
    # Whether the Status carries ``details`` even when empty: every 404 kube-apiserver sends does (``{}`` for a path
    # it does not serve, ``{name, kind}`` for a missing object), and clients tell the two apart by it (kubectl
    # debug reads ``details.name`` to say "ephemeral containers are disabled for this cluster").
    always_details: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        name: str = "",
        group: str = "",
        kind: str = "",
        causes: list[Cause] | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.group = group
        self.kind = kind
        self.causes = causes or []
        self.retry_after = retry_after

    def details(self) -> dict[str, Any] | None:
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.to_dict() for c in self.causes]
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        return details or None

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if not self.reason:  # omitempty: a webhook's refusal may carry none ("Error from server: …")
            del status["reason"]
        details = self.details()
        if details or self.always_details:
            status["details"] = details or {}
        status["code"] = self.code  # last, in metav1.Status's field order
        return status

    def to_json(self) -> bytes:
        """The ``Status`` body as kube-apiserver's encoder writes it (see ``encode_status``)."""
        return encode_status(self.to_status())

    @staticmethod
    def from_status(status: dict[str, Any], http_code: int | None = None) -> StatusError:
        """Rebuild the matching exception from a ``Status`` body (the REST client's half of the boundary)."""
        code = int(status.get("code") or http_code or 500)
        reason = status.get("reason") or ""
        cls = _BY_REASON.get(reason) or _BY_CODE.get(code, StatusError)
        details = status.get("details") or {}
        causes = [
            Cause(c.get("reason", ""), c.get("message", ""), c.get("field", "")) for c in details.get("causes") or []
        ]
        err = cls(
            status.get("message", ""),
            name=details.get("name", ""),
            group=details.get("group", ""),
            kind=details.get("kind", ""),
            causes=causes,
            retry_after=details.get("retryAfterSeconds"),
        )
        if cls is StatusError:
            err.code = code  # type: ignore[misc]
            err.reason = reason or "Unknown"  # type: ignore[misc]
        return err


class BadRequest(StatusError):
    code = 400
    reason = "BadRequest"


class Unauthorized(StatusError):
    code = 401
    reason = "Unauthorized"


class Forbidden(StatusError):
    code = 403
    reason = "Forbidden"


class NotFound(StatusError):
    code = 404
    reason = "NotFound"
    always_details = True


class MethodNotAllowed(StatusError):
    code = 405
    reason = "MethodNotAllowed"


class NotAcceptable(StatusError):
    code = 406
    reason = "NotAcceptable"


class AlreadyExists(StatusError):
    code = 409
    reason = "AlreadyExists"


class Conflict(StatusError):
    code = 409
    reason = "Conflict"


class Gone(StatusError):
    """A resourceVersion older than what storage or the watch cache still holds (reason ``Expired``)."""

    code = 410
    reason = "Expired"


class RequestEntityTooLarge(StatusError):
    code = 413
    reason = "RequestEntityTooLarge"


class UnsupportedMediaType(StatusError):
    code = 415
    reason = "UnsupportedMediaType"


class Invalid(StatusError):
    code = 422
    reason = "Invalid"


class TooManyRequests(StatusError):
    code = 429
    reason = "TooManyRequests"


class InternalError(StatusError):
    code = 500
    reason = "InternalError"


class ServiceUnavailable(StatusError):
    code = 503
    reason = "ServiceUnavailable"


class Timeout(StatusError):
    code = 504
    reason = "Timeout"


_ALL = [
    BadRequest, Unauthorized, Forbidden, NotFound, MethodNotAllowed, NotAcceptable, AlreadyExists, Conflict, Gone,
    RequestEntityTooLarge, UnsupportedMediaType, Invalid, TooManyRequests, InternalError, ServiceUnavailable, Timeout,
]
_BY_REASON: dict[str, type[StatusError]] = {c.reason: c for c in _ALL}
_BY_REASON["Gone"] = Gone
_BY_CODE: dict[int, type[StatusError]] = {}
for _cls in _ALL:
    _BY_CODE.setdefault(_cls.code, _cls)


def not_found(resource: str, name: str, group: str = "") -> NotFound:
    """``pods "x" not found`` — the message kubectl prints after ``Error from server (NotFound):``."""
    qualified = f"{resource}.{group}" if group else resource
    return NotFound(f'{qualified} "{name}" not found', name=name, group=group, kind=resource)


def forbidden(resource: str, name: str, reason: str, group: str = "",
              causes: list[Cause] | None = None) -> Forbidden:
    """``namespaces "default" is forbidden: this namespace may not be deleted`` — an admission refusal."""
    qualified = f"{resource}.{group}" if group else resource
    return Forbidden(f'{qualified} "{name}" is forbidden: {reason}', name=name, group=group, kind=resource,
                     causes=causes)


def already_exists(resource: str, name: str, group: str = "") -> AlreadyExists:
    qualified = f"{resource}.{group}" if group else resource
    return AlreadyExists(f'{qualified} "{name}" already exists', name=name, group=group, kind=resource)


def conflict(resource: str, name: str, group: str = "", why: str = "") -> Conflict:
    qualified = f"{resource}.{group}" if group else resource
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return Conflict(f'Operation cannot be fulfilled on {qualified} "{name}": {why}', name=name, group=group,
                    kind=resource)


def invalid(kind: str, name: str, causes: list[Cause], group: str = "") -> Invalid:
    """``Pod "x" is invalid: spec.containers[0].name: Required value`` with one cause per field error."""
    qualified = f"{kind}.{group}" if group else kind
    summary = ", ".join(f"{c.field}: {c.message}" if c.field else c.message for c in causes)
    if len(causes) > 1:
        summary = "[" + summary + "]"
    return Invalid(f'{qualified} "{name}" is invalid: {summary}', name=name, group=group, kind=kind, causes=causes)
