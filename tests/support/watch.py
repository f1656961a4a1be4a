"""Reading a watch stream from a real HTTP connection (httpx's ASGI transport would buffer it)."""

from __future__ import annotations

import json
import queue
import threading
from typing import Any

import httpx


class WatchReader:
    """Streams ``WatchEvent``s from a background thread so a test can wait for them with a timeout."""

    def __init__(self, base_url: str, path: str, params: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.status_code: int | None = None
        self._client = httpx.Client(base_url=base_url, timeout=httpx.Timeout(60, read=None))
        self._params = {"watch": "true", **(params or {})}
        self._path = path
        self._headers = headers or {}
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise TimeoutError("watch did not start")

    def _run(self) -> None:
        try:
            with self._client.stream("GET", self._path, params=self._params, headers=self._headers) as resp:
                self.status_code = resp.status_code
                self._ready.set()
                for line in resp.iter_lines():
                    if line.strip():
                        self.events.put(json.loads(line))
        except (httpx.HTTPError, RuntimeError):
            pass
        finally:
            self._ready.set()
            self.events.put(None)

    def next(self, timeout: float = 10.0) -> dict[str, Any] | None:
        """The next event; None when the stream ended. Raises queue.Empty on timeout."""
        return self.events.get(timeout=timeout)

    def take(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        out = []
        for _ in range(n):
            event = self.next(timeout)
            assert event is not None, f"stream ended after {out}"
            out.append(event)
        return out

    def close(self) -> None:
        self._client.close()
