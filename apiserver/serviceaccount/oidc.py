"""Service-account issuer discovery (kube's ``pkg/serviceaccount/openidmetadata.go``): the OpenID Connect provider
configuration at ``/.well-known/openid-configuration`` and the keys at ``/openid/v1/jwks``, so a relying party
outside the cluster can check the tokens itself.

``jwks_uri`` is ``--service-account-jwks-uri``, or ``https://<external address>/openid/v1/jwks`` as kube
defaults it. Both documents are built once and served with ``Cache-Control: public, max-age=3600``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from .keys import PublicKey, algorithm, jwk

CONFIGURATION_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/openid/v1/jwks"
CACHE_CONTROL = "public, max-age=3600"
JWKS_CONTENT_TYPE = "application/jwk-set+json"


@dataclass(frozen=True)
class Discovery:
    """The two documents, encoded."""

    configuration: bytes
    jwks: bytes

    @classmethod
    def build(cls, issuer: str, jwks_uri: str, keys: Sequence[PublicKey]) -> Discovery:
        configuration = {"issuer": issuer, "jwks_uri": jwks_uri, "response_types_supported": ["id_token"],
                         "subject_types_supported": ["public"],
                         "id_token_signing_alg_values_supported": sorted({algorithm(k) for k in keys})}
        return cls(orjson.dumps(configuration), orjson.dumps({"keys": [jwk(k) for k in keys]}))
