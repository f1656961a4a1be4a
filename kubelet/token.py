"""The kubelet's service-account token manager (``pkg/kubelet/token/token_manager.go``).

Projected ``serviceAccountToken`` volumes need a token bound to their pod. The manager asks TokenRequest
(``POST serviceaccounts/<name>/token`` with ``boundObjectRef`` the pod) and keeps each answer, keyed by account,
audiences, expiration and bound pod, until it needs a refresh: when 80 % of its lifetime has passed, or it is more
than 24 hours old, each less a jitter of up to ten seconds so that many pods do not refresh at once. A request
that fails while the cached token is still valid keeps the cached one (kube logs and serves it). ``forget`` drops
the tokens of a pod that is gone.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from apimachinery.meta import parse_time
from kubeclient import Clientset

log = logging.getLogger(__name__)

MAX_TTL = 24 * 3600.0
MAX_JITTER = 10.0
REFRESH_FRACTION = 0.2  # refresh once less than this share of the lifetime is left


@dataclass(frozen=True)
class TokenKey:
    namespace: str
    service_account: str
    audiences: tuple[str, ...]
    expiration_seconds: int
    pod_name: str
    pod_uid: str


@dataclass(frozen=True)
class Token:
    token: str
    expires: float  # status.expirationTimestamp, epoch seconds
    expiration_seconds: int

    def requires_refresh(self, now: float, jitter: float) -> bool:
        """``requiresRefresh``: past 24 h since issue, or within 20 % of the lifetime (plus jitter) of expiry."""
        issued = self.expires - self.expiration_seconds
        if now > issued + MAX_TTL - jitter:
            return True
        return now > self.expires - self.expiration_seconds * REFRESH_FRACTION - jitter


class TokenManager:
    def __init__(self, client: Clientset, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.clock = clock
        self.cache: dict[TokenKey, Token] = {}

    async def token(self, key: TokenKey) -> str:
        """A valid token for ``key``: the cached one, or a new one when it needs a refresh."""
        cached = self.cache.get(key)
        now = self.clock()
        if cached is not None and not cached.requires_refresh(now, random.uniform(0, MAX_JITTER)):
            return cached.token
        try:
            fresh = await self._request(key)
        except Exception as err:
            if cached is not None and now < cached.expires:
                log.warning("token refresh for %s/%s failed, using the cached token: %s", key.namespace,
                            key.service_account, err)
                return cached.token
            raise
        self.cache[key] = fresh
        return fresh.token

    async def _request(self, key: TokenKey) -> Token:
        spec: dict[str, object] = {"expirationSeconds": key.expiration_seconds,
                                   "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": key.pod_name,
                                                      "uid": key.pod_uid}}
        if key.audiences:
            spec["audiences"] = list(key.audiences)
        answer = await self.client.service_accounts.create(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
             "metadata": {"name": key.service_account, "namespace": key.namespace}, "spec": spec},
            key.namespace, subresource="token")
        status = answer.get("status") or {}
        seconds = int((answer.get("spec") or {}).get("expirationSeconds") or key.expiration_seconds)
        return Token(status["token"], parse_time(status["expirationTimestamp"]).timestamp(), seconds)

    def forget(self, pod_uid: str) -> None:
        """``DeleteServiceAccountToken``: the pod is gone, so are its tokens."""
        for key in [k for k in self.cache if k.pod_uid == pod_uid]:
            del self.cache[key]
