"""Service-account JWTs without a server: signing and verifying (RS256, ES256), kube's claims and validator, the
authenticator's issuer and audience rules."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from apiserver.serviceaccount import keys
from apiserver.serviceaccount.authenticator import ServiceAccountAuthenticator
from apiserver.serviceaccount.claims import TokenInvalid, make_claims, validate

ISSUER = "https://kubernetes.default.svc.cluster.local"
SA = {"metadata": {"name": "builder", "namespace": "ci", "uid": "sa-1"}}
POD = {"metadata": {"name": "web", "namespace": "ci", "uid": "pod-1"}}
NODE = {"metadata": {"name": "node01", "uid": "node-1"}}  # named in claims only
RSA_KEY = keys.new_private_key()


def getter(sa: dict[str, Any] | None = SA, pod: dict[str, Any] | None = None) -> Any:
    """The cache lookups: the account and the pod given."""
    table = {(resource, o["metadata"].get("namespace"), o["metadata"]["name"]): o
             for resource, o in (("serviceaccounts", sa), ("pods", pod)) if o is not None}
    return lambda resource, namespace, name: table.get((resource, namespace, name))


@pytest.mark.parametrize("key", [RSA_KEY, ec.generate_private_key(ec.SECP256R1())], ids=["RS256", "ES256"])
def test_sign_and_verify(key: keys.PrivateKey) -> None:
    token = keys.sign(key, {"sub": "x"})
    assert keys.verify(token, [key.public_key()]) == {"sub": "x"}
    other = keys.new_private_key()
    with pytest.raises(keys.InvalidJWS, match="invalid signature"):
        keys.verify(token, [other.public_key()])
    head, payload, signature = token.split(".")
    with pytest.raises(keys.InvalidJWS):
        keys.verify(f"{head}.{keys.b64url(b'{}')}.{signature}", [key.public_key()])


def test_key_id_and_jwk_are_kubes() -> None:
    public = RSA_KEY.public_key()
    assert len(keys.key_id(public)) == 43 and "=" not in keys.key_id(public)
    jwk = keys.jwk(public)
    assert jwk["kid"] == keys.key_id(public) and jwk["alg"] == "RS256" and jwk["e"] == "AQAB" and jwk["use"] == "sig"


def test_claims_shape() -> None:
    claims = make_claims(ISSUER, SA, [ISSUER], 3607, pod=POD, node=NODE, warn_after=3607, now=1000)
    assert claims["sub"] == "system:serviceaccount:ci:builder"
    assert (claims["iat"], claims["nbf"], claims["exp"]) == (1000, 1000, 4607)
    assert claims["kubernetes.io"] == {"namespace": "ci", "serviceaccount": {"name": "builder", "uid": "sa-1"},
                                       "pod": {"name": "web", "uid": "pod-1"},
                                       "node": {"name": "node01", "uid": "node-1"}, "warnafter": 4607}


def test_validator() -> None:
    claims = make_claims(ISSUER, SA, [ISSUER], 3600, pod=POD, now=1000)
    info = validate(claims, getter(pod=POD), now=1500)
    assert (info.pod_name, info.pod_uid, info.credential_id) == ("web", "pod-1", f"JTI={claims['jti']}")
    user = info.user_info()
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:ci") and user.uid == "sa-1"
    with pytest.raises(TokenInvalid, match="has expired"):
        validate(claims, getter(pod=POD), now=1000 + 3600 + 61)
    validate(claims, getter(pod=POD), now=1000 + 3600 + 59)  # a minute of leeway
    with pytest.raises(TokenInvalid, match='pods "web" not found'):
        validate(claims, getter(), now=1500)
    recreated = {"metadata": {**POD["metadata"], "uid": "pod-2"}}
    with pytest.raises(TokenInvalid, match=r"pod UID \(pod-2\) does not match service account pod ref claim"):
        validate(claims, getter(pod=recreated), now=1500)
    deleting = {"metadata": {**POD["metadata"], "deletionTimestamp": "1970-01-01T00:16:40Z"}}  # t=1000
    validate(claims, getter(pod=deleting), now=1050)
    with pytest.raises(TokenInvalid, match="pod ci/web has been deleted"):
        validate(claims, getter(pod=deleting), now=1061)


def test_authenticator_issuer_and_audiences() -> None:
    authenticator = ServiceAccountAuthenticator([ISSUER], [RSA_KEY.public_key()], [ISSUER], getter())
    good = keys.sign(RSA_KEY, make_claims(ISSUER, SA, [ISSUER], 3600))
    user = asyncio.run(authenticator.authenticate_token(good))
    assert user is not None and user.username == "system:serviceaccount:ci:builder"
    foreign = keys.sign(RSA_KEY, make_claims("https://elsewhere", SA, [ISSUER], 3600))
    assert authenticator.authenticate(foreign, [ISSUER]) is None  # not ours: left to other authenticators
    assert authenticator.authenticate("not-a-jwt", [ISSUER]) is None
    vault = keys.sign(RSA_KEY, make_claims(ISSUER, SA, ["vault"], 3600))
    assert asyncio.run(authenticator.authenticate_token(vault)) is None
    with pytest.raises(TokenInvalid, match=r'token audiences \["vault"\] is invalid'):
        authenticator.authenticate(vault, [])
    found = authenticator.authenticate(vault, ["vault", "other"])
    assert found is not None and found[1] == ["vault"]


def test_authenticator_verifies_each_token_once_and_still_checks_what_can_change(
        monkeypatch: pytest.MonkeyPatch) -> None:
    verified: list[str] = []
    real_verify = keys.verify

    def counting_verify(token: str, public: Any) -> dict[str, Any]:
        verified.append(token)
        return real_verify(token, public)

    monkeypatch.setattr("apiserver.serviceaccount.authenticator.verify", counting_verify)
    table: dict[tuple[str, str | None, str], dict[str, Any]] = {("serviceaccounts", "ci", "builder"): SA}
    authenticator = ServiceAccountAuthenticator([ISSUER], [RSA_KEY.public_key()], [ISSUER],
                                                lambda resource, ns, name: table.get((resource, ns, name)))
    token = keys.sign(RSA_KEY, make_claims(ISSUER, SA, [ISSUER], 3600))
    for _ in range(3):
        assert authenticator.authenticate(token, [ISSUER]) is not None
    assert verified == [token]
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")  # never cached: refused each time
    for _ in range(2):
        with pytest.raises(TokenInvalid):
            authenticator.authenticate(forged, [ISSUER])
    del table[("serviceaccounts", "ci", "builder")]  # the account is deleted: its token stops at once
    with pytest.raises(TokenInvalid, match="not found"):
        authenticator.authenticate(token, [ISSUER])
    table[("serviceaccounts", "ci", "builder")] = SA
    assert authenticator.authenticate(token, [ISSUER]) is not None  # verified afresh: it left the cache
    assert verified.count(token) == 2
    expired = keys.sign(RSA_KEY, make_claims(ISSUER, SA, [ISSUER], 60, now=1000))
    with pytest.raises(TokenInvalid, match="expired"):
        authenticator.authenticate(expired, [ISSUER])
    assert expired not in authenticator._verified


def test_authenticator_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("apiserver.serviceaccount.authenticator.VERIFIED_CACHE_SIZE", 2)
    authenticator = ServiceAccountAuthenticator([ISSUER], [RSA_KEY.public_key()], [ISSUER], getter())
    tokens = [keys.sign(RSA_KEY, make_claims(ISSUER, SA, [ISSUER], 3600)) for _ in range(3)]  # each its own jti
    for token in tokens:
        assert authenticator.authenticate(token, [ISSUER]) is not None
    assert list(authenticator._verified) == tokens[1:]
