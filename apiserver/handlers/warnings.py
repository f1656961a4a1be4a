"""``Warning`` response headers (kube-apiserver's ``warning.AddWarning``): any layer may add one per request.

Each becomes ``299 - "text"`` as k8s.io/apimachinery's ``NewWarningHeader`` writes it: quotes and backslashes
escaped, and a text with a control character (or that is not valid UTF-8) is not sent at all — a header value
may not carry one, and a server that wrote it anyway would lose the whole response. As kube's recorder does, the
warnings of one response are capped at 4096 runes, past which each is cut to 256. Building the headers never
fails the response: a warning that cannot be sent is dropped with a log line.
"""

from __future__ import annotations

import logging
import unicodedata
from contextvars import ContextVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

_warnings: ContextVar[list[str] | None] = ContextVar("warnings", default=None)

TRUNCATE_AT_TOTAL_RUNES = 4 * 1024
TRUNCATE_ITEM_RUNES = 256


def add_warning(message: str) -> None:
    """Attach ``Warning: 299 - "message"`` to the current response (ignored outside a request). A message no
    header can carry — control characters, or not valid UTF-8 (a lone surrogate from a ``\\ud800`` escape) — is
    dropped, as kube-apiserver's recorder drops a warning ``NewWarningHeader`` refuses."""
    collected = _warnings.get()
    if collected is not None and message and message not in collected:
        collected.append(message)


def warning_header(text: str) -> bytes | None:
    """``NewWarningHeader(299, "-", text)``: None when the text cannot be a header (control characters, invalid
    UTF-8: Go's ``unicode.IsControl`` is the Cc category)."""
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text):
        return None
    quoted = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{quoted}"'.encode()


def warning_headers(texts: list[str]) -> list[bytes]:
    """The headers of one response's warnings, truncated as kube's recorder truncates them."""
    sendable = [t for t in texts if warning_header(t) is not None]
    for text in texts:
        if text not in sendable:
            log.warning("dropped a Warning header that cannot be sent (control characters): %r", text)
    if sum(len(t) for t in sendable) > TRUNCATE_AT_TOTAL_RUNES:
        sendable = [t[:TRUNCATE_ITEM_RUNES] for t in sendable]
        kept: list[str] = []
        total = 0
        for text in sendable:  # the one that crosses the limit is still sent, as kube's recorder does
            if total >= TRUNCATE_AT_TOTAL_RUNES:
                break
            kept.append(text)
            total += len(text)
        sendable = kept
    return [h for h in (warning_header(t) for t in sendable) if h is not None]


class WarningMiddleware:
    """Pure ASGI middleware: collects warnings while the handler runs, emits them with the response headers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        collected: list[str] = []
        token = _warnings.set(collected)

        async def send_with_warnings(message: Message) -> None:
            if message["type"] == "http.response.start" and collected:
                try:
                    extra = [(b"warning", h) for h in warning_headers(collected)]
                except Exception:  # never lose the response over a warning
                    log.exception("dropped the Warning headers of a response")
                    extra = []
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_warnings)
        finally:
            _warnings.reset(token)
