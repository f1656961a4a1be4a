"""Bootstrap tokens: kube's ``k8s.io/cluster-bootstrap`` (token/api, token/util, token/jws, util/secrets).

A bootstrap token ``<id>.<secret>`` (``[a-z0-9]{6}.[a-z0-9]{16}``) lives in the Secret ``bootstrap-token-<id>`` of
type ``bootstrap.kubernetes.io/token`` in ``kube-system``. Three parts of the cluster read it, and they all read it
through this module so that they agree:

* the apiserver's bootstrap-token authenticator (``usage-bootstrap-authentication``): user
  ``system:bootstrap:<id>`` in ``system:bootstrappers`` and the ``auth-extra-groups``;
* the controller-manager's bootstrap signer (``usage-bootstrap-signing``), which signs the ``cluster-info``
  ConfigMap of ``kube-public`` with one detached JWS per token (``jws-kubeconfig-<id>``), and its token cleaner,
  which deletes tokens past their ``expiration``;
* ``kubelab join``, which checks that signature before it trusts what ``cluster-info`` says.

The JWS is what go-jose makes for kube: HS256 over the kubeconfig with the token secret as the key, the protected
header ``{"alg":"HS256","kid":"<id>"}``, and the payload left out of the compact form (``header..signature``), so
a signature made here verifies in kubeadm and the other way round. Pure functions over the wire shape.
"""

from __future__ import annotations

import base64
import datetime
import hmac
import re
import secrets
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import hmac as crypto_hmac

__all__ = [
    "BOOTSTRAP_DEFAULT_GROUP", "BOOTSTRAP_USER_PREFIX", "CLUSTER_INFO", "JWS_SIGNATURE_KEY_PREFIX", "KUBECONFIG_KEY",
    "KUBE_PUBLIC", "KUBE_SYSTEM", "SECRET_PREFIX", "SECRET_TYPE", "BootstrapToken", "InvalidToken",
    "compute_detached_signature", "detached_signature_valid", "expiration", "generate_token", "has_expired",
    "parse_token", "secret_data", "secret_groups", "token_from_secret", "token_secret",
]

SECRET_TYPE = "bootstrap.kubernetes.io/token"
SECRET_PREFIX = "bootstrap-token-"
KUBE_SYSTEM = "kube-system"
KUBE_PUBLIC = "kube-public"
CLUSTER_INFO = "cluster-info"
KUBECONFIG_KEY = "kubeconfig"
JWS_SIGNATURE_KEY_PREFIX = "jws-kubeconfig-"
BOOTSTRAP_USER_PREFIX = "system:bootstrap:"
BOOTSTRAP_DEFAULT_GROUP = "system:bootstrappers"
TOKEN_ID_KEY = "token-id"
TOKEN_SECRET_KEY = "token-secret"
EXPIRATION_KEY = "expiration"
DESCRIPTION_KEY = "description"
EXTRA_GROUPS_KEY = "auth-extra-groups"
USAGE_AUTHENTICATION = "usage-bootstrap-authentication"
USAGE_SIGNING = "usage-bootstrap-signing"

TOKEN_RE = re.compile(r"\A([a-z0-9]{6})\.([a-z0-9]{16})\Z")
TOKEN_ID_RE = re.compile(r"\A[a-z0-9]{6}\Z")
TOKEN_SECRET_RE = re.compile(r"\A[a-z0-9]{16}\Z")
GROUP_RE = re.compile(r"\Asystem:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]\Z")
_TOKEN_CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"


class InvalidToken(ValueError):
    """A token, or a token Secret, that does not have kube's shape (the message says what is wrong)."""


class BootstrapToken:
    """``<id>.<secret>``: ``str()`` gives the token as kubeadm prints it."""

    __slots__ = ("id", "secret")

    def __init__(self, token_id: str, secret: str) -> None:
        self.id = token_id
        self.secret = secret

    def __str__(self) -> str:
        return f"{self.id}.{self.secret}"

    @property
    def secret_name(self) -> str:
        return SECRET_PREFIX + self.id


