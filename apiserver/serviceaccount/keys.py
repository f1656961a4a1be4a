"""Service-account signing keys and compact JWS: sign with the private key, verify with any of the public keys.

kube-apiserver signs with ``--service-account-signing-key-file`` and accepts what any key of
``--service-account-key-file`` (repeatable; a file may hold several PEM keys, public or private) verifies. RSA
keys sign RS256, ECDSA P-256/P-384/P-521 keys ES256/ES384/ES512, as kube's ``signerFromRSAPrivateKey`` and
``signerFromECDSAPrivateKey``. A key's ``kid`` is kube's ``keyIDFromPublicKey``: the unpadded base64url SHA-256 of
its PKIX DER encoding, so the same key has the same id in every apiserver and in ``/openid/v1/jwks``.

Written on ``cryptography`` (already the PKI's library) rather than PyJWT: the JOSE part is ~60 lines (compact
serialisation, two algorithms, the ECDSA signature's raw r||s form), and the claims checks are kube's own rules
(``claims``), which PyJWT's generic checks would only duplicate.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey

_EC_ALGORITHMS = {"secp256r1": ("ES256", hashes.SHA256(), 32), "secp384r1": ("ES384", hashes.SHA384(), 48),
                  "secp521r1": ("ES512", hashes.SHA512(), 66)}
_EC_CURVES = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}


class KeyFileError(ValueError):
    """A key file holds no usable key."""


class InvalidJWS(ValueError):
    """Not a compact JWS, or its signature does not verify."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def key_id(key: PublicKey) -> str:
    """kube's ``keyIDFromPublicKey``."""
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return b64url(hashlib.sha256(der).digest())


def algorithm(key: PublicKey | PrivateKey) -> str:
    if isinstance(key, (rsa.RSAPublicKey, rsa.RSAPrivateKey)):
        return "RS256"
    return _EC_ALGORITHMS[key.curve.name][0]


def _pem_blocks(data: bytes) -> list[bytes]:
    blocks, current = [], []
    for line in data.splitlines(keepends=True):
        if line.startswith(b"-----BEGIN"):
            current = [line]
        elif current:
            current.append(line)
            if line.startswith(b"-----END"):
                blocks.append(b"".join(current))
                current = []
    return blocks


def load_public_keys(path: str | Path) -> list[PublicKey]:
    """Every key in a PEM file as a public key (a private key's public half), kube's ``keyutil.PublicKeysFromFile``."""
    keys: list[PublicKey] = []
    for block in _pem_blocks(Path(path).read_bytes()):
        key: Any
        if b"PRIVATE KEY" in block.split(b"\n", 1)[0]:
            key = serialization.load_pem_private_key(block, password=None).public_key()
        elif b"PUBLIC KEY" in block.split(b"\n", 1)[0]:
            key = serialization.load_pem_public_key(block)
        else:
            continue
        if isinstance(key, (rsa.RSAPublicKey, ec.EllipticCurvePublicKey)):
            keys.append(key)
    if not keys:
        raise KeyFileError(f"data does not contain any valid RSA or ECDSA public keys: {path}")
    return keys


def load_private_key(path: str | Path) -> PrivateKey:
    for block in _pem_blocks(Path(path).read_bytes()):
        if b"PRIVATE KEY" in block.split(b"\n", 1)[0]:
            key = serialization.load_pem_private_key(block, password=None)
            if isinstance(key, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey)):
                return key
    raise KeyFileError(f"data does not contain a valid RSA or ECDSA private key: {path}")


