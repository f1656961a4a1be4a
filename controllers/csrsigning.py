"""The CSR signing controller (``pkg/controller/certificates/signer``): issue approved requests with the cluster CA.

kube-controller-manager's ``csrsigning`` signs with ``--cluster-signing-cert-file``/``--cluster-signing-key-file``
(kubeadm: the cluster CA) for the well-known client signers:

* ``kubernetes.io/kube-apiserver-client``: usages only ``client auth`` (required), ``digital signature`` and
  ``key encipherment``;
* ``kubernetes.io/kube-apiserver-client-kubelet``: in addition a kubelet's subject (``system:node:<name>`` in
  ``system:nodes``, no subjectAltNames).

``sync(name)`` reads the CSR from the cache and does nothing unless it is approved, not denied, not failed, has
no certificate yet and names one of these signers. A request its signer refuses gets the ``Failed`` condition
(reason ``SignerValidationFailure``); otherwise the certificate — the request's subject and names, the usages
asked for, valid from five minutes ago for ``expirationSeconds`` but never longer than
``--cluster-signing-duration`` (1 year) nor than the CA — goes into ``status.certificate`` through ``/status``.
"""

from __future__ import annotations

import base64
import datetime
import logging
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID

from apimachinery.meta import Object
from controllers.support.base import Controller
from controllers.support.csrutil import (
    KUBE_APISERVER_CLIENT,
    KUBE_APISERVER_CLIENT_KUBELET,
    approval,
    condition,
    has_failed,
    kubelet_client_problem,
    parse_request,
)
from kubeclient import CERTIFICATE_SIGNING_REQUESTS, Clientset, InformerFactory

log = logging.getLogger(__name__)

DEFAULT_SIGNING_DURATION = 365 * 24 * 3600.0  # --cluster-signing-duration: 8760h
BACKDATE = datetime.timedelta(minutes=5)
CLIENT_USAGES = frozenset({"digital signature", "key encipherment", "client auth"})
_EXTENDED = {"client auth": ExtendedKeyUsageOID.CLIENT_AUTH, "server auth": ExtendedKeyUsageOID.SERVER_AUTH}

SigningKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey


def client_usage_problem(usages: list[str]) -> str | None:
    """kube's ``validAPIServerClientUsages``."""
    for usage in usages:
        if usage not in CLIENT_USAGES:
            return f"invalid usage for client certificate: {usage}"
    return None if "client auth" in usages else "missing required usage for client certificate: client auth"


def signer_problem(csr: Object, request: x509.CertificateSigningRequest) -> str | None:
    """Why the CSR's signer refuses it, or None."""
    spec = csr.get("spec") or {}
    usages = list(spec.get("usages") or [])
    if spec.get("signerName") == KUBE_APISERVER_CLIENT_KUBELET:
        return kubelet_client_problem(request, usages)
    return client_usage_problem(usages)


def _key_usage(usages: list[str]) -> x509.KeyUsage | None:
    """The key usage bits asked for; None when there are none (Go's x509 then leaves the extension out, and so must
    we: OpenSSL refuses a client certificate whose key usage lacks digital signature)."""
    if not {"digital signature", "signing", "content commitment", "key encipherment", "data encipherment",
            "key agreement"} & set(usages):
        return None
    return x509.KeyUsage(digital_signature="digital signature" in usages or "signing" in usages,
                         content_commitment="content commitment" in usages,
                         key_encipherment="key encipherment" in usages, data_encipherment="data encipherment" in usages,
                         key_agreement="key agreement" in usages, key_cert_sign=False, crl_sign=False,
                         encipher_only=False, decipher_only=False)


class Authority:
    """The CA that signs: its certificate and key, and the longest validity it gives."""

    def __init__(self, cert: x509.Certificate, key: SigningKey, max_duration: float = DEFAULT_SIGNING_DURATION) -> None:
        self.cert = cert
        self.key = key
        self.max_duration = max_duration

    @classmethod
    def load(cls, cert_file: str | Path, key_file: str | Path,
             max_duration: float = DEFAULT_SIGNING_DURATION) -> Authority:
        cert = x509.load_pem_x509_certificate(Path(cert_file).read_bytes())
        key = serialization.load_pem_private_key(Path(key_file).read_bytes(), password=None)
        if not isinstance(key, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey)):
            raise ValueError(f"{key_file}: unsupported signing key type {type(key).__name__}")
        return cls(cert, key, max_duration)

    def sign(self, request: x509.CertificateSigningRequest, usages: list[str], seconds: int | None,
             now: datetime.datetime | None = None) -> bytes:
        """The PEM certificate for ``request``: its subject and SANs, ``usages``, ``seconds`` of validity."""
        now = now or datetime.datetime.now(datetime.UTC)
        duration = min(float(seconds), self.max_duration) if seconds else self.max_duration
        not_after = min(now + datetime.timedelta(seconds=duration), self.cert.not_valid_after_utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(request.subject)
            .issuer_name(self.cert.subject)
            .public_key(request.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                           critical=False)
        )
        key_usage = _key_usage(usages)
        if key_usage is not None:
            builder = builder.add_extension(key_usage, critical=True)
        extended = [_EXTENDED[u] for u in usages if u in _EXTENDED]
        if extended:
            builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=False)
        try:
            names = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            builder = builder.add_extension(names, critical=False)
        except x509.ExtensionNotFound:
            pass
        algorithm = None if isinstance(self.key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
        return builder.sign(self.key, algorithm).public_bytes(serialization.Encoding.PEM)


class CSRSigningController(Controller):
    name = "certificatesigningrequest-signing-controller"
    queue_name = "certificate"
    signers = (KUBE_APISERVER_CLIENT, KUBE_APISERVER_CLIENT_KUBELET)

    def __init__(self, clientset: Clientset, factory: InformerFactory, authority: Authority, *,
                 workers: int = 5) -> None:
        super().__init__(workers=workers)
        self.client = clientset.resource(CERTIFICATE_SIGNING_REQUESTS)
        self.authority = authority
        self.informer = factory.informer(CERTIFICATE_SIGNING_REQUESTS)
        self.informers = [self.informer]
        self.informer.add_event_handler(self.enqueue, lambda old, new: self.enqueue(new))

    async def sync(self, key: str) -> None:
        csr = self.informer.indexer.get_by_key(key)
        if csr is None or (csr.get("status") or {}).get("certificate") or has_failed(csr):
            return
        spec = csr.get("spec") or {}
        approved, denied = approval(csr)
        if not approved or denied or spec.get("signerName") not in self.signers:
            return
        try:
            request = parse_request(csr)
        except ValueError as err:
            problem: str | None = f"unable to parse csr {key!r}: {err}"
        else:
            problem = signer_problem(csr, request)
        status = dict(csr.get("status") or {})
        if problem is not None:
            status["conditions"] = [*status.get("conditions", []),
                                    condition("Failed", "SignerValidationFailure", problem)]
            log.info("certificate signing request %s failed: %s", key, problem)
        else:
            pem = self.authority.sign(request, list(spec.get("usages") or []), spec.get("expirationSeconds"))
            status["certificate"] = base64.b64encode(pem).decode()
            log.info("signed certificate signing request %s for %s", key, request.subject.rfc4514_string())
        await self.client.update({**csr, "status": status}, subresource="status")
