"""``Warning`` response headers (kube-apiserver's ``warning.AddWarning``): any layer may add one per request."""

from __future__ import annotations

import unicodedata
from contextvars import ContextVar
from typing import Any

_warnings: ContextVar[list[str] | None] = ContextVar("warnings", default=None)

Scope = dict[str, Any]


def add_warning(message: str) -> None:
    """Attach ``Warning: 299 - "message"`` to the current response (ignored outside a request). A message no
    header can carry — control characters, or not valid UTF-8 (a lone surrogate from a ``\\ud800`` escape) — is
    dropped, as kube-apiserver's recorder drops a warning ``NewWarningHeader`` refuses."""
    collected = _warnings.get()
    if collected is not None and message not in collected and _header_safe(message):
        collected.append(message)


def _header_safe(text: str) -> bool:
    if any(unicodedata.category(ch) == "Cc" for ch in text):
        return False
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


class WarningMiddleware:
    """Pure ASGI middleware: collects warnings while the handler runs, emits them with the response headers."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        collected: list[str] = []
        token = _warnings.set(collected)

        async def send_with_warnings(message: Scope) -> None:
            if message["type"] == "http.response.start" and collected:
                escaped = [m.replace("\\", "\\\\").replace('"', '\\"') for m in collected]
                headers = list(message.get("headers", []))
                headers.extend((b"warning", f'299 - "{m}"'.encode()) for m in escaped)
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_warnings)
        finally:
            _warnings.reset(token)
