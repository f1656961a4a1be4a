"""CertificateSigningRequests end to end: kubectl 1.32 and the Python client against a cluster whose
controller-manager signs with the cluster CA (csrsigning) and approves kubelets' client certificates (csrapproving);
``kubectl certificate approve|deny``; ``kubelab user add``; the certificate issued is a working credential."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes import client as k8s

from conftest import KUBECTL, ROOT
from kubelab.api import Cluster
from kubelab.kubeconfig import write_kubeconfig
from kubelab.pki import KeyPair
from kubelab.pytest_plugin import Clusters
from support.wait import wait_for

SIGNER = "kubernetes.io/kube-apiserver-client"
KUBELET_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"


@pytest.fixture(scope="module")
def cluster(kubelab_clusters: Clusters) -> Cluster:
    """The session's cluster of this shape, shared by test_join and test_certificatesigningrequests."""
    return kubelab_clusters(nodes=0, components=("apiserver", "controller-manager"))


def kubectl(cluster: Cluster, *args: str, input: str | None = None, kubeconfig: Path | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig or cluster.kubeconfig), *args], input=input,
                          capture_output=True, text=True, timeout=60, env={"HOME": str(cluster.data_dir)})
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{done.stderr}")
    return done


def make_request(common_name: str, organizations: list[str]) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    names.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    csr = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names)).sign(key, hashes.SHA256())
    return (key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()), csr.public_bytes(serialization.Encoding.PEM))


def csr_manifest(name: str, request: bytes, signer: str = SIGNER, usages: tuple[str, ...] = ("client auth",),
                 **spec: object) -> str:
    return json.dumps({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                       "metadata": {"name": name}, "spec": {"request": base64.b64encode(request).decode(),
                                                            "signerName": signer, "usages": list(usages), **spec}})


def get_csr(cluster: Cluster, name: str) -> dict:  # type: ignore[type-arg]
    return json.loads(kubectl(cluster, "get", "csr", name, "-o", "json").stdout)


def issued(cluster: Cluster, name: str) -> x509.Certificate:
    encoded = wait_for(lambda: (get_csr(cluster, name).get("status") or {}).get("certificate"), timeout=30,
                       what=f"csr {name} issued")
    return x509.load_pem_x509_certificate(base64.b64decode(encoded))


