"""The service-account token authenticator (kube's ``pkg/serviceaccount/jwt.go``), a ``TokenAuthenticator``.

A bearer token is ours when it is a JWT whose ``iss`` is one of ``--service-account-issuer``; any other token is
left to the other authenticators (``None``). Ours must then verify with one of the keys, hold claims that still
stand (``claims.validate``) and name an audience the request accepts: the apiserver's ``--api-audiences``, or the
audiences a TokenReview asks for. A token of ours that fails is refused with the reason (``TokenInvalid``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..authentication import UserInfo
from . import claims as claims_
from .claims import Getter, TokenInvalid
from .keys import InvalidJWS, PublicKey, looks_like_jwt, unverified_claims, verify

log = logging.getLogger(__name__)


class ServiceAccountAuthenticator:
    """Authenticates service-account JWTs against ``issuers``, ``keys`` and the objects ``get`` finds."""

    def __init__(self, issuers: Sequence[str], keys: Sequence[PublicKey], api_audiences: Sequence[str],
                 get: Getter) -> None:
        self.issuers = tuple(issuers)
        self.keys = tuple(keys)
        self.api_audiences = tuple(api_audiences)
        self.get = get

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
        info = claims_.validate(claims, self.get)
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


def go_strings(values: Sequence[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(f'"{v}"' for v in values) + "]"
