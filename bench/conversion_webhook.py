"""A conversion webhook for bench/crd.py, served in a process of its own (so it does not share the load generator's
event loop): HTTPS with a throwaway CA (tests/support/webhook.py's), aiohttp, renaming ``spec.replicas`` (v1) to
``spec.count`` (v2) and back. Prints ``<port> <caBundle>`` on its first line, then serves until killed.

    python bench/conversion_webhook.py
"""

from __future__ import annotations

import asyncio
import copy
import ssl
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support.webhook import CertificateAuthority  # noqa: E402

RENAMED = {"v1": ("count", "replicas"), "v2": ("replicas", "count")}  # desired version: (from, to)


def convert(obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    old, new = RENAMED[api_version.rsplit("/", 1)[1]]
    spec = out.get("spec") or {}
    if old in spec:
        spec[new] = spec.pop(old)
    out["apiVersion"] = api_version
    return out


async def review(request: web.Request) -> web.Response:
    body = orjson.loads(await request.read())
    req = body["request"]
    converted = [convert(o, req["desiredAPIVersion"]) for o in req["objects"]]
    answer = {"apiVersion": body["apiVersion"], "kind": "ConversionReview",
              "response": {"uid": req["uid"], "convertedObjects": converted, "result": {"status": "Success"}}}
    return web.Response(body=orjson.dumps(answer), content_type="application/json")


def main() -> None:
    ca = CertificateAuthority()
    cert, key = ca.issue(["localhost"], ["127.0.0.1"])
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "tls.crt").write_bytes(cert)
        (Path(tmp) / "tls.key").write_bytes(key)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(Path(tmp) / "tls.crt", Path(tmp) / "tls.key")
    app = web.Application()
    app.router.add_post("/convert", review)
    runner = web.AppRunner(app, access_log=None)

    async def serve() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(port, ca.bundle, flush=True)
        while True:
            await asyncio.sleep(3600)

    asyncio.run(serve())


if __name__ == "__main__":
    from stopping import stop_on_termination

    stop_on_termination()
    main()
