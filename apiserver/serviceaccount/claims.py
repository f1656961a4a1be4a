"""kube's service-account token claims (``pkg/serviceaccount/claims.go``): what a token says, and whether it still
holds.

A token carries the registered claims ``iss``, ``sub`` (``system:serviceaccount:<ns>:<name>``), ``aud``, ``exp``,
``iat``, ``nbf``, ``jti`` and the private ``kubernetes.io`` claim: ``namespace``, ``serviceaccount`` {name, uid}
and, for a bound token, ``pod`` / ``secret`` / ``node`` {name, uid} (a pod-bound token also names the pod's node),
and ``warnafter`` for the admission's extended tokens.

``validate`` is kube's validator: the time claims (one minute of leeway for clock skew, as go-jose's default), then
that the service account, and the bound pod / secret / node, still exist with the uid the token names; a pod
deleted more than a minute ago no longer counts. Lookups go through a ``Getter`` (the watch caches), so a request
authenticated with a token costs no etcd read.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apimachinery.meta import parse_time

from ..authentication import SERVICE_ACCOUNT_PREFIX, UserInfo

LEEWAY = 60.0  # go-jose's DefaultLeeway
POD_DELETED_GRACE = 60.0  # a pod-bound token outlives its pod's deletion by this much
EXTENSION_SECONDS = 365 * 24 * 3600  # token.ExpirationExtensionSeconds
WARN_ONLY_EXPIRATION_SECONDS = 3607  # token.WarnOnlyBoundTokenExpirationSeconds: the admission's projected token

POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"

Object = dict[str, Any]
# (resource, namespace or None, name) → the cached object or None (core group only: pods, secrets, nodes, ...).
Getter = Callable[[str, "str | None", str], "Object | None"]


class TokenInvalid(Exception):
    """A token of ours that does not authenticate; the message is what TokenReview's ``status.error`` says."""


def username(namespace: str, name: str) -> str:
    """``serviceaccount.MakeUsername``."""
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def _ref(obj: Object) -> dict[str, str]:
    return {"name": obj["metadata"]["name"], "uid": obj["metadata"].get("uid", "")}


def make_claims(issuer: str, service_account: Object, audiences: list[str], expiration_seconds: int, *,
                pod: Object | None = None, secret: Object | None = None, node: Object | None = None,
                warn_after: int = 0, now: float | None = None) -> Object:
    """``token.Claims``: the claims of a new token (times in whole seconds, as JWT NumericDates)."""
    issued = int(now if now is not None else time.time())
    meta = service_account["metadata"]
    private: Object = {"namespace": meta["namespace"], "serviceaccount": _ref(service_account)}
    if pod is not None:
        private["pod"] = _ref(pod)
    if secret is not None:
        private["secret"] = _ref(secret)
    if node is not None:
        private["node"] = _ref(node)
    if warn_after:
        private["warnafter"] = issued + warn_after
    return {"aud": list(audiences), "exp": issued + expiration_seconds, "iat": issued, "iss": issuer,
            "jti": str(uuid.uuid4()), "kubernetes.io": private, "nbf": issued,
            "sub": username(meta["namespace"], meta["name"])}


@dataclass(frozen=True)
class ServiceAccountInfo:
    """``apiserver/pkg/authentication/serviceaccount.ServiceAccountInfo``: who a valid token stands for."""

    namespace: str
    name: str
    uid: str
    pod_name: str = ""
    pod_uid: str = ""
    node_name: str = ""
    node_uid: str = ""
    credential_id: str = ""

    def user_info(self) -> UserInfo:
        """The user: its name, uid, the service-account groups and kube's extra keys (``system:authenticated`` is
        the authenticator chain's to add)."""
        extra: dict[str, list[str]] = {}
        if self.pod_name and self.pod_uid:
            extra[POD_NAME_KEY], extra[POD_UID_KEY] = [self.pod_name], [self.pod_uid]
        if self.credential_id:
            extra[CREDENTIAL_ID_KEY] = [self.credential_id]
        if self.node_name:
            extra[NODE_NAME_KEY] = [self.node_name]
            if self.node_uid:
                extra[NODE_UID_KEY] = [self.node_uid]
        return UserInfo(username(self.namespace, self.name),
                        ("system:serviceaccounts", f"system:serviceaccounts:{self.namespace}"), self.uid, extra)


