"""The console reads a kubelet's ``/debug/informers`` over HTTPS as itself: it presents its client certificate (the
kubelet authorizes that identity as ``nodes/informers``), without verifying the kubelet's serving certificate."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

from aiohttp import web

from console.sources import Sources
from kubeclient.config import Config
from kubelab.etcd import free_port
from kubelab.pki import CertificateAuthority


async def _read(tmp_path: Path, tls: ssl.SSLContext | None) -> dict[str, Any]:
    ca = CertificateAuthority.load_or_create(tmp_path / "ca", "kubelab-ca")
    serving = ca.issue(tmp_path / "kubelet", "node01", sans=["127.0.0.1"], server=True)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(ca.pair.cert))
    server_tls.verify_mode = ssl.CERT_REQUIRED  # as a kubelet with --client-ca-file and no anonymous requests
    server_tls.load_cert_chain(str(serving.cert), str(serving.key))

    async def informers(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        user = dict(rdn[0] for rdn in (peer or {}).get("subject", ()))["commonName"]
        return web.json_response({"kind": "InformerList", "items": [{"resource": "pods", "user": user}]})

    app = web.Application()
    app.router.add_get("/debug/informers", informers)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=server_tls).start()
    sources = Sources(None, list, tls=tls)  # type: ignore[arg-type]
    try:
        return await sources._informers_of("kubelet node01", f"127.0.0.1:{port}")
    finally:
        await sources.close()
        await runner.cleanup()


def test_the_console_presents_its_client_certificate_to_a_kubelet(tmp_path: Path) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path / "ca", "kubelab-ca")
    console = ca.issue(tmp_path / "console", "kubelab:console", client=True)
    config = Config("https://127.0.0.1:6443", cert_file=str(console.cert), key_file=str(console.key))
    read = asyncio.run(_read(tmp_path, config.unverified_ssl_context()))
    assert read.get("error") is None and read["url"].startswith("https://"), read
    assert read["items"] == [{"resource": "pods", "user": "kubelab:console"}]


def test_without_a_certificate_the_kubelet_row_shows_the_error(tmp_path: Path) -> None:
    read = asyncio.run(_read(tmp_path, None))
    assert read["items"] == [] and read["error"], read