def test_approve_issues_a_working_client_certificate(cluster: Cluster, tmp_path: Path) -> None:
    name = f"jane-{uuid.uuid4().hex[:6]}"
    key, request = make_request("jane", ["dev", "qa"])
    kubectl(cluster, "create", "-f", "-", input=csr_manifest(name, request, expirationSeconds=3600))
    rows = [line.split() for line in kubectl(cluster, "get", "csr", name).stdout.splitlines()]
    assert rows[0] == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
    assert rows[1][0] == name and rows[1][2:] == [SIGNER, "kubernetes-admin", "60m", "Pending"]
    spec = get_csr(cluster, name)["spec"]  # who asked, set by the apiserver from the request's credentials
    assert (spec["username"], spec["groups"]) == ("kubernetes-admin", ["system:masters", "system:authenticated"])

    out = kubectl(cluster, "certificate", "approve", name).stdout
    assert out == f"certificatesigningrequest.certificates.k8s.io/{name} approved\n"
    cert = issued(cluster, name)
    assert kubectl(cluster, "get", "csr", name, "--no-headers").stdout.split()[-1] == "Approved,Issued"
    assert cert.subject.rfc4514_string() == "CN=jane,O=qa,O=dev"
    assert cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == \
        x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH])
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert 3600 <= lifetime.total_seconds() <= 3600 + 301  # requested hour, backdated five minutes

    pair = KeyPair(tmp_path / "jane.crt", tmp_path / "jane.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(key)
    conf = write_kubeconfig(tmp_path / "jane.conf", cluster.secure_url, ca=cluster.data_dir / "pki" / "ca.crt",
                            client=pair)
    whoami = [line.split(None, 1) for line in kubectl(cluster, "auth", "whoami", kubeconfig=conf).stdout.splitlines()]
    assert whoami[1:] == [["Username", "jane"], ["Groups", "[dev qa system:authenticated]"]]

    again = kubectl(cluster, "certificate", "deny", name, check=False)
    assert again.returncode == 1 and f'certificate signing request "{name}" is already Approved' in again.stderr


def test_deny(cluster: Cluster) -> None:
    name = f"mallory-{uuid.uuid4().hex[:6]}"
    kubectl(cluster, "create", "-f", "-", input=csr_manifest(name, make_request("mallory", [])[1]))
    kubectl(cluster, "certificate", "deny", name)
    csr = get_csr(cluster, name)
    [condition] = csr["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == ("Denied", "True", "KubectlDeny")
    assert "certificate" not in csr["status"]
    assert kubectl(cluster, "get", "csr", name, "--no-headers").stdout.split()[-1] == "Denied"


def test_the_signer_refuses_a_serving_usage(cluster: Cluster) -> None:
    name = f"server-{uuid.uuid4().hex[:6]}"
    manifest = csr_manifest(name, make_request("web", [])[1], usages=("server auth", "client auth"))
    kubectl(cluster, "create", "-f", "-", input=manifest)
    kubectl(cluster, "certificate", "approve", name)
    failed = wait_for(lambda: [c for c in get_csr(cluster, name)["status"]["conditions"] if c["type"] == "Failed"],
                      timeout=30, what="Failed condition")
    assert (failed[0]["reason"], failed[0]["message"]) == ("SignerValidationFailure",
                                                           "invalid usage for client certificate: server auth")
    assert kubectl(cluster, "get", "csr", name, "--no-headers").stdout.split()[-1] == "Approved,Failed"


def test_a_kubelet_client_certificate_is_approved_by_the_controller_manager(cluster: Cluster) -> None:
    name = f"node-csr-{uuid.uuid4().hex[:6]}"
    manifest = csr_manifest(name, make_request("system:node:node09", ["system:nodes"])[1], signer=KUBELET_SIGNER,
                            usages=("digital signature", "client auth"))
    kubectl(cluster, "create", "-f", "-", input=manifest)
    cert = issued(cluster, name)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:node09"
    [condition] = [c for c in get_csr(cluster, name)["status"]["conditions"] if c["type"] == "Approved"]
    assert (condition["reason"], condition["message"]) == (
        "AutoApproved", "Auto approving kubelet client certificate after SubjectAccessReview.")


def test_validation(cluster: Cluster) -> None:
    request = make_request("x", [])[1]
    cases = [
        (csr_manifest("bad-request", b"not a csr"),
         'spec.request: Invalid value: "bm90IGEgY3Ny": PEM block type must be CERTIFICATE REQUEST'),
        (csr_manifest("short", request, expirationSeconds=599),
         "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)"),
        (csr_manifest("no-usages", request, usages=()), "spec.usages: Required value"),
        (csr_manifest("no-signer", request, signer=""), "spec.signerName: Required value"),
    ]
    for manifest, message in cases:
        result = kubectl(cluster, "create", "-f", "-", input=manifest, check=False)
        assert result.returncode == 1 and message in result.stderr, result.stderr


def test_python_client_approval(cluster: Cluster) -> None:
    name = f"py-{uuid.uuid4().hex[:6]}"
    with cluster.api_client() as api:
        certificates = k8s.CertificatesV1Api(api)
        certificates.create_certificate_signing_request(k8s.V1CertificateSigningRequest(
            metadata=k8s.V1ObjectMeta(name=name),
            spec=k8s.V1CertificateSigningRequestSpec(request=base64.b64encode(make_request("py", [])[1]).decode(),
                                                     signer_name=SIGNER, usages=["client auth"])))
        csr = certificates.read_certificate_signing_request(name)
        csr.status.conditions = [k8s.V1CertificateSigningRequestCondition(type="Approved", status="True",
                                                                          reason="ByPython", message="ok")]
        approved = certificates.replace_certificate_signing_request_approval(name, csr)
        assert approved.status.conditions[0].last_transition_time is not None
        assert wait_for(lambda: certificates.read_certificate_signing_request(name).status.certificate, timeout=30,
                        what="certificate")


def test_kubelab_user_add(cluster: Cluster) -> None:
    done = subprocess.run([sys.executable, "-m", "kubelab", "user", "add", "alice", "--group", "dev",
                           "--data-dir", str(cluster.data_dir)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    conf = cluster.data_dir / "users" / "alice.kubeconfig"
    assert f"kubectl --kubeconfig {conf} auth whoami" in done.stdout
    assert oct(conf.stat().st_mode & 0o777) == "0o600"
    whoami = [line.split(None, 1) for line in kubectl(cluster, "auth", "whoami", kubeconfig=conf).stdout.splitlines()]
    assert whoami[1:] == [["Username", "alice"], ["Groups", "[dev system:authenticated]"]]
    rows = kubectl(cluster, "get", "csr", "--no-headers").stdout.splitlines()
    assert any(row.startswith("alice-") and row.split()[-1] == "Approved,Issued" for row in rows)
