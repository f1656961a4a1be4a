"""The service-account token authenticator (kube's ``pkg/serviceaccount/jwt.go``), a ``TokenAuthenticator``.

A bearer token is ours when it is a JWT whose ``iss`` is one of ``--service-account-issuer``; any other token is
left to the other authenticators (``None``). Ours must then verify with one of the keys, hold claims that still
stand (``claims.validate``) and name an audience the request accepts: the apiserver's ``--api-audiences``, or the
audiences a TokenReview asks for. A token of ours that fails is refused with the reason (``TokenInvalid``).

The signature check (an RSA or ECDSA verify, the costliest step of a request that brings a token) is done once
per token: the claims of up to ``VERIFIED_CACHE_SIZE`` tokens whose issuer and signature checked out are kept,
keyed by the token itself, least recently used dropped first. A token's bytes and the keys never change, so that
answer cannot go stale; what can — the token's expiry, the service account, pod, secret or node it is bound to
being deleted — is checked on every request (``claims.validate`` reads the watch caches), and an expired token
leaves the cache. kube-apiserver caches whole successful authentications for 10 s instead
(``--authentication-token-cache-ttl``), so a deleted secret's token still works there for a while; here it stops
as soon as the watch cache has the deletion (milliseconds; like kube's informers, not read-your-writes).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..authentication import UserInfo
from . import claims as claims_
from .claims import Getter, TokenInvalid
from .keys import InvalidJWS, PublicKey, looks_like_jwt, unverified_claims, verify

log = logging.getLogger(__name__)
VERIFIED_CACHE_SIZE = 4096  # tokens whose signature checked out, kept (see the module docstring)


class ServiceAccountAuthenticator:
    """Authenticates service-account JWTs against ``issuers``, ``keys`` and the objects ``get`` finds."""

    def __init__(self, issuers: Sequence[str], keys: Sequence[PublicKey], api_audiences: Sequence[str],
                 get: Getter) -> None:
        self.issuers = tuple(issuers)
        self.keys = tuple(keys)
        self.api_audiences = tuple(api_audiences)
        self.get = get
        self._verified: OrderedDict[str, dict[str, Any]] = OrderedDict()

    async def authenticate_token(self, token: str) -> UserInfo | None:
        """The request path: None for a token not ours and for ours that fails (the union answers 401)."""
        try:
            found = self.authenticate(token, self.api_audiences)
        except TokenInvalid as err:
            log.debug("service account token refused: %s", err)
            return None
        return found[0] if found is not None else None

    def authenticate(self, token: str, audiences: Sequence[str]) -> tuple[UserInfo, list[str]] | None:
        """The user and the audiences both the token and the request accept; None for a token not ours."""
        claims = self._verified_claims(token)
        if claims is None:
            return None
        try:
            info = claims_.validate(claims, self.get)
        except TokenInvalid:
            self._verified.pop(token, None)  # expired, or what it is bound to is gone: verified afresh if it returns
            raise
        token_audiences = claims.get("aud")
        if isinstance(token_audiences, str):
            token_audiences = [token_audiences]
        token_audiences = [a for a in token_audiences or [] if isinstance(a, str)] or list(self.api_audiences)
        wanted = list(audiences) or list(self.api_audiences)
        common = [a for a in wanted if a in token_audiences]
        if not common and self.api_audiences:
            raise TokenInvalid(f"token audiences {go_strings(token_audiences)} is invalid for the target audiences "
                               f"{go_strings(wanted)}")
        return info.user_info(), common


    def _verified_claims(self, token: str) -> dict[str, Any] | None:
        """The claims of a token of ours whose signature verifies (cached); None for a token not ours."""
        claims = self._verified.get(token)
        if claims is not None:
            self._verified.move_to_end(token)
            return claims
        if not looks_like_jwt(token):
            return None
        try:
            if unverified_claims(token).get("iss") not in self.issuers:
                return None
        except InvalidJWS:
            return None
        try:
            claims = verify(token, self.keys)
        except InvalidJWS as err:
            raise TokenInvalid(str(err)) from None
        self._verified[token] = claims
        if len(self._verified) > VERIFIED_CACHE_SIZE:
            self._verified.popitem(last=False)
        return claims


def go_strings(values: Sequence[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(f'"{v}"' for v in values) + "]"
