"""CertificateSigningRequests (certificates.k8s.io/v1): ask the cluster's signers for a certificate.

As kube-apiserver's ``pkg/registry/certificates/certificates`` and ``pkg/apis/certificates/validation``:

* create: the status is dropped and ``spec.username``/``uid``/``groups``/``extra`` are set from the requesting
  user (a client cannot claim to be someone else); the request must be a PEM ``CERTIFICATE REQUEST`` with a
  valid signature, ``usages`` known and not repeated, ``signerName`` of the form ``example.com/name``,
  ``expirationSeconds`` at least 600;
* update: spec and status are kept (only metadata changes);
* ``/approval``: only the conditions change — ``Approved`` and ``Denied`` (status ``True``) are exclusive and, once
  there, may not be removed (``kubectl certificate approve|deny``);
* ``/status``: only the certificate and the other conditions change; the approval stays as it was, and a
  certificate, once issued, may not change (the signer's write).

``kubectl get csr`` shows NAME, AGE, SIGNERNAME, REQUESTOR, REQUESTEDDURATION and CONDITION
(``Pending``, ``Approved,Issued``, ``Denied`` …).
"""

from __future__ import annotations

import base64
import binascii
import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from apimachinery.errors import Cause
from apimachinery.validation import duplicate, forbidden, invalid, is_dns1123_subdomain, not_supported, required

from ..authentication import request_user
from .strategy import AGE_COLUMN, NAME_COLUMN, Object, Strategy, TableColumn, human_duration
from .tables import since

KNOWN_USAGES = (
    "any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment",
    "decipher only", "digital signature", "email protection", "encipher only", "ipsec end system", "ipsec tunnel",
    "ipsec user", "key agreement", "key encipherment", "microsoft sgc", "netscape sgc", "ocsp signing", "s/mime",
    "server auth", "signing", "timestamping",
)
APPROVAL_TYPES = ("Approved", "Denied")
TRUE_ONLY_TYPES = ("Approved", "Denied", "Failed")
MIN_EXPIRATION_SECONDS = 600


def parse_request(encoded: Any) -> x509.CertificateSigningRequest:
    """``spec.request`` (base64 of PEM, as JSON carries bytes) → the request; ValueError says what is wrong."""
    try:
        pem = base64.b64decode(encoded or "", validate=True)
    except (binascii.Error, TypeError) as err:
        raise ValueError(f"illegal base64 data: {err}") from None
    if b"-----BEGIN CERTIFICATE REQUEST-----" not in pem:
        raise ValueError("PEM block type must be CERTIFICATE REQUEST")
    try:
        csr = x509.load_pem_x509_csr(pem)
    except ValueError as err:
        raise ValueError(f"x509: malformed certificate request: {err}") from None
    if not csr.is_signature_valid:
        raise ValueError("x509: ECDSA verification failure")
    if not isinstance(csr.public_key(), (rsa.RSAPublicKey, ec.EllipticCurvePublicKey, ed25519.Ed25519PublicKey)):
        raise ValueError("x509: unsupported public key type")
    return csr


def conditions_of(obj: Object) -> list[dict[str, Any]]:
    return list((obj.get("status") or {}).get("conditions") or [])


def has_condition(obj: Object, kind: str) -> bool:
    return any(c.get("type") == kind for c in conditions_of(obj))


def csr_condition(obj: Object) -> str:
    """kubectl's CONDITION column (kube's ``extractCSRStatus``)."""
    text = "Denied" if has_condition(obj, "Denied") else "Approved" if has_condition(obj, "Approved") else "Pending"
    if has_condition(obj, "Failed"):
        text += ",Failed"
    if (obj.get("status") or {}).get("certificate"):
        text += ",Issued"
    return text


