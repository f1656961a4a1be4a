"""Token discovery for `kubelab join` (kubeadm's ``discovery/token`` and ``util/pubkeypin``).

A node that joins trusts nothing yet: not the apiserver's certificate, not what it answers. It holds two secrets
given out of band, the bootstrap token and the CA's public-key pin, and with them:

1. fetches ``kube-public/cluster-info`` anonymously over TLS *without* verifying the server (it could not: it does
   not have the CA yet);
2. checks that the ConfigMap carries ``jws-kubeconfig-<token id>`` and that it is the token's HS256 signature of
   the ConfigMap's ``kubeconfig``: only a cluster that knows the token secret could have made it (the bootstrap
   signer of the controller-manager did);
3. checks the CA in that kubeconfig against the pin: ``sha256:`` and the hex SHA-256 of the CA certificate's DER
   SubjectPublicKeyInfo (``ca_cert_hash``, what `kubelab token create --print-join-command` prints);
4. fetches ``cluster-info`` a second time, now verifying the server with that CA, and requires the same kubeconfig.

Only then does it use the kubeconfig's server and CA, with the token as its credential, for TLS bootstrapping.
Without a pin (``--discovery-token-unsafe-skip-ca-verification``) steps 3 and 4 are skipped, as kubeadm does. The
signature may be missing for a moment after a token is made (the signer has not run yet): the fetch is retried
until ``timeout``. Errors are ``DiscoveryError`` with kubeadm's messages.
"""

from __future__ import annotations

import base64
import hashlib
import ssl
import time
from dataclasses import dataclass
from typing import Any

import httpx
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from apimachinery import bootstraptoken as bt

__all__ = ["ClusterInfo", "DiscoveryError", "ca_cert_hash", "check_pins", "discover", "parse_pins"]

CLUSTER_INFO_PATH = f"/api/v1/namespaces/{bt.KUBE_PUBLIC}/configmaps/{bt.CLUSTER_INFO}"
RETRY_SECONDS = 1.0


class DiscoveryError(RuntimeError):
    """Why the cluster cannot be trusted or reached (kubeadm's message)."""


@dataclass(frozen=True)
class ClusterInfo:
    """What discovery found and verified: the apiserver to bootstrap against and its CA (PEM)."""

    server: str
    ca_pem: bytes


def ca_cert_hash(cert: x509.Certificate) -> str:
    """kubeadm's ``pubkeypin.Hash``: ``sha256:<hex of the SHA-256 of the DER SubjectPublicKeyInfo>``."""
    spki = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "sha256:" + hashlib.sha256(spki).hexdigest()


def parse_pins(pins: list[str]) -> set[str]:
    """The pins as kubeadm's ``Set.Allow`` takes them (lower-cased hex); DiscoveryError for a malformed one."""
    out = set()
    for pin in pins:
        parts = pin.split(":")
        if len(parts) != 2:
            raise DiscoveryError('invalid hash, expected "format:hex-value". Known format(s) are: sha256')
        form, value = parts
        if form.lower() != "sha256":
            raise DiscoveryError(f"unknown hash format {form!r}. Known format(s) are: sha256")
        if len(value) // 2 != 32:
            raise DiscoveryError(f"expected a 32 byte SHA-256 hash, found {len(value) // 2} bytes")
        try:
            bytes.fromhex(value)
        except ValueError:
            raise DiscoveryError("could not decode SHA-256 from hex") from None
        out.add(f"sha256:{value.lower()}")
    return out


def check_pins(ca_pem: bytes, pins: set[str]) -> None:
    """kubeadm's ``validateClusterCA``: one of the CA certificates must have a pinned public key."""
    try:
        certs = x509.load_pem_x509_certificates(ca_pem)
    except ValueError as err:
        raise DiscoveryError(f"failed to parse cluster CA from the {bt.CLUSTER_INFO} ConfigMap: {err}") from None
    hashes = [ca_cert_hash(cert) for cert in certs]
    if not any(h in pins for h in hashes):
        raise DiscoveryError(f"cluster CA found in {bt.CLUSTER_INFO} ConfigMap is invalid: none of the public keys "
                             f"\"{':'.join(hashes)}\" are pinned")


