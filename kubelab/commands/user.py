"""`kubelab user add NAME [--group G]...`: a kubeconfig for a new user, through the CertificateSigningRequest API.

What an administrator does by hand on a kubeadm cluster (the Kubernetes docs' "normal user" recipe), in one step:
a fresh key, a CSR with CN ``NAME`` and O the groups for the ``kubernetes.io/kube-apiserver-client`` signer,
approved as cluster admin (reason ``KubelabUserAdd``), and once the controller-manager's signer has issued it, a
kubeconfig with the certificate: ``<data-dir>/users/NAME.kubeconfig`` (0600; the key and certificate beside the
cluster's under ``pki/users/``). The CSR stays, so ``kubectl get csr`` shows who was given access and when.
"""

from __future__ import annotations

import argparse
import base64
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubeclient.config import ConfigError, load_kubeconfig
from kubelab.adminapi import ApiError, answer
from kubelab.commands.up import DEFAULT_DATA_DIR
from kubelab.kubeconfig import write_kubeconfig
from kubelab.pki import KeyPair, write_private

__all__ = ["add_arguments", "run"]

CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
SIGNER = "kubernetes.io/kube-apiserver-client"
ISSUE_TIMEOUT = 30.0


UserError = ApiError  # why no kubeconfig could be made (shown as is)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="{add}")
    add = actions.add_parser("add", help="make a client certificate and a kubeconfig for a user",
                             description="make a client certificate (through a CertificateSigningRequest) and a "
                                         "kubeconfig for a user")
    add.add_argument("name", metavar="NAME", help="the user name (the certificate's CN)")
    add.add_argument("--group", action="append", default=[], metavar="G",
                     help="a group the user is in (the certificate's O); repeat for more")
    add.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="the data dir given to `kubelab up`")
    add.add_argument("--expiration-seconds", type=int, default=None, metavar="N",
                     help="requested validity (at least 600; default: the signer's, 1 year)")
    add.add_argument("-o", "--output", default=None, metavar="FILE",
                     help="where to write the kubeconfig (default <data-dir>/users/NAME.kubeconfig)")


def certificate_request(name: str, groups: list[str]) -> tuple[bytes, bytes]:
    """(key PEM, CSR PEM) for CN ``name`` and O ``groups``."""
    key = ec.generate_private_key(ec.SECP256R1())
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, name))
    csr = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attributes)).sign(key, hashes.SHA256())
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return key_pem, csr.public_bytes(serialization.Encoding.PEM)


def issue(client: httpx.Client, name: str, request: bytes, expiration: int | None) -> tuple[str, bytes]:
    """Create, approve and wait for the CSR; (its name, the certificate PEM)."""
    spec: dict[str, Any] = {"request": base64.b64encode(request).decode(), "signerName": SIGNER,
            "usages": ["digital signature", "key encipherment", "client auth"]}
    if expiration is not None:
        spec["expirationSeconds"] = expiration
    body = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"generateName": f"{name}-"}, "spec": spec}
    created = answer(client.post(CSRS, json=body))
    csr_name = created["metadata"]["name"]
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    created.setdefault("status", {})["conditions"] = [
        {"type": "Approved", "status": "True", "reason": "KubelabUserAdd", "lastUpdateTime": now,
         "message": f"This CSR was approved by kubelab user add {name}."}]
    answer(client.put(f"{CSRS}/{csr_name}/approval", json=created))
    deadline = time.monotonic() + ISSUE_TIMEOUT
    while time.monotonic() < deadline:
        csr = answer(client.get(f"{CSRS}/{csr_name}"))
        status = csr.get("status") or {}
        failed = [c for c in status.get("conditions") or [] if c.get("type") == "Failed"]
        if failed:
            raise UserError(f"the signer refused certificatesigningrequest {csr_name}: {failed[0].get('message')}")
        if status.get("certificate"):
            return csr_name, base64.b64decode(status["certificate"])
        time.sleep(0.2)
    raise UserError(f"certificatesigningrequest {csr_name} is approved but was not issued within "
                    f"{ISSUE_TIMEOUT:.0f}s: is the controller-manager running with --cluster-signing-cert-file?")


def run(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir).absolute()
    admin = data_dir / "kubeconfig"
    ca = data_dir / "pki" / "ca.crt"
    try:
        config = load_kubeconfig(admin)
        if not config.host.startswith("https://") or not ca.is_file():
            raise UserError(f"{admin} is not an HTTPS kubeconfig of a kubelab cluster with a CA at {ca}")
        key_pem, request = certificate_request(args.name, args.group)
        with httpx.Client(base_url=config.host, verify=config.ssl_context() or True, timeout=10.0) as client:
            csr_name, cert_pem = issue(client, args.name, request, args.expiration_seconds)
    except (ConfigError, UserError, httpx.HTTPError) as err:
        print(f"kubelab user add: {err}", file=sys.stderr)
        return 1
    pair = KeyPair.at(data_dir / "pki" / "users" / args.name)
    write_private(pair.key, key_pem)
    write_private(pair.cert, cert_pem, mode=0o644)
    output = Path(args.output) if args.output else data_dir / "users" / f"{args.name}.kubeconfig"
    write_kubeconfig(output, config.host, ca=ca, client=pair)
    groups = f" in {', '.join(args.group)}" if args.group else ""
    print(f"user {args.name}{groups}: certificatesigningrequest {csr_name} approved and issued")
    print(f"  kubectl --kubeconfig {output} auth whoami")
    return 0