def _check_times(claims: Object, now: float) -> None:
    def number(key: str) -> float | None:
        value = claims.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    exp, nbf, iat = number("exp"), number("nbf"), number("iat")
    if nbf is not None and now + LEEWAY < nbf:
        raise TokenInvalid("service account token is not valid yet")
    if exp is not None and now - LEEWAY > exp:
        raise TokenInvalid("service account token has expired")
    if iat is not None and now + LEEWAY < iat:
        raise TokenInvalid("service account token is issued in the future")


def _bound(private: Object, key: str) -> tuple[str, str] | None:
    ref = private.get(key)
    if not isinstance(ref, dict):
        return None
    return str(ref.get("name") or ""), str(ref.get("uid") or "")


def _lookup(get: Getter, resource: str, namespace: str | None, name: str) -> Object:
    obj = get(resource, namespace, name)
    if obj is None:
        raise TokenInvalid(f'{resource} "{name}" not found')
    return obj


def validate(claims: Object, get: Getter, now: float | None = None) -> ServiceAccountInfo:
    """kube's ``validator.Validate`` on claims whose signature and issuer were checked: the identity, or
    ``TokenInvalid``."""
    now = now if now is not None else time.time()
    _check_times(claims, now)
    private = claims.get("kubernetes.io")
    if not isinstance(private, dict):
        raise TokenInvalid("service account token claims could not be validated due to unexpected private claim")
    namespace = str(private.get("namespace") or "")
    account = _bound(private, "serviceaccount")
    if not namespace or account is None or not account[0]:
        raise TokenInvalid("service account token claims could not be validated due to unexpected private claim")
    sa = _lookup(get, "serviceaccounts", namespace, account[0])
    if sa["metadata"].get("uid") != account[1]:
        raise TokenInvalid(f"service account UID ({sa['metadata'].get('uid')}) does not match claim ({account[1]})")
    if (secret_ref := _bound(private, "secret")) is not None:
        secret = _lookup(get, "secrets", namespace, secret_ref[0])
        if secret["metadata"].get("uid") != secret_ref[1]:
            raise TokenInvalid(f"secret UID ({secret['metadata'].get('uid')}) does not match service account secret "
                               f"ref claim ({secret_ref[1]})")
    pod_name = pod_uid = ""
    if (pod_ref := _bound(private, "pod")) is not None:
        pod = _lookup(get, "pods", namespace, pod_ref[0])
        if pod["metadata"].get("uid") != pod_ref[1]:
            raise TokenInvalid(f"pod UID ({pod['metadata'].get('uid')}) does not match service account pod ref "
                               f"claim ({pod_ref[1]})")
        deleted = pod["metadata"].get("deletionTimestamp")
        if deleted and parse_time(deleted).timestamp() < now - POD_DELETED_GRACE:
            raise TokenInvalid(f"pod {namespace}/{pod_ref[0]} has been deleted")
        pod_name, pod_uid = pod_ref
    node_name = node_uid = ""
    if (node_ref := _bound(private, "node")) is not None:
        node = _lookup(get, "nodes", None, node_ref[0])
        if node["metadata"].get("uid") != node_ref[1]:
            raise TokenInvalid(f"node UID ({node['metadata'].get('uid')}) does not match claim ({node_ref[1]})")
        node_name, node_uid = node_ref
    jti = claims.get("jti")
    return ServiceAccountInfo(namespace, account[0], account[1], pod_name, pod_uid, node_name, node_uid,
                              f"JTI={jti}" if isinstance(jti, str) and jti else "")
