"""apiserver.handlers.warnings: Warning headers as k8s.io/apimachinery's NewWarningHeader writes them."""

from __future__ import annotations

import asyncio
from typing import Any

from apiserver.handlers.warnings import WarningMiddleware, add_warning, warning_header, warning_headers


def test_quotes_and_backslashes_are_escaped() -> None:
    assert warning_header('unknown field "spec.a\\b"') == b'299 - "unknown field \\"spec.a\\\\b\\""'
    assert warning_header("café ✓") == '299 - "café ✓"'.encode()


def test_control_characters_or_invalid_utf8_are_not_sent() -> None:
    for text in ("a\nb", "tab\there", "nul\x00", "del\x7f", "c1\x85", "surrogate\ud800"):
        assert warning_header(text) is None
    assert warning_headers(["ok", "bad\r\nInjected: header", "fine"]) == [b'299 - "ok"', b'299 - "fine"']


def test_many_warnings_are_truncated_as_kube_does() -> None:
    """Over 4096 runes in all, each is cut to 256 runes, and they stop once 4096 are written."""
    texts = [f"{i:02}:" + "x" * 1000 for i in range(20)]
    headers = warning_headers(texts)
    assert len(headers) == 16  # 16 * 256 = 4096
    assert all(len(h) == len(b'299 - ""') + 256 for h in headers)
    assert headers[15].startswith(b'299 - "15:xx')
    under = ["y" * 400] * 10
    assert warning_headers(under) == [f'299 - "{t}"'.encode() for t in under]


def test_the_response_goes_out_whatever_the_warnings() -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        add_warning("line\nbreak")
        add_warning('say "hi"')
        await send({"type": "http.response.start", "status": 201, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(WarningMiddleware(app)({"type": "http"}, None, send))
    assert sent[0]["status"] == 201
    assert sent[0]["headers"] == [(b"content-type", b"application/json"), (b"warning", b'299 - "say \\"hi\\""')]
    assert sent[1]["body"] == b"{}"