def parse_token(token: str) -> BootstrapToken:
    """``<id>.<secret>``; ``InvalidToken`` with kubeadm's message for anything else."""
    match = TOKEN_RE.match(token)
    if match is None:
        raise InvalidToken(f"the bootstrap token {token!r} was not of the form {TOKEN_RE.pattern[2:-2]!r}")
    return BootstrapToken(match.group(1), match.group(2))


def generate_token() -> BootstrapToken:
    """A random token (kubeadm's ``GenerateBootstrapToken``)."""
    return BootstrapToken("".join(secrets.choice(_TOKEN_CHARS) for _ in range(6)),
                          "".join(secrets.choice(_TOKEN_CHARS) for _ in range(16)))


def secret_data(secret: dict[str, Any], key: str) -> str:
    """A ``data`` value decoded (``stringData`` is gone by the time a Secret is stored); "" when absent or bad."""
    value = (secret.get("data") or {}).get(key)
    if not isinstance(value, str):
        return ""
    try:
        return base64.b64decode(value, validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def expiration(secret: dict[str, Any]) -> datetime.datetime | None:
    """When the token expires (``expiration``, RFC 3339); None when it never does or the value does not parse (kube
    logs that and treats the token as unexpired)."""
    text = secret_data(secret, EXPIRATION_KEY)
    if not text:
        return None
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def has_expired(secret: dict[str, Any], now: datetime.datetime | None = None) -> bool:
    when = expiration(secret)
    return when is not None and when <= (now or datetime.datetime.now(datetime.UTC))


def secret_groups(secret: dict[str, Any]) -> tuple[str, ...]:
    """``system:bootstrappers`` and the ``auth-extra-groups``, sorted and without duplicates (kube's ``GetGroups``);
    ``InvalidToken`` for an extra group outside ``system:bootstrappers:*``."""
    groups = {BOOTSTRAP_DEFAULT_GROUP}
    extra = secret_data(secret, EXTRA_GROUPS_KEY)
    for group in extra.split(",") if extra else ():
        if not GROUP_RE.match(group):
            raise InvalidToken(f"{group!r} does not match {GROUP_RE.pattern[2:-2]!r}")
        groups.add(group)
    return tuple(sorted(groups))


def token_secret(secret: dict[str, Any], usage: str) -> BootstrapToken | None:
    """The token a Secret holds, when it is a well-formed bootstrap token Secret of ``kube-system``, unexpired and
    marked ``<usage>: "true"`` (kube's ``validateSecretForSigning`` and the authenticator's checks); else None."""
    meta = secret.get("metadata") or {}
    if secret.get("type") != SECRET_TYPE or meta.get("namespace") != KUBE_SYSTEM or meta.get("deletionTimestamp"):
        return None
    token = token_from_secret(secret)
    if token is None or has_expired(secret) or secret_data(secret, usage) != "true":
        return None
    return token


def token_from_secret(secret: dict[str, Any]) -> BootstrapToken | None:
    """The id and secret of a token Secret when its name, ``token-id`` and ``token-secret`` agree in shape."""
    name = (secret.get("metadata") or {}).get("name") or ""
    token_id, token_value = secret_data(secret, TOKEN_ID_KEY), secret_data(secret, TOKEN_SECRET_KEY)
    if name != SECRET_PREFIX + token_id or not TOKEN_ID_RE.match(token_id) or not TOKEN_SECRET_RE.match(token_value):
        return None
    return BootstrapToken(token_id, token_value)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def compute_detached_signature(content: str, token_id: str, token_secret_: str) -> str:
    """kube's ``jws.ComputeDetachedSignature``: ``header..signature`` of an HS256 JWS over ``content``."""
    header = _b64url(b'{"alg":"HS256","kid":"' + token_id.encode() + b'"}')
    mac = crypto_hmac.HMAC(token_secret_.encode(), hashes.SHA256())
    mac.update(f"{header}.{_b64url(content.encode())}".encode())
    return f"{header}..{_b64url(mac.finalize())}"


def detached_signature_valid(signature: str, content: str, token_id: str, token_secret_: str) -> bool:
    """kube's ``jws.DetachedTokenIsValid``: whether ``signature`` is the token's over ``content``."""
    return hmac.compare_digest(signature.encode(),
                               compute_detached_signature(content, token_id, token_secret_).encode())
