"""An HTTPS admission webhook a test runs itself: a CA and a server certificate made with ``cryptography``, a
threaded ``http.server`` on 127.0.0.1 answering AdmissionReviews with a function of the test's choosing, and a
record of every review it received."""

from __future__ import annotations

import base64
import datetime
import http.server
import ipaddress
import json
import ssl
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

Review = dict[str, Any]
Answer = Callable[[str, Review], dict[str, Any]]


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


class CertificateAuthority:
    """A throwaway CA that signs server certificates for the names and IPs given."""

    def __init__(self) -> None:
        self.key = _key()
        now = datetime.datetime.now(datetime.UTC)
        subject = _name(f"kubelab-test-ca-{x509.random_serial_number() % 10**8}")
        self.cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(minutes=5))
                     .not_valid_after(now + datetime.timedelta(days=1))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .sign(self.key, hashes.SHA256()))

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def bundle(self) -> str:
        """``clientConfig.caBundle``: the PEM, base64 as a JSON ``[]byte``."""
        return base64.b64encode(self.pem).decode()

    def issue(self, dns_names: list[str], ips: list[str]) -> tuple[bytes, bytes]:
        """A server certificate and its key, both PEM."""
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        cert = (x509.CertificateBuilder().subject_name(_name(dns_names[0] if dns_names else ips[0]))
                .issuer_name(self.cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName(names), critical=False)
                .sign(self.key, hashes.SHA256()))
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        return cert.public_bytes(serialization.Encoding.PEM), key_pem


def allow(uid: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": uid, "allowed": True, **extra}}


def deny(uid: str, message: str, code: int = 403) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": uid, "allowed": False, "status": {"code": code, "message": message}}}


def json_patch(uid: str, operations: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    patch = base64.b64encode(json.dumps(operations).encode()).decode()
    return allow(uid, patchType="JSONPatch", patch=patch, **extra)


class WebhookServer:
    """Serves ``answer(path, review)`` over HTTPS on ``127.0.0.1:<port>``; ``reviews`` records (path, review)."""

    def __init__(self, answer: Answer, ca: CertificateAuthority, dns_names: list[str]) -> None:
        self.answer = answer
        self.ca = ca
        self.reviews: list[tuple[str, Review]] = []
        cert, key = ca.issue(dns_names, ["127.0.0.1"])
        self._dir = tempfile.TemporaryDirectory()
        cert_path, key_path = Path(self._dir.name) / "tls.crt", Path(self._dir.name) / "tls.key"
        cert_path.write_bytes(cert)
        key_path.write_bytes(key)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                review = json.loads(body)
                server.reviews.append((self.path, review))
                data = json.dumps(server.answer(self.path.split("?")[0], review)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> WebhookServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._dir.cleanup()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def received(self, path: str) -> list[Review]:
        return [review for p, review in self.reviews if p.split("?")[0] == path]
