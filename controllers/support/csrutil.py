"""What the CSR controllers share (kube's ``pkg/apis/certificates/helpers.go`` and ``pkg/controller/certificates``):
reading a CertificateSigningRequest's request and approval, and the rule a kubelet client certificate follows.

Pure functions over the wire shape; the controllers keep the I/O.
"""

from __future__ import annotations

import base64
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from apimachinery.meta import Object, now_rfc3339

KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
KUBE_APISERVER_CLIENT_KUBELET = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_CLIENT_USAGES = frozenset({"digital signature", "key encipherment", "client auth"})
KUBELET_CLIENT_USAGES_NO_RSA = frozenset({"digital signature", "client auth"})


def parse_request(csr: Object) -> x509.CertificateSigningRequest:
    """The PKCS#10 request of ``spec.request`` (base64 of PEM); ValueError when it does not parse."""
    return x509.load_pem_x509_csr(base64.b64decode((csr.get("spec") or {}).get("request") or ""))


def conditions(csr: Object) -> list[dict[str, Any]]:
    return list((csr.get("status") or {}).get("conditions") or [])


def approval(csr: Object) -> tuple[bool, bool]:
    """(approved, denied): kube's ``GetCertApprovalCondition``."""
    kinds = {c.get("type") for c in conditions(csr)}
    return "Approved" in kinds, "Denied" in kinds


def has_failed(csr: Object) -> bool:
    return any(c.get("type") == "Failed" for c in conditions(csr))


def condition(kind: str, reason: str, message: str) -> dict[str, Any]:
    """A ``True`` condition stamped now (``lastUpdateTime`` and ``lastTransitionTime``)."""
    now = now_rfc3339()
    return {"type": kind, "status": "True", "reason": reason, "message": message, "lastUpdateTime": now,
            "lastTransitionTime": now}


def subject(request: x509.CertificateSigningRequest, oid: x509.ObjectIdentifier) -> list[str]:
    return [str(attribute.value) for attribute in request.subject.get_attributes_for_oid(oid)]


def kubelet_client_problem(request: x509.CertificateSigningRequest, usages: list[str]) -> str | None:
    """Why the request is not a kubelet client certificate (kube's ``ValidateKubeletClientCSR``), or None."""
    if subject(request, NameOID.ORGANIZATION_NAME) != ["system:nodes"]:
        return "subject organization is not system:nodes"
    try:
        names = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        names = None
    if names is not None:
        for kind, what in ((x509.DNSName, "DNS"), (x509.RFC822Name, "Email"), (x509.IPAddress, "IP"),
                           (x509.UniformResourceIdentifier, "URI")):
            if names.get_values_for_type(kind):
                return f"{what} subjectAltNames are not allowed"
    common_names = subject(request, NameOID.COMMON_NAME)
    if not common_names or not common_names[0].startswith("system:node:"):
        return "subject common name does not begin with 'system:node:'"
    if set(usages) not in (KUBELET_CLIENT_USAGES, KUBELET_CLIENT_USAGES_NO_RSA) or len(set(usages)) != len(usages):
        return f"usages did not match [{' '.join(sorted(KUBELET_CLIENT_USAGES))}]"  # Go's %v of a []string
    return None
