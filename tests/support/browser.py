"""Headless Chromium driven over the Chrome DevTools protocol (its ``--remote-debugging-port`` websocket), for the
console tests: no selenium or playwright, only the ``websockets`` package.

``Browser`` starts Debian's ``chromium`` (``--no-sandbox`` as root) on a free port with a throwaway profile and
opens one page; ``goto`` navigates, ``evaluate`` runs JavaScript and returns its value, ``wait_js`` polls an
expression until it is truthy (pages update themselves over server-sent events: no reloads), ``screenshot`` saves
a PNG (``Page.captureScreenshot``). ``close`` kills the browser's process group.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import ClientConnection, connect

from kubelab.etcd import free_port


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    def __init__(self, profile: Path, width: int = 1400, height: int = 900) -> None:
        binary = chromium()
        assert binary is not None
        self.port = free_port()
        argv = [binary, "--headless=new", f"--remote-debugging-port={self.port}", f"--user-data-dir={profile}",
                "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                f"--window-size={width},{height}", "--remote-allow-origins=*", "about:blank"]
        if os.geteuid() == 0:
            argv.insert(1, "--no-sandbox")
        self.log = open(profile.parent / "chromium.log", "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self._ids = itertools.count(1)
        self.ws: ClientConnection | None = None
        self._stack = contextlib.ExitStack()
        try:
            self.ws = self._stack.enter_context(connect(self._page_socket(), max_size=64 << 20, open_timeout=20))
            self.call("Page.enable")
            self.call("Runtime.enable")
        except BaseException:
            self.close()
            raise

    def _page_socket(self) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                targets = httpx.get(f"http://127.0.0.1:{self.port}/json/list", timeout=2).json()
                pages = [t for t in targets if t.get("type") == "page"]
                if pages:
                    return str(pages[0]["webSocketDebuggerUrl"])
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.2)
        raise AssertionError("chromium did not open its DevTools port")

    def call(self, method: str, timeout: float = 30, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events arriving meanwhile are skipped)."""
        assert self.ws is not None
        ident = next(self._ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.01)))
            if message.get("id") == ident:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result") or {}
                return result

    def goto(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self.wait_js("document.readyState === 'complete'", what=f"{url} to load")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def wait_js(self, expression: str, timeout: float = 30, what: str = "") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what or expression}")

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self._stack.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.log.close()
