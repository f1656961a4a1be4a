"""A cluster's certificate authorities and the certificates they sign, as files kubeadm would write.

Why here and shaped so: etcd's members, the apiserver's etcd client and (later) the apiserver's serving and
client certificates all need the same few operations — a CA that persists under the data dir, and leaf
certificates with a CN, organizations (kube's groups) and SANs, for server and/or client auth. Files follow
kubeadm's ``/etc/kubernetes/pki`` names (``ca.crt``/``ca.key``, ``etcd/ca.crt``, ``apiserver-etcd-client.crt``…),
keys are written 0600 and directories 0700, each file atomically, so a crash never leaves half a key.

Certificates are reused across runs while they are still valid, signed by the same CA and name the same
subject and SANs; otherwise they are issued anew (a changed member list gets fresh certificates). Keys are ECDSA
P-256 (kubeadm's ``ECDSA-P256``): quick to generate, which matters when every test run makes a PKI.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from apimachinery.files import write_private

__all__ = ["CertificateAuthority", "KeyPair", "ensure_signing_key_pair", "write_private"]

CA_VALIDITY = datetime.timedelta(days=3650)  # kubeadm: 10 years for CAs
CERT_VALIDITY = datetime.timedelta(days=365)  # kubeadm: 1 year for leaf certificates
RENEW_BEFORE = datetime.timedelta(days=30)  # reissue a leaf certificate this close to its expiry


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key on disk (``name.crt`` and ``name.key``)."""

    cert: Path
    key: Path

    @classmethod
    def at(cls, base: Path) -> KeyPair:
        return cls(base.with_name(base.name + ".crt"), base.with_name(base.name + ".key"))

    def exists(self) -> bool:
        return self.cert.is_file() and self.key.is_file()


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_bytes(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(common_name: str, organizations: Iterable[str] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def _key_usage(ca: bool) -> x509.KeyUsage:
    """kubeadm's key usages: digital signature and key encipherment, plus certificate signing for a CA."""
    return x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=ca, content_commitment=False,
                         data_encipherment=False, key_agreement=False, crl_sign=False, encipher_only=False,
                         decipher_only=False)


def _sans(names: Iterable[str]) -> list[x509.GeneralName]:
    """IP addresses become IP SANs, anything else a DNS SAN (as kubeadm's ``certSANs``)."""
    out: list[x509.GeneralName] = []
    for name in names:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            out.append(x509.DNSName(name))
    return out


class CertificateAuthority:
    """A CA whose certificate and key live at ``pair`` (created on first use), and the leaves it issues."""

    def __init__(self, pair: KeyPair, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
        self.pair = pair
        self.cert = cert
        self._key = key

    @classmethod
    def load_or_create(cls, base: Path, common_name: str) -> CertificateAuthority:
        """The CA at ``base``.crt/.key, made (self-signed, 10 years) when either file is missing."""
        pair = KeyPair.at(base)
        if pair.exists():
            cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
            key = serialization.load_pem_private_key(pair.key.read_bytes(), password=None)
            if isinstance(key, ec.EllipticCurvePrivateKey):
                return cls(pair, cert, key)
        key = _new_key()
        now = datetime.datetime.now(datetime.UTC)
        subject = _name(common_name)
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + CA_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_key_usage(ca=True), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        write_private(pair.key, _key_bytes(key))
        write_private(pair.cert, cert.public_bytes(serialization.Encoding.PEM), mode=0o644)
        return cls(pair, cert, key)

    def issue(self, base: Path, common_name: str, *, organizations: Iterable[str] = (), sans: Iterable[str] = (),
              server: bool = False, client: bool = False) -> KeyPair:
        """A leaf certificate at ``base``.crt/.key for CN ``common_name`` and O ``organizations`` (kube's user
        and groups), with ``sans``, usable for server and/or client auth; an existing one is kept while it fits."""
        organizations, sans = list(organizations), list(sans)
        pair = KeyPair.at(base)
        if self._fits(pair, _name(common_name, organizations), _sans(sans)):
            return pair
        key = _new_key()
        now = datetime.datetime.now(datetime.UTC)
        usages = [u for u, wanted in ((ExtendedKeyUsageOID.SERVER_AUTH, server),
                                      (ExtendedKeyUsageOID.CLIENT_AUTH, client)) if wanted]
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organizations))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + CERT_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(ca=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(_sans(sans)), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        write_private(pair.key, _key_bytes(key))
        write_private(pair.cert, cert.public_bytes(serialization.Encoding.PEM), mode=0o644)
        return pair

    def _fits(self, pair: KeyPair, subject: x509.Name, sans: list[x509.GeneralName]) -> bool:
        """Whether the certificate on disk is this CA's, for this subject and SANs, and not about to expire."""
        if not pair.exists():
            return False
        try:
            cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
            cert.verify_directly_issued_by(self.cert)
        except (ValueError, TypeError, InvalidSignature):
            return False
        try:
            present = list(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value)
        except x509.ExtensionNotFound:
            present = []
        fresh = cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC) > RENEW_BEFORE
        return fresh and cert.subject == subject and set(present) == set(sans)


def ensure_signing_key_pair(key_path: Path, pub_path: Path) -> None:
    """A signing key at ``key_path`` (SEC1 PEM, 0600) and its public key at ``pub_path`` (PKIX PEM), made once and
    never rotated: kubeadm's ``sa.key``/``sa.pub``, which sign and check service-account tokens. ECDSA P-256 (ES256
    tokens), as kubeadm makes ``sa.key`` with ``encryptionAlgorithm: ECDSA-P256`` like the rest of this PKI: an RSA
    2048 key took 0.1-0.4 s to make and as long again for the apiserver to load (OpenSSL checks its primes), both
    on the way to a healthy apiserver. A pair that exists (an RSA one from an older kubelab included) is kept, so
    the tokens it signed stay valid."""
    if key_path.is_file() and pub_path.is_file():
        return
    key = _new_key()
    write_private(key_path, key.private_bytes(serialization.Encoding.PEM,
                                              serialization.PrivateFormat.TraditionalOpenSSL,
                                              serialization.NoEncryption()))
    write_private(pub_path, key.public_key().public_bytes(serialization.Encoding.PEM,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo), mode=0o644)
