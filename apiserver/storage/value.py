"""Value transformers: how an object's bytes are changed on their way to etcd and back (kube's
``k8s.io/apiserver/pkg/storage/value`` and its ``encrypt/{aes,secretbox,identity}`` packages).

A transformer turns stored bytes into plain bytes and back, given the etcd key as *authenticated data* (bound into
AES-GCM's tag, so a value copied under another key does not decrypt). Reading also answers whether the value is
*stale*: readable, but not written the way a write would write it now (an older key or provider), so the store
rewrites it even when the object did not change — how ``kubectl replace`` of every Secret rotates keys.

The stored layouts are kube's, byte for byte, so etcd data moves between kube-apiserver and kubelab both ways:
- ``k8s:enc:aescbc:v1:<key name>:`` + 16-byte IV + AES-CBC ciphertext of the PKCS#7-padded value;
- ``k8s:enc:aesgcm:v1:<key name>:`` + 12-byte nonce + AES-GCM ciphertext and tag (the key as associated data);
- ``k8s:enc:secretbox:v1:<key name>:`` + 24-byte nonce + NaCl secretbox (XSalsa20-Poly1305);
- identity: the value as is (and an error for anything that starts ``k8s:enc:``).

Errors are ``TransformError`` with kube's messages; a failing read names the transformer that failed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import nacl.exceptions
import nacl.secret
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

ENCRYPTED_PREFIX = b"k8s:enc:"
AESCBC_PREFIX = b"k8s:enc:aescbc:v1:"
AESGCM_PREFIX = b"k8s:enc:aesgcm:v1:"
SECRETBOX_PREFIX = b"k8s:enc:secretbox:v1:"
BLOCK = 16
GCM_NONCE = 12


class TransformError(Exception):
    """A value that could not be transformed (kube's messages)."""


class Transformer(Protocol):
    def from_storage(self, data: bytes, authenticated: bytes) -> tuple[bytes, bool]:
        """The plain bytes and whether the stored form is stale; raises ``TransformError``."""
        ...

    def to_storage(self, data: bytes, authenticated: bytes) -> bytes:
        ...


class Identity:
    """No encryption; refuses encrypted data so that a later provider in the list gets to read it."""

    def from_storage(self, data: bytes, authenticated: bytes) -> tuple[bytes, bool]:
        if data.startswith(ENCRYPTED_PREFIX):
            raise TransformError("identity transformer tried to read encrypted data")
        return data, False

    def to_storage(self, data: bytes, authenticated: bytes) -> bytes:
        return data


class AESCBC:
    """AES-CBC with a random IV and PKCS#7 padding (not authenticated: kube's ``aescbc``)."""

    def __init__(self, key: bytes) -> None:
        self._algorithm = algorithms.AES(key)

    def from_storage(self, data: bytes, authenticated: bytes) -> tuple[bytes, bool]:
        if len(data) < BLOCK:
            raise TransformError("the stored data was shorter than the required size")
        iv, body = data[:BLOCK], data[BLOCK:]
        if len(body) % BLOCK:
            raise TransformError("the stored data is not a multiple of the block size")
        decryptor = Cipher(self._algorithm, modes.CBC(iv)).decryptor()
        result = decryptor.update(body) + decryptor.finalize()
        pad = result[-1] if result else 0
        if pad == 0 or pad > len(result):
            raise TransformError("invalid PKCS7 data (empty or not padded)")
        if result[-pad:] != bytes([pad]) * pad:
            raise TransformError("invalid padding on input")
        return result[:-pad], False

    def to_storage(self, data: bytes, authenticated: bytes) -> bytes:
        iv = os.urandom(BLOCK)
        pad = BLOCK - len(data) % BLOCK
        encryptor = Cipher(self._algorithm, modes.CBC(iv)).encryptor()
        return iv + encryptor.update(data + bytes([pad]) * pad) + encryptor.finalize()


class AESGCMTransformer:
    """AES-GCM with a random 96-bit nonce; the etcd key is the associated data (kube's ``aesgcm``)."""

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    def from_storage(self, data: bytes, authenticated: bytes) -> tuple[bytes, bool]:
        if len(data) < GCM_NONCE:
            raise TransformError("the stored data was shorter than the required size")
        try:
            return self._aead.decrypt(data[:GCM_NONCE], data[GCM_NONCE:], authenticated), False
        except InvalidTag:
            raise TransformError("cipher: message authentication failed") from None

    def to_storage(self, data: bytes, authenticated: bytes) -> bytes:
        nonce = os.urandom(GCM_NONCE)
        return nonce + self._aead.encrypt(nonce, data, authenticated)


class Secretbox:
    """NaCl secretbox (XSalsa20-Poly1305) with a random 24-byte nonce in front (kube's ``secretbox``)."""

    def __init__(self, key: bytes) -> None:
        self._box = nacl.secret.SecretBox(key)

    def from_storage(self, data: bytes, authenticated: bytes) -> tuple[bytes, bool]:
        if len(data) < nacl.secret.SecretBox.NONCE_SIZE + nacl.secret.SecretBox.MACBYTES:
            raise TransformError("the stored data was shorter than the required size")
        try:
            return self._box.decrypt(data), False  # PyNaCl reads the nonce from the front
        except nacl.exceptions.CryptoError:
            raise TransformError("output array was not large enough for encryption") from None

    def to_storage(self, data: bytes, authenticated: bytes) -> bytes:
        return bytes(self._box.encrypt(data))  # nonce + box, as Go's secretbox.Seal(nonce[:], ...)


@dataclass(frozen=True, slots=True)
class PrefixTransformer:
    prefix: bytes
    transformer: Transformer


class PrefixTransformers:
    """The first transformer writes (its prefix in front); every one whose prefix matches may read, in order.

    A value read by any but the first is stale. An identity (empty prefix) that fails does not stop the others;
    when none reads the value, the errors of those that tried are reported, else ``no_match``."""

    def __init__(self, no_match: str, transformers: Sequence[PrefixTransformer]) -> None:
        if not transformers:
            raise ValueError("at least one transformer is required")
        self._no_match = no_match
        self._transformers = list(transformers)

    def from_storage(self, data: bytes, authenticated: bytes) -> tuple[bytes, bool]:
        errors: list[str] = []
        for i, candidate in enumerate(self._transformers):
            if not data.startswith(candidate.prefix):
                continue
            try:
                result, stale = candidate.transformer.from_storage(data[len(candidate.prefix):], authenticated)
            except TransformError as err:
                if candidate.prefix:
                    errors.append(str(err))
                continue
            return result, stale or i != 0
        if errors:
            raise TransformError(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
        raise TransformError(self._no_match)

    def to_storage(self, data: bytes, authenticated: bytes) -> bytes:
        first = self._transformers[0]
        return first.prefix + first.transformer.to_storage(data, authenticated)