def _fetch(endpoint: str, verify: ssl.SSLContext | bool, token: bt.BootstrapToken, timeout: float) -> dict[str, str]:
    """cluster-info's data once it carries the token's signature (kubeadm's ``getClusterInfo``), until ``timeout``."""
    deadline = time.monotonic() + timeout
    last = ""
    with httpx.Client(base_url=f"https://{endpoint}", verify=verify, timeout=10.0) as client:
        while True:
            try:
                response = client.get(CLUSTER_INFO_PATH)
                if response.status_code == 200:
                    data: dict[str, str] = response.json().get("data") or {}
                    if data.get(bt.JWS_SIGNATURE_KEY_PREFIX + token.id):
                        return data
                    last = f"could not find a JWS signature in the cluster-info ConfigMap for token ID {token.id!r}"
                else:
                    last = f"failed to request the cluster-info ConfigMap: {response.status_code} {response.text[:200]}"
            except httpx.HTTPError as err:
                last = f"failed to request the cluster-info ConfigMap: {err}"
            if time.monotonic() >= deadline:
                raise DiscoveryError(f"{last}. This token id {token.id!r} may be invalid for this cluster or it has "
                                     "expired. Use \"kubelab token create\" on the control-plane node to create a new "
                                     "valid token")
            time.sleep(RETRY_SECONDS)


def _verified_kubeconfig(data: dict[str, str], token: bt.BootstrapToken) -> str:
    """kubeadm's ``validateClusterInfoToken``: the kubeconfig, once its signature is the token's."""
    kubeconfig = data.get(bt.KUBECONFIG_KEY)
    if not kubeconfig:
        raise DiscoveryError(f"there is no {bt.KUBECONFIG_KEY} key in the {bt.CLUSTER_INFO} ConfigMap. This API "
                             "Server isn't set up for token bootstrapping, can't connect")
    signature = data.get(bt.JWS_SIGNATURE_KEY_PREFIX + token.id, "")
    if not bt.detached_signature_valid(signature, kubeconfig, token.id, token.secret):
        raise DiscoveryError("failed to verify JWS signature of received cluster info object, can't trust this "
                             "API Server")
    return kubeconfig


def _cluster(kubeconfig: str) -> ClusterInfo:
    try:
        doc: dict[str, Any] = yaml.safe_load(kubeconfig) or {}
        clusters = doc.get("clusters") or []
    except yaml.YAMLError as err:
        raise DiscoveryError(f"couldn't parse the kubeconfig file in the {bt.CLUSTER_INFO} ConfigMap: {err}") from None
    if len(clusters) != 1:
        raise DiscoveryError(f"expected the kubeconfig file in the {bt.CLUSTER_INFO} ConfigMap to have a single "
                             f"cluster, but it had {len(clusters)}")
    cluster = clusters[0].get("cluster") or {}
    return ClusterInfo(str(cluster.get("server") or ""),
                       base64.b64decode(cluster.get("certificate-authority-data") or ""))


def discover(endpoint: str, token: bt.BootstrapToken, pins: set[str], *, timeout: float = 300.0) -> ClusterInfo:
    """The verified cluster-info of the apiserver at ``endpoint`` (``host:port``); see the module docstring."""
    insecure = _verified_kubeconfig(_fetch(endpoint, False, token, timeout), token)
    info = _cluster(insecure)
    if not pins:
        return info
    check_pins(info.ca_pem, pins)
    context = ssl.create_default_context(cadata=info.ca_pem.decode())
    secure = _verified_kubeconfig(_fetch(endpoint, context, token, timeout), token)
    if secure != insecure:
        raise DiscoveryError(f"the second kubeconfig from the {bt.CLUSTER_INFO} ConfigMap (using validated TLS) was "
                             "different from the first")
    return info
