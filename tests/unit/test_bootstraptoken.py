"""Bootstrap tokens without a server: the detached JWS (kube's own test vector), the token Secret's rules, the
bootstrap-token authenticator, the CA pin of `kubelab join`, kubeadm's token Secret, and the kubelet's CSR name and
client-config check (apimachinery.bootstraptoken, apiserver.authenticators.bootstraptoken, kubelab.discovery,
kubelab.bootstraptokens, kubelet.bootstrap)."""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from apimachinery import bootstraptoken as bt
from apiserver.authentication import UserInfo
from apiserver.authenticators.bootstraptoken import BootstrapTokenAuthenticator
from controllers.bootstrapsigner import signed_data
from controllers.manager import enabled_controllers
from kubelab.bootstraptokens import DEFAULT_GROUP, token_secret
from kubelab.discovery import DiscoveryError, ca_cert_hash, check_pins, parse_pins
from kubelab.kubeconfig import write_kubeconfig
from kubelab.pki import CertificateAuthority
from kubelet.bootstrap import client_config_valid, digested_name, usages_for

TOKEN = bt.BootstrapToken("abcdef", "0123456789abcdef")


def test_detached_signature_matches_kubes_vector() -> None:
    content = "Hello from the other side. I must have called a thousand times."
    signature = bt.compute_detached_signature(content, "joshua", "my voice is my passcode")
    assert signature == "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8"
    assert bt.detached_signature_valid(signature, content, "joshua", "my voice is my passcode")
    assert not bt.detached_signature_valid(signature, content + " ", "joshua", "my voice is my passcode")
    assert not bt.detached_signature_valid(signature, content, "joshua", "my voice is not my passcode")


def test_parse_and_generate_tokens() -> None:
    assert str(bt.parse_token("abcdef.0123456789abcdef")) == "abcdef.0123456789abcdef"
    for bad in ("abcdef.0123456789abcde", "ABCDEF.0123456789abcdef", "abcdef0123456789abcdef", ""):
        with pytest.raises(bt.InvalidToken, match="was not of the form"):
            bt.parse_token(bad)
    token = bt.generate_token()
    assert bt.parse_token(str(token)).secret == token.secret


def _secret(**overrides: Any) -> dict[str, Any]:
    secret = token_secret(TOKEN, description="test")
    secret["metadata"]["uid"] = "u1"
    secret.update(overrides)
    return secret


def test_kubeadms_token_secret() -> None:
    now = datetime.datetime(2026, 12, 6, 3, 0, tzinfo=datetime.UTC)
    secret = token_secret(TOKEN, now=now)
    assert secret["metadata"] == {"name": "bootstrap-token-abcdef", "namespace": "kube-system"}
    assert secret["type"] == "bootstrap.kubernetes.io/token"
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data == {"token-id": "abcdef", "token-secret": "0123456789abcdef", "expiration": "2026-12-07T03:00:00Z",
                    "usage-bootstrap-signing": "true", "usage-bootstrap-authentication": "true",
                    "auth-extra-groups": DEFAULT_GROUP}
    assert "expiration" not in token_secret(TOKEN, ttl=None)["data"]


def test_token_secret_rules() -> None:
    assert str(bt.token_secret(_secret(), bt.USAGE_SIGNING)) == str(TOKEN)
    assert bt.token_secret(token_secret(TOKEN, usages=["authentication"]), bt.USAGE_SIGNING) is None
    expired = token_secret(TOKEN, ttl=datetime.timedelta(hours=-1))
    assert bt.has_expired(expired) and bt.token_secret(expired, bt.USAGE_SIGNING) is None
    misnamed = _secret()
    misnamed["metadata"]["name"] = "bootstrap-token-zzzzzz"
    assert bt.token_secret(misnamed, bt.USAGE_SIGNING) is None
    assert bt.secret_groups(_secret()) == ("system:bootstrappers", DEFAULT_GROUP)
    with pytest.raises(bt.InvalidToken):
        bt.secret_groups(token_secret(TOKEN, groups=["system:masters"]))


