"""TLS bootstrapping (kube's ``pkg/kubelet/certificate/bootstrap``): the kubelet gets its own client certificate.

With ``--bootstrap-kubeconfig`` the kubelet starts from a credential that is only good for asking for one (a
bootstrap token, ``system:bootstrap:<id>``). ``load_client_cert`` runs before anything else:

1. ``--kubeconfig`` exists and its client certificate has not expired: nothing to do.
2. Otherwise a key (ECDSA P-256, kept as ``<cert-dir>/kubelet-client.key.tmp`` until the certificate comes, so a
   restart asks again with the same key) and a CertificateSigningRequest ``node-csr-<digest>`` for the signer
   ``kubernetes.io/kube-apiserver-client-kubelet``: CN ``system:node:<node name>``, O ``system:nodes``, usages
   ``digital signature`` and ``client auth`` (``key encipherment`` too for an RSA key), made with the bootstrap
   credential. The name digests the key, subject and usages as kube's ``digestedName``, so a restart finds its
   own request again instead of making another.
3. It waits until the request is issued (the csrapproving controller approves it when the requester may create
   ``certificatesigningrequests/nodeclient``; the signer issues it); denied or failed ends the kubelet with the
   condition's reason and message.
4. It writes ``<cert-dir>/kubelet-client-<time>.pem`` (certificate and key, 0600), points
   ``kubelet-client-current.pem`` at it, and writes ``--kubeconfig``: the bootstrap kubeconfig's server and CA,
   and the client certificate and key from ``kubelet-client-current.pem``. The kubelet then runs as
   ``system:node:<node name>``.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from apimachinery.errors import AlreadyExists, StatusError
from apimachinery.files import write_private
from kubeclient import CERTIFICATE_SIGNING_REQUESTS, Clientset
from kubeclient.config import ConfigError, load_kubeconfig
from kubeclient.rest import RESTClient

__all__ = ["BootstrapError", "client_config_valid", "digested_name", "load_client_cert"]

log = logging.getLogger(__name__)

SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
TMP_KEY = "kubelet-client.key.tmp"
CURRENT = "kubelet-client-current.pem"
WAIT_SECONDS = 3600.0  # kube's bootstrap waits an hour for the certificate
POLL_SECONDS = 0.5


class BootstrapError(RuntimeError):
    """The kubelet could not get its client certificate (denied, failed, or a bad bootstrap kubeconfig)."""


def client_config_valid(kubeconfig: Path) -> bool:
    """kube's ``isClientConfigStillValid``: the kubeconfig loads and none of its client certificates expired."""
    if not kubeconfig.is_file():
        return False
    try:
        config = load_kubeconfig(kubeconfig)
        data = config.cert_data or (Path(config.cert_file).read_bytes() if config.cert_file else b"")
        certs = x509.load_pem_x509_certificates(data) if data else []
    except (ConfigError, OSError, ValueError) as err:
        log.warning("unable to read existing client config from %s: %s", kubeconfig, err)
        return False
    now = datetime.datetime.now(datetime.UTC)
    return bool(certs) and all(cert.not_valid_after_utc > now for cert in certs)


def _key(path: Path) -> ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey:
    """The pending key, or a new one (written 0600 before it is used)."""
    if path.is_file():
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
            return key
    new = ec.generate_private_key(ec.SECP256R1())
    write_private(path, _key_pem(new))
    return new