def _human_seconds(seconds: int) -> str:
    """``duration.HumanDuration`` for a requested duration."""
    now = datetime.now(UTC).replace(microsecond=0)
    return human_duration((now - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ"), now)


def _validate_signer_name(name: Any) -> list[Cause]:
    if not name:
        return [required("spec.signerName")]
    domain, slash, path = str(name).partition("/")
    if not slash or not path or is_dns1123_subdomain(domain):
        return [invalid("spec.signerName", name, "must be a fully qualified domain and path of the form "
                                                 "'example.com/signer-name'")]
    return []


def _validate_conditions(obj: Object) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, condition in enumerate(conditions_of(obj)):
        path = f"status.conditions[{i}]"
        kind = condition.get("type") or ""
        if not kind:
            causes.append(required(f"{path}.type"))
        if kind in TRUE_ONLY_TYPES and condition.get("status") != "True":
            causes.append(not_supported(f"{path}.status", condition.get("status") or "", ["True"]))
        elif condition.get("status") not in ("True", "False", "Unknown"):
            causes.append(not_supported(f"{path}.status", condition.get("status") or "",
                                        ["False", "True", "Unknown"]))
        if kind in seen:
            causes.append(duplicate(f"{path}.type", kind))
        seen.add(kind)
    if {"Approved", "Denied"} <= seen:
        causes.append(invalid("status.conditions", "Denied", "Approved and Denied conditions are mutually "
                                                             "exclusive"))
    return causes


def _validate_certificate(obj: Object) -> list[Cause]:
    encoded = (obj.get("status") or {}).get("certificate")
    if not encoded:
        return []
    try:
        x509.load_pem_x509_certificates(base64.b64decode(encoded, validate=True))
    except (ValueError, binascii.Error):
        return [invalid("status.certificate", "<certificate data>", "must contain at least one CERTIFICATE PEM "
                                                                    "block")]
    return []


def _stamp_transitions(new: Object, old: Object) -> None:
    """A condition without ``lastTransitionTime`` keeps the old one if its status did not change, else gets now."""
    before = {c.get("type"): c for c in conditions_of(old)}
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for condition in (new.get("status") or {}).get("conditions") or []:
        if condition.get("lastTransitionTime"):
            continue
        previous = before.get(condition.get("type"))
        same = previous is not None and previous.get("status") == condition.get("status")
        condition["lastTransitionTime"] = (previous or {}).get("lastTransitionTime") if same else now
        if not condition["lastTransitionTime"]:
            condition["lastTransitionTime"] = now


class CertificateSigningRequestStrategy(Strategy):
    group = "certificates.k8s.io"
    kind = "CertificateSigningRequest"
    resource = "certificatesigningrequests"
    singular = "certificatesigningrequest"
    namespaced = False
    short_names = ("csr",)
    subresources = ("approval", "status")
    bumps_generation = False

    def name_validator(self, name: str) -> list[str]:
        return []  # "We don't care what you call your certificate requests." (kube's ValidateCertificateRequestName)

    def prepare_for_create(self, obj: Object) -> None:
        obj["status"] = {}  # a struct in Go: always there, if empty
        user = request_user()
        spec = obj.setdefault("spec", {})
        for key in ("username", "uid", "groups", "extra"):
            spec.pop(key, None)
        spec.update(user.to_dict())  # the same fields as authentication.k8s.io's UserInfo

    def validate(self, obj: Object) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        try:
            parse_request(spec.get("request"))
        except ValueError as err:
            causes.append(invalid("spec.request", spec.get("request") or "", str(err)))
        usages = list(spec.get("usages") or [])
        if not usages:
            causes.append(required("spec.usages"))
        seen: set[str] = set()
        for i, usage in enumerate(usages):
            if usage not in KNOWN_USAGES:
                causes.append(not_supported(f"spec.usages[{i}]", usage, KNOWN_USAGES))
            elif usage in seen:
                causes.append(duplicate(f"spec.usages[{i}]", usage))
            seen.add(usage)
        causes += _validate_signer_name(spec.get("signerName"))
        seconds = spec.get("expirationSeconds")
        if seconds is not None and seconds < MIN_EXPIRATION_SECONDS:
            causes.append(invalid("spec.expirationSeconds", seconds,
                                  "may not specify a duration less than 600 seconds (10 minutes)"))
        return causes + _validate_conditions(obj) + _validate_certificate(obj)

    def prepare_for_update(self, new: Object, old: Object) -> None:
        super().prepare_for_update(new, old)  # the status stays
        new["spec"] = copy.deepcopy(old.get("spec") or {})

    # --- /approval ---------------------------------------------------------------------------------------------
    def prepare_for_approval_update(self, new: Object, old: Object) -> None:
        """Only the conditions come from the body; spec and certificate stay."""
        conditions = conditions_of(new)
        new["spec"] = copy.deepcopy(old.get("spec") or {})
        status = copy.deepcopy(old.get("status") or {})
        status["conditions"] = conditions
        if not conditions:
            status.pop("conditions")
        new["status"] = status
        _stamp_transitions(new, old)

    def validate_approval_update(self, new: Object, old: Object) -> list[Cause]:
        causes = self.validate(new)
        for kind in APPROVAL_TYPES:
            if has_condition(old, kind) and not has_condition(new, kind):
                causes.append(forbidden("status.conditions", f'updates may not remove a condition of type "{kind}"'))
        return causes

    # --- /status -----------------------------------------------------------------------------------------------
    def prepare_for_status_update(self, new: Object, old: Object) -> None:
        """The signer's write: the certificate and the non-approval conditions; the approval stays as it was."""
        super().prepare_for_status_update(new, old)
        status = new.setdefault("status", {})
        kept = [c for c in conditions_of(old) if c.get("type") in APPROVAL_TYPES]
        others = [c for c in conditions_of(new) if c.get("type") not in APPROVAL_TYPES]
        status["conditions"] = kept + others
        if not status["conditions"]:
            status.pop("conditions")
        _stamp_transitions(new, old)

    def validate_status_update(self, new: Object, old: Object) -> list[Cause]:
        causes = self.validate(new)
        old_cert = (old.get("status") or {}).get("certificate")
        new_cert = (new.get("status") or {}).get("certificate")
        if old_cert and new_cert != old_cert:
            causes.append(forbidden("status.certificate", "updates may not modify existing certificate content"))
        if new_cert and not old_cert and not has_condition(new, "Approved"):
            causes.append(forbidden("status.certificate", "certificate can only be set on approved requests"))
        if new_cert and has_condition(new, "Denied"):
            causes.append(forbidden("status.certificate", "certificate cannot be set on denied requests"))
        return causes

    # --- table -------------------------------------------------------------------------------------------------
    def columns(self) -> list[TableColumn]:
        return [NAME_COLUMN, AGE_COLUMN, TableColumn("SignerName"), TableColumn("Requestor"),
                TableColumn("RequestedDuration"), TableColumn("Condition")]

    def row(self, obj: Object) -> list[Any]:
        metadata, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        seconds = spec.get("expirationSeconds")
        return [metadata.get("name", ""), since(metadata.get("creationTimestamp")), spec.get("signerName") or "",
                spec.get("username") or "", _human_seconds(seconds) if seconds is not None else "<none>",
                csr_condition(obj)]