def _authenticate(secret: dict[str, Any] | None, token: str = str(TOKEN)) -> UserInfo | None:
    authenticator = BootstrapTokenAuthenticator(lambda ns, name: secret if (ns, name) == (
        "kube-system", "bootstrap-token-abcdef") else None)
    return asyncio.run(authenticator.authenticate_token(token))


def test_bootstrap_token_authenticator() -> None:
    assert _authenticate(_secret()) == UserInfo("system:bootstrap:abcdef", ("system:bootstrappers", DEFAULT_GROUP))
    assert _authenticate(_secret(), "abcdef.0123456789abcdee") is None  # wrong secret
    assert _authenticate(None) is None
    assert _authenticate(_secret(), "not-a-bootstrap-token") is None
    assert _authenticate(token_secret(TOKEN, ttl=datetime.timedelta(seconds=-1))) is None
    assert _authenticate(token_secret(TOKEN, usages=["signing"])) is None
    assert _authenticate(_secret(type="Opaque")) is None
    deleting = _secret()
    deleting["metadata"]["deletionTimestamp"] = "2026-12-06T03:00:00Z"
    assert _authenticate(deleting) is None


def test_signer_keeps_one_signature_per_token() -> None:
    data = {"kubeconfig": "k", "jws-kubeconfig-gone00": "old"}
    signed = signed_data(data, [TOKEN])
    assert signed == {"kubeconfig": "k", "jws-kubeconfig-abcdef": bt.compute_detached_signature("k", TOKEN.id,
                                                                                                 TOKEN.secret)}


def test_ca_pin_is_the_sha256_of_the_subject_public_key_info(tmp_path: Path) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path / "ca", "kubernetes")
    cert = x509.load_pem_x509_certificate(ca.pair.cert.read_bytes())
    spki = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    pin = ca_cert_hash(cert)
    assert pin == "sha256:" + hashlib.sha256(spki).hexdigest()
    check_pins(ca.pair.cert.read_bytes(), parse_pins([pin.upper().replace("SHA256", "sha256")]))
    other = CertificateAuthority.load_or_create(tmp_path / "other", "kubernetes")
    with pytest.raises(DiscoveryError, match=r"cluster CA found in cluster-info ConfigMap is invalid: none of the "
                                             r"public keys \"sha256:[0-9a-f]{64}\" are pinned"):
        check_pins(other.pair.cert.read_bytes(), {pin})
    with pytest.raises(DiscoveryError, match="expected a 32 byte SHA-256 hash, found 2 bytes"):
        parse_pins(["sha256:abcd"])
    with pytest.raises(DiscoveryError, match="unknown hash format 'md5'"):
        parse_pins(["md5:" + "0" * 64])


def test_the_signer_and_the_cleaner_are_off_unless_named() -> None:
    assert "bootstrap-signer-controller" not in enabled_controllers(["*"])
    assert {"bootstrap-signer-controller", "token-cleaner-controller"} <= set(
        enabled_controllers(["*", "bootstrapsigner", "tokencleaner"]))


def test_kubelet_csr_name_and_client_config(tmp_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    usages = usages_for(key)
    assert usages == ["digital signature", "client auth"]
    name = digested_name(key, "system:node:n1", ["system:nodes"], usages)
    assert name.startswith("node-csr-") and name == digested_name(key, "system:node:n1", ["system:nodes"], usages)
    assert name != digested_name(key, "system:node:n", ["1system:nodes"], usages)
    ca = CertificateAuthority.load_or_create(tmp_path / "ca", "kubernetes")
    pair = ca.issue(tmp_path / "kubelet", "system:node:n1", organizations=["system:nodes"], client=True)
    kubeconfig = tmp_path / "kubelet.conf"
    assert not client_config_valid(kubeconfig)
    write_kubeconfig(kubeconfig, "https://127.0.0.1:6443", ca=ca.pair.cert, client=pair)
    assert client_config_valid(kubeconfig)
    write_kubeconfig(kubeconfig, "https://127.0.0.1:6443", ca=ca.pair.cert, token="abcdef.0123456789abcdef")
    assert not client_config_valid(kubeconfig)  # no client certificate: bootstrap
