"""The kubelet's serving certificate: the one given (``--tls-cert-file``/``--tls-private-key-file``), else a
self-signed one kept in ``--cert-dir`` as ``kubelet.crt``/``kubelet.key``, as kube's kubelet makes it
(``GenerateSelfSignedCertKey``: CN ``<host>@<unix time>``, SANs the host name and the node's IP).

``--client-ca-file`` makes the TLS layer ask for a client certificate and verify one that is given (Go's
``VerifyClientCertIfGiven``): a client without one still connects, and is then authenticated otherwise
(``auth``). kube's kubelet does not renew a self-signed certificate; neither does this one while it is valid.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import time
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from apimachinery.tlsserver import without_session_tickets

SELF_SIGNED_VALIDITY = datetime.timedelta(days=365)


def serving_files(cert_file: str | None, key_file: str | None, cert_dir: Path, node_ip: str) -> tuple[Path, Path]:
    """The certificate and key to serve with: the given pair, or the self-signed one in ``cert_dir``."""
    if cert_file and key_file:
        return Path(cert_file), Path(key_file)
    cert, key = cert_dir / "kubelet.crt", cert_dir / "kubelet.key"
    if not (cert.is_file() and key.is_file() and _still_valid(cert)):
        _write_self_signed(cert, key, node_ip)
    return cert, key


def server_context(cert: Path, key: Path, client_ca_file: str | None) -> ssl.SSLContext:
    """A TLS server context; with a client CA, client certificates are requested and verified when given."""
    ctx = without_session_tickets(ssl.create_default_context(ssl.Purpose.CLIENT_AUTH))
    ctx.load_cert_chain(str(cert), str(key))
    if client_ca_file:
        ctx.load_verify_locations(cafile=client_ca_file)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


def _still_valid(cert: Path) -> bool:
    try:
        parsed = x509.load_pem_x509_certificate(cert.read_bytes())
    except ValueError:
        return False
    return parsed.not_valid_after_utc > datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)


def _write_self_signed(cert_path: Path, key_path: Path, node_ip: str) -> None:
    host = socket.gethostname() or "localhost"
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{int(time.time())}")])
    now = datetime.datetime.now(datetime.UTC)
    sans: list[x509.GeneralName] = [x509.DNSName(host)]
    try:
        sans.append(x509.IPAddress(ipaddress.ip_address(node_ip)))
    except ValueError:
        sans.append(x509.DNSName(node_ip))
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + SELF_SIGNED_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .sign(key, hashes.SHA256()))
    cert_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write(key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()), 0o600)
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
