"""``--enable-bootstrap-token-auth``: kube-apiserver's bootstrap-token authenticator
(``plugin/pkg/auth/authenticator/token/bootstrap``).

A bearer token of the form ``<id>.<secret>`` is looked up as the Secret ``kube-system/bootstrap-token-<id>`` (from
the watch cache, as kube reads it from an informer's lister). It authenticates as ``system:bootstrap:<id>`` in
``system:bootstrappers`` and the Secret's ``auth-extra-groups`` when the Secret is of type
``bootstrap.kubernetes.io/token``, not being deleted, holds the same ``token-id`` and ``token-secret`` (compared in
constant time), has not expired and says ``usage-bootstrap-authentication: "true"``. Any other token of that form
is not known (None): the authenticator union then answers 401 ``Unauthorized``, as kube does. Why a token was
refused is logged, never told to the client.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from typing import Any

from apimachinery import bootstraptoken as bt

from ..authentication import UserInfo

__all__ = ["BootstrapTokenAuthenticator"]

log = logging.getLogger(__name__)

# (namespace, name) → the Secret, or None
SecretGetter = Callable[[str, str], dict[str, Any] | None]


class BootstrapTokenAuthenticator:
    """A ``TokenAuthenticator`` over the bootstrap token Secrets ``get`` finds."""

    def __init__(self, get: SecretGetter) -> None:
        self.get = get

    async def authenticate_token(self, token: str) -> UserInfo | None:
        try:
            parsed = bt.parse_token(token)
        except bt.InvalidToken:
            return None  # not a bootstrap token: another authenticator's
        secret = self.get(bt.KUBE_SYSTEM, parsed.secret_name)
        if secret is None:
            log.debug("no secret %s/%s for bootstrap token %s", bt.KUBE_SYSTEM, parsed.secret_name, parsed.id)
            return None
        why = _refusal(secret, parsed)
        if why is not None:
            log.debug("bootstrap secret %s/%s %s", bt.KUBE_SYSTEM, parsed.secret_name, why)
            return None
        try:
            groups = bt.secret_groups(secret)
        except bt.InvalidToken as err:
            log.debug("bootstrap secret %s/%s has invalid value for key %s: %s", bt.KUBE_SYSTEM, parsed.secret_name,
                      bt.EXTRA_GROUPS_KEY, err)
            return None
        return UserInfo(bt.BOOTSTRAP_USER_PREFIX + parsed.id, groups)


def _refusal(secret: dict[str, Any], token: bt.BootstrapToken) -> str | None:
    """Why the Secret does not vouch for ``token`` (kube's log lines), or None."""
    if (secret.get("metadata") or {}).get("deletionTimestamp"):
        return "is deleted and awaiting removal"
    if secret.get("type") != bt.SECRET_TYPE or not secret.get("data"):
        return f"has invalid type, expected {bt.SECRET_TYPE}."
    if not hmac.compare_digest(bt.secret_data(secret, bt.TOKEN_SECRET_KEY).encode(), token.secret.encode()):
        return f"has invalid value for key {bt.TOKEN_SECRET_KEY}."
    if bt.secret_data(secret, bt.TOKEN_ID_KEY) != token.id:
        return f"has invalid value for key {bt.TOKEN_ID_KEY}."
    if bt.has_expired(secret):
        return "has expired."
    if bt.secret_data(secret, bt.USAGE_AUTHENTICATION) != "true":
        return f"not marked {bt.USAGE_AUTHENTICATION}=true."
    return None