def _key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    """``EC PRIVATE KEY`` (or ``RSA PRIVATE KEY``), as kube's ``keyutil`` writes them."""
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def usages_for(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> list[str]:
    return ["digital signature", "client auth", *(["key encipherment"] if isinstance(key, rsa.RSAPrivateKey) else [])]


def digested_name(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, common_name: str,
                  organizations: list[str], usages: list[str]) -> str:
    """kube's ``digestedName``: ``node-csr-`` and the SHA-512/256 of the public key, subject and usages (each
    base64url'd and ended with ``|``, a character base64url never holds, so no two inputs hash alike)."""
    digest = hashes.Hash(hashes.SHA512_256())
    public = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    for part in (public, common_name.encode(), *(o.encode() for o in organizations), *(u.encode() for u in usages)):
        digest.update(base64.urlsafe_b64encode(part).rstrip(b"=") + b"|")
    return "node-csr-" + base64.urlsafe_b64encode(digest.finalize()).rstrip(b"=").decode()


def _request(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, node_name: str) -> tuple[str, dict[str, Any]]:
    """(name, CertificateSigningRequest) for the node's client certificate."""
    common_name, organizations = f"system:node:{node_name}", ["system:nodes"]
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
                        + [x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    usages = usages_for(key)
    name = digested_name(key, common_name, organizations, usages)
    return name, {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                  "metadata": {"name": name},
                  "spec": {"request": base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode(),
                           "signerName": SIGNER, "usages": usages}}


async def _issue(client: Clientset, name: str, csr: dict[str, Any]) -> bytes:
    """Create the request (or find ours again) and wait for its certificate (PEM)."""
    csrs = client.resource(CERTIFICATE_SIGNING_REQUESTS)
    try:
        await csrs.create(csr)
        log.info("certificate signing request %s created; waiting for the client certificate", name)
    except AlreadyExists:
        existing = await csrs.get(name)
        if (existing.get("spec") or {}).get("request") != csr["spec"]["request"]:
            raise BootstrapError(f"certificate signing request {name} exists and is not this kubelet's") from None
        log.info("certificate signing request %s exists; waiting for the client certificate", name)
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        status = (await csrs.get(name)).get("status") or {}
        for condition in status.get("conditions") or []:
            if condition.get("type") in ("Denied", "Failed"):
                verb = "is denied" if condition["type"] == "Denied" else "failed"
                raise BootstrapError(f"certificate signing request {verb}, reason: {condition.get('reason')}, "
                                     f"message: {condition.get('message')}")
        if status.get("certificate"):
            return base64.b64decode(status["certificate"])
        await asyncio.sleep(POLL_SECONDS)
    raise BootstrapError(f"timed out waiting for certificate signing request {name} to be issued")


def _store(cert_dir: Path, cert_pem: bytes, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> Path:
    """kube's certificate store: ``kubelet-client-<time>.pem`` and the ``-current`` link to it."""
    stamp = time.strftime("%Y-%m-%d-%H-%M-%S", time.gmtime())
    pem = cert_dir / f"kubelet-client-{stamp}.pem"
    write_private(pem, cert_pem + _key_pem(key))
    link = cert_dir / CURRENT
    tmp_link = cert_dir / f".{CURRENT}.tmp"
    tmp_link.unlink(missing_ok=True)
    tmp_link.symlink_to(pem.name)
    os.replace(tmp_link, link)
    return link


def _kubeconfig(bootstrap: Path, pem: Path) -> bytes:
    """The kubelet's kubeconfig: the bootstrap kubeconfig's server and CA, and the new client certificate (JSON,
    which every kubeconfig reader takes as the YAML it is)."""
    config = load_kubeconfig(bootstrap)
    cluster: dict[str, Any] = {"server": config.host}
    if config.ca_file:
        cluster["certificate-authority"] = config.ca_file
    elif config.ca_data:
        cluster["certificate-authority-data"] = base64.b64encode(config.ca_data).decode()
    if config.insecure_skip_tls_verify:
        cluster["insecure-skip-tls-verify"] = True
    return json.dumps({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "default-cluster", "cluster": cluster}],
        "users": [{"name": "default-auth", "user": {"client-certificate": str(pem), "client-key": str(pem)}}],
        "contexts": [{"name": "default-context", "context": {"cluster": "default-cluster", "user": "default-auth",
                                                             "namespace": "default"}}],
        "current-context": "default-context",
    }, indent=2).encode()


async def load_client_cert(kubeconfig: Path, bootstrap_kubeconfig: Path, cert_dir: Path, node_name: str) -> None:
    """Make sure ``kubeconfig`` holds a valid client certificate for the node, bootstrapping one if needed."""
    if client_config_valid(kubeconfig):
        log.info("kubeconfig %s exists and is valid, skipping bootstrap", kubeconfig)
        return
    try:
        config = load_kubeconfig(bootstrap_kubeconfig)
    except ConfigError as err:
        raise BootstrapError(f"unable to load bootstrap kubeconfig: {err}") from None
    log.info("using bootstrap kubeconfig %s to generate TLS client cert, key and kubeconfig file", bootstrap_kubeconfig)
    key = _key(cert_dir / TMP_KEY)
    name, csr = _request(key, node_name)
    client = Clientset(RESTClient(config))
    try:
        cert_pem = await _issue(client, name, csr)
    except StatusError as err:  # the token expired or was deleted (401), or it may not create CSRs (403)
        raise BootstrapError(f"cannot create certificate signing request: {err.message}") from None
    finally:
        await client.close()
    current = _store(cert_dir, cert_pem, key)
    write_private(kubeconfig, _kubeconfig(bootstrap_kubeconfig, current.absolute()))
    (cert_dir / TMP_KEY).unlink(missing_ok=True)
    log.info("client certificate for system:node:%s issued; wrote %s", node_name, kubeconfig)
