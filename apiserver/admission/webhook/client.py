"""Calling a webhook over HTTPS, as kube-apiserver's webhook client does.

* ``clientConfig.url``: that URL; ``clientConfig.service``: ``https://<name>.<namespace>.svc:<port><path>``,
  dialled at an address of the Service's Endpoints — or, without them, its EndpointSlices — (the endpoints
  resolver: the Service's port with that ``port``, then the endpoint port of the same name, then one of its
  ready addresses), while TLS still checks the certificate for ``<name>.<namespace>.svc``;
* the server certificate is verified against ``clientConfig.caBundle`` (PEM, base64 in JSON), else the system's
  roots; a ``?timeout=Ns`` query tells the webhook its deadline, ``timeoutSeconds``.

Every failure is a ``CallError`` whose text follows Go's (``Post "https://…": dial tcp …: connect: connection
refused``), which the dispatcher wraps as ``failed calling webhook "…": failed to call webhook: …``.
"""

from __future__ import annotations

import base64
import binascii
import random
import ssl
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import orjson

from ..sources import Sources

SUPPORTED_SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer")


class CallError(Exception):
    """The webhook could not be called or answered nonsense (kube's ``ErrCallingWebhook`` reason)."""


class Target:
    """Where one call goes: the URL shown in errors, the URL dialled, and the name TLS verifies."""

    def __init__(self, shown: str, dialled: str, server_hostname: str | None) -> None:
        self.shown = shown
        self.dialled = dialled
        self.server_hostname = server_hostname


def resolve_service(sources: Sources, namespace: str, name: str, port: int) -> tuple[str, int]:
    """``ResolveEndpoint``: the ip and port of a ready address of the Service's Endpoints for ``port``."""
    service = sources.get("", "services", namespace, name)
    if service is None:
        raise CallError(f'service "{name}" not found')
    spec = service.get("spec") or {}
    service_type = spec.get("type") or "ClusterIP"
    if service_type not in SUPPORTED_SERVICE_TYPES:
        raise CallError(f'unsupported service type "{service_type}"')
    service_port = next((p for p in spec.get("ports") or [] if p.get("port") == port), None)
    if service_port is None:
        raise CallError(f'no service port {port} found for service "{name}"')
    port_name = service_port.get("name") or ""
    candidates = _from_endpoints(sources, namespace, name, port_name)
    if candidates is None:
        candidates = _from_slices(sources, namespace, name, port_name)
    if candidates is None:
        raise CallError(f'endpoints "{name}" not found')
    if not candidates:
        raise CallError(f'no endpoints available for service "{name}"')
    return random.choice(candidates)


def _from_endpoints(sources: Sources, namespace: str, name: str, port_name: str) -> list[tuple[str, int]] | None:
    """Ready addresses of the Service's Endpoints for the named port (None: no Endpoints object)."""
    endpoints = sources.get("", "endpoints", namespace, name)
    if endpoints is None:
        return None
    return [(address["ip"], int(port["port"])) for subset in endpoints.get("subsets") or []
            for port in subset.get("ports") or [] if (port.get("name") or "") == port_name
            for address in subset.get("addresses") or []]


