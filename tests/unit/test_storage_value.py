"""The value transformers write kube's byte layouts and read them back; the prefix chain picks, rotates and fails
as kube's does."""

from __future__ import annotations

import base64

import nacl.secret
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from apiserver.storage import encryptionconfig
from apiserver.storage.value import AESCBC, AESGCMTransformer, Identity, Secretbox, TransformError

KEY = b"/registry/secrets/default/s"
PLAIN = b'{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}'


def config(*providers: dict, resources: tuple[str, ...] = ("secrets",)) -> encryptionconfig.EncryptionConfig:
    doc = {"apiVersion": encryptionconfig.API_VERSION, "kind": encryptionconfig.KIND,
           "resources": [{"resources": list(resources), "providers": list(providers)}]}
    assert encryptionconfig.validate(doc) == []
    return encryptionconfig.build(doc)


def keyed(provider: str, *keys: tuple[str, bytes]) -> dict:
    return {provider: {"keys": [{"name": n, "secret": base64.b64encode(k).decode()} for n, k in keys]}}


def secrets_transformer(*providers: dict):  # type: ignore[no-untyped-def]
    transformer = config(*providers).transformer_for("", "secrets")
    assert transformer is not None
    return transformer


def test_aescbc_layout_is_prefix_iv_and_pkcs7_ciphertext() -> None:
    key = bytes(range(32))
    stored = secrets_transformer(keyed("aescbc", ("key1", key))).to_storage(PLAIN, KEY)
    prefix = b"k8s:enc:aescbc:v1:key1:"
    assert stored.startswith(prefix)
    body = stored[len(prefix):]
    assert len(body) % 16 == 0 and len(body) >= 16 + len(PLAIN)
    decryptor = Cipher(algorithms.AES(key), modes.CBC(body[:16])).decryptor()
    padded = decryptor.update(body[16:]) + decryptor.finalize()
    pad = padded[-1]
    assert 1 <= pad <= 16 and padded[-pad:] == bytes([pad]) * pad
    assert padded[:-pad] == PLAIN


def test_aesgcm_layout_binds_the_etcd_key() -> None:
    key = bytes(range(16))
    stored = secrets_transformer(keyed("aesgcm", ("k", key))).to_storage(PLAIN, KEY)
    body = stored[len(b"k8s:enc:aesgcm:v1:k:"):]
    assert stored.startswith(b"k8s:enc:aesgcm:v1:k:")
    assert AESGCM(key).decrypt(body[:12], body[12:], KEY) == PLAIN
    with pytest.raises(TransformError, match="message authentication failed"):
        secrets_transformer(keyed("aesgcm", ("k", key))).from_storage(stored, b"/registry/secrets/default/other")


def test_secretbox_layout_is_nonce_then_box() -> None:
    key = bytes(range(32))
    stored = secrets_transformer(keyed("secretbox", ("sb", key))).to_storage(PLAIN, KEY)
    body = stored[len(b"k8s:enc:secretbox:v1:sb:"):]
    assert nacl.secret.SecretBox(key).decrypt(body[24:], nonce=body[:24]) == PLAIN


@pytest.mark.parametrize("transformer", [AESCBC(bytes(24)), AESGCMTransformer(bytes(32)), Secretbox(bytes(32)),
                                         Identity()])
def test_round_trip(transformer: object) -> None:
    stored = transformer.to_storage(PLAIN, KEY)  # type: ignore[attr-defined]
    assert transformer.from_storage(stored, KEY) == (PLAIN, False)  # type: ignore[attr-defined]


def test_first_key_writes_and_older_keys_read_stale() -> None:
    old, new = bytes([1]) * 32, bytes([2]) * 32
    before = secrets_transformer(keyed("aescbc", ("old", old))).to_storage(PLAIN, KEY)
    rotated = secrets_transformer(keyed("aescbc", ("new", new), ("old", old)))
    assert rotated.from_storage(before, KEY) == (PLAIN, True)
    after = rotated.to_storage(PLAIN, KEY)
    assert after.startswith(b"k8s:enc:aescbc:v1:new:")
    assert rotated.from_storage(after, KEY) == (PLAIN, False)


def test_identity_first_reads_plain_fresh_and_encrypted_stale() -> None:
    key = bytes(32)
    encrypted = secrets_transformer(keyed("aescbc", ("k", key))).to_storage(PLAIN, KEY)
    decrypting = secrets_transformer({"identity": {}}, keyed("aescbc", ("k", key)))
    assert decrypting.from_storage(PLAIN, KEY) == (PLAIN, False)
    assert decrypting.from_storage(encrypted, KEY) == (PLAIN, True)
    assert decrypting.to_storage(PLAIN, KEY) == PLAIN


def test_plain_data_under_an_encrypting_provider_is_stale() -> None:
    transformer = secrets_transformer(keyed("aescbc", ("k", bytes(32))), {"identity": {}})
    assert transformer.from_storage(PLAIN, KEY) == (PLAIN, True)


def test_unreadable_values_name_the_failing_transformer() -> None:
    written = secrets_transformer(keyed("aescbc", ("gone", bytes(32)))).to_storage(PLAIN, KEY)
    with pytest.raises(TransformError, match="^no matching key was found for the provided AES transformer$"):
        secrets_transformer(keyed("aescbc", ("other", bytes(32)))).from_storage(written, KEY)
    with pytest.raises(TransformError, match="^no matching prefix found$"):
        secrets_transformer({"identity": {}}).from_storage(written, KEY)
    with pytest.raises(TransformError, match="^no matching prefix found$"):
        secrets_transformer(keyed("secretbox", ("k", bytes(32)))).from_storage(written, KEY)
    same_name_other_secret = secrets_transformer(keyed("aescbc", ("gone", bytes([9]) * 32)))
    with pytest.raises(TransformError, match="PKCS7|padding"):
        same_name_other_secret.from_storage(written, KEY)
    with pytest.raises(TransformError, match="identity transformer tried to read encrypted data"):
        Identity().from_storage(written, KEY)
