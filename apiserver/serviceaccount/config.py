"""The ``--service-account-*`` and ``--api-audiences`` flags' values, and what the apiserver builds from them.

kube-apiserver requires a signing key; kubelab keeps ``python -m apiserver`` zero-config: without
``--service-account-signing-key-file`` it signs with a key made at start-up and kept in memory (said in the log),
so tokens work until that apiserver restarts and only with it. ``kubelab up`` passes kubeadm's ``pki/sa.key`` and
``pki/sa.pub``, shared by every apiserver of the cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from .authenticator import ServiceAccountAuthenticator
from .claims import Getter
from .keys import KeySet, new_private_key
from .oidc import Discovery
from .tokenrequest import TokenIssuer

log = logging.getLogger(__name__)

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"  # kubeadm's


@dataclass
class ServiceAccountConfig:
    signing_key_file: str | None = None  # --service-account-signing-key-file
    key_files: list[str] = field(default_factory=list)  # --service-account-key-file (repeatable)
    issuers: list[str] = field(default_factory=lambda: [DEFAULT_ISSUER])  # --service-account-issuer: first signs
    api_audiences: list[str] = field(default_factory=list)  # --api-audiences (default: the first issuer)
    max_token_expiration: int = 0  # --service-account-max-token-expiration, seconds; 0: none
    extend_token_expiration: bool = True  # --service-account-extend-token-expiration
    jwks_uri: str = ""  # --service-account-jwks-uri (default: https://<external address>/openid/v1/jwks)

    def audiences(self) -> list[str]:
        return list(self.api_audiences) or self.issuers[:1]


@dataclass(frozen=True)
class ServiceAccounts:
    """Everything built from the configuration."""

    issuer: TokenIssuer
    authenticator: ServiceAccountAuthenticator
    discovery: Discovery


def build(config: ServiceAccountConfig, get: Getter, external_address: str,
          on_warning: Callable[[str], None]) -> ServiceAccounts:
    """Raises ``keys.KeyFileError`` or ``OSError`` for unusable key files."""
    keys = KeySet.load(config.signing_key_file, config.key_files)
    if keys.signing is None:
        log.warning("no --service-account-signing-key-file: service-account tokens are signed with a key made for "
                    "this run of this apiserver only")
        signing = new_private_key()
        keys = KeySet(signing, (*keys.public, signing.public_key()))
    assert keys.signing is not None
    audiences = config.audiences()
    issuer = TokenIssuer(config.issuers[0], keys.signing, audiences, config.max_token_expiration,
                         config.extend_token_expiration, on_warning)
    authenticator = ServiceAccountAuthenticator(config.issuers, keys.public, audiences, get)
    jwks_uri = config.jwks_uri or f"https://{external_address}/openid/v1/jwks"
    return ServiceAccounts(issuer, authenticator, Discovery.build(config.issuers[0], jwks_uri, keys.public))