def new_private_key() -> rsa.RSAPrivateKey:
    """A key as kubeadm makes ``sa.key`` (RSA 2048)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def private_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def public_pem(key: PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def sign(key: PrivateKey, claims: dict[str, Any]) -> str:
    """A compact JWS of ``claims``: header ``{"alg", "kid"}`` as go-jose writes it."""
    alg = algorithm(key)
    header = b64url(orjson.dumps({"alg": alg, "kid": key_id(key.public_key())}))
    payload = b64url(orjson.dumps(claims))
    signing_input = f"{header}.{payload}".encode()
    if isinstance(key, rsa.RSAPrivateKey):
        signature = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    else:
        _, digest, size = _EC_ALGORITHMS[key.curve.name]
        r, s = decode_dss_signature(key.sign(signing_input, ec.ECDSA(digest)))
        signature = r.to_bytes(size, "big") + s.to_bytes(size, "big")
    return f"{header}.{payload}.{b64url(signature)}"


def looks_like_jwt(token: str) -> bool:
    """Three dot-separated parts, the cheap test kube's authenticator makes before parsing."""
    return token.count(".") == 2


def unverified_claims(token: str) -> dict[str, Any]:
    """The payload, not yet trusted (the issuer decides which authenticator checks it); raises InvalidJWS."""
    try:
        claims = orjson.loads(b64url_decode(token.split(".")[1]))
    except (ValueError, IndexError) as err:
        raise InvalidJWS(f"malformed token: {err}") from None
    if not isinstance(claims, dict):
        raise InvalidJWS("malformed token: the payload is not an object")
    return claims


def verify(token: str, keys: Iterable[PublicKey]) -> dict[str, Any]:
    """The claims of a token that one of ``keys`` signed (the ``kid``, when present, picks the key)."""
    try:
        header_b64, payload_b64, signature_b64 = token.split(".")
        header = orjson.loads(b64url_decode(header_b64))
        signature = b64url_decode(signature_b64)
    except ValueError:
        raise InvalidJWS("malformed token") from None
    if not isinstance(header, dict):
        raise InvalidJWS("malformed token")
    signing_input = f"{header_b64}.{payload_b64}".encode()
    for key in keys:
        if header.get("kid") and header["kid"] != key_id(key) or header.get("alg") != algorithm(key):
            continue
        try:
            if isinstance(key, rsa.RSAPublicKey):
                key.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
            else:
                _, digest, size = _EC_ALGORITHMS[key.curve.name]
                if len(signature) != 2 * size:
                    continue
                der = encode_dss_signature(int.from_bytes(signature[:size], "big"),
                                           int.from_bytes(signature[size:], "big"))
                key.verify(der, signing_input, ec.ECDSA(digest))
        except InvalidSignature:
            continue
        return unverified_claims(token)
    raise InvalidJWS("invalid signature")


def jwk(key: PublicKey) -> dict[str, Any]:
    """The key as ``/openid/v1/jwks`` lists it (``use: sig``)."""
    out: dict[str, Any] = {"use": "sig"}
    if isinstance(key, rsa.RSAPublicKey):
        numbers = key.public_numbers()
        out.update(kty="RSA", kid=key_id(key), alg="RS256",
                   n=b64url(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
                   e=b64url(numbers.e.to_bytes((numbers.e.bit_length() + 7) // 8, "big")))
    else:
        alg, _, size = _EC_ALGORITHMS[key.curve.name]
        point = key.public_numbers()
        out.update(kty="EC", kid=key_id(key), crv=_EC_CURVES[key.curve.name], alg=alg,
                   x=b64url(point.x.to_bytes(size, "big")), y=b64url(point.y.to_bytes(size, "big")))
    return out


@dataclass(frozen=True)
class KeySet:
    """The signing key (None: this apiserver issues no tokens) and every key tokens are accepted from."""

    signing: PrivateKey | None
    public: tuple[PublicKey, ...]

    @classmethod
    def load(cls, signing_key_file: str | None, key_files: Iterable[str]) -> KeySet:
        signing = load_private_key(signing_key_file) if signing_key_file else None
        public = [key for path in key_files for key in load_public_keys(path)]
        if not public and signing is not None:
            public = [signing.public_key()]
        return cls(signing, tuple(public))