def _from_slices(sources: Sources, namespace: str, name: str, port_name: str) -> list[tuple[str, int]] | None:
    """Ready endpoints of the Service's EndpointSlices (``kubernetes.io/service-name``) for the named port."""
    slices = [s for s in sources.list("discovery.k8s.io", "endpointslices", namespace)
              if (s["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name]
    if not slices:
        return None
    return [(address, int(port["port"])) for slice_ in slices
            for port in slice_.get("ports") or [] if (port.get("name") or "") == port_name
            for endpoint in slice_.get("endpoints") or []
            if (endpoint.get("conditions") or {}).get("ready") is not False
            for address in endpoint.get("addresses") or []]


def _host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class WebhookClient:
    """One connection pool for every webhook call of this apiserver; TLS contexts cached per CA bundle."""

    def __init__(self, sources: Sources) -> None:
        self.sources = sources
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[str, ssl.SSLContext] = {}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _ssl(self, ca_bundle: str | None) -> ssl.SSLContext:
        key = ca_bundle or ""
        context = self._contexts.get(key)
        if context is None:
            if ca_bundle:
                try:
                    pem = base64.b64decode(ca_bundle, validate=True).decode()
                    context = ssl.create_default_context(cadata=pem)
                except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError) as err:
                    raise CallError(f"unable to load root certificates: {err}") from None
            else:
                context = ssl.create_default_context()
            self._contexts[key] = context
        return context

    def target(self, config: dict[str, Any], timeout: int) -> Target:
        query = f"timeout={timeout}s"
        if "url" in config:
            url = config["url"]
            parts = urlsplit(url)
            shown = urlunsplit(parts._replace(query=query))
            return Target(shown, shown, None)
        service = config.get("service") or {}
        name, namespace = service.get("name", ""), service.get("namespace", "")
        port = int(service.get("port") or 443)
        path = service.get("path") or ""
        host = f"{name}.{namespace}.svc"
        shown = f"https://{host}:{port}{path}?{query}"
        try:
            ip, endpoint_port = resolve_service(self.sources, namespace, name, port)
        except CallError as err:
            raise CallError(f'Post "{shown}": {err}') from None
        return Target(shown, f"https://{_host_port(ip, endpoint_port)}{path}?{query}", host)

    async def post(self, config: dict[str, Any], body: Any, timeout: int) -> Any:
        """POST ``body`` (JSON) to an admission webhook; its decoded JSON answer. Errors read as kube's reasons."""
        try:
            raw = await self._exchange(config, body, timeout)
        except CallError as err:
            raise CallError(f"failed to call webhook: {err}") from None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as err:
            raise CallError(f"received invalid webhook response: {err}") from None

    async def call(self, config: dict[str, Any], body: Any, timeout: int) -> Any:
        """POST ``body`` (JSON) to a webhook; its decoded JSON answer, errors with client-go's text only (the
        conversion webhook's caller words the rest)."""
        raw = await self._exchange(config, body, timeout)
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as err:
            raise CallError(str(err)) from None

    async def _exchange(self, config: dict[str, Any], body: Any, timeout: int) -> bytes:
        target = self.target(config, timeout)
        context = self._ssl(config.get("caBundle"))
        if self._session is None:
            self._session = aiohttp.ClientSession(json_serialize=lambda o: orjson.dumps(o).decode())
        kwargs: dict[str, Any] = {"ssl": context, "timeout": aiohttp.ClientTimeout(total=timeout)}
        if target.server_hostname is not None:
            kwargs["server_hostname"] = target.server_hostname
        try:
            async with self._session.post(target.dialled, data=orjson.dumps(body),
                                          headers={"Content-Type": "application/json",
                                                   "Accept": "application/json, */*"}, **kwargs) as resp:
                raw = await resp.read()
                if resp.status < 200 or resp.status >= 300:
                    raise CallError(_server_error(resp.status, raw))
        except TimeoutError:
            raise CallError(f'Post "{target.shown}": context deadline exceeded') from None
        except aiohttp.ClientConnectorCertificateError as err:
            raise CallError(f'Post "{target.shown}": tls: failed to verify certificate: {_cert_reason(err)}') \
                from None
        except aiohttp.ClientConnectorError as err:
            host = urlsplit(target.dialled).netloc
            reason = "connect: connection refused" if isinstance(err.os_error, ConnectionRefusedError) \
                else str(err.os_error)
            raise CallError(f'Post "{target.shown}": dial tcp {host}: {reason}') from None
        except aiohttp.ClientError as err:
            raise CallError(f'Post "{target.shown}": {err}') from None
        return raw


def _cert_reason(err: aiohttp.ClientConnectorCertificateError) -> str:
    text = str(err.certificate_error)
    if any(why in text for why in ("unable to get local issuer certificate", "self-signed", "self signed",
                                   "certificate signature failure")):
        return "x509: certificate signed by unknown authority"
    if "Hostname mismatch" in text or "IP address mismatch" in text:
        return f"x509: certificate is not valid for the requested name ({text})"
    return text


def _server_error(code: int, raw: bytes) -> str:
    """client-go's error for a non-2xx answer that is not a Status."""
    try:
        status = orjson.loads(raw)
        if isinstance(status, dict) and status.get("kind") == "Status" and status.get("message"):
            return str(status["message"])
    except orjson.JSONDecodeError:
        pass
    if code >= 500:
        body = raw.decode(errors="replace").strip()
        return f'an error on the server ("{body}") has prevented the request from succeeding'
    return f"the server responded with the status code {code} but did not return more information"
