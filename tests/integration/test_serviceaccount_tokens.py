"""Service-account tokens against the real apiserver and etcd, with the real kubectl 1.32: ``kubectl create token``
(TokenRequest) gives a token that authenticates as the account (``kubectl --token … auth whoami``), TokenReview
answers for it, a token bound to a pod stops working when the pod is gone, and the OpenID discovery documents
describe the key that signed it."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from conftest import Kubectl
from support.builders import make_pod
from support.wait import wait_for

ISSUER = "https://kubernetes.default.svc.cluster.local"


def claims_of(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def create_account(client: httpx.Client, ns: str, name: str = "builder") -> dict[str, Any]:
    resp = client.post(f"/api/v1/namespaces/{ns}/serviceaccounts", json={"metadata": {"name": name}})
    assert resp.status_code == 201, resp.text
    return resp.json()


def whoami(client: httpx.Client, token: str) -> httpx.Response:
    """What ``kubectl --token … auth whoami`` asks (kubectl sends a token only over HTTPS; this server's plain port
    takes it from any client)."""
    return client.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                       headers={"Authorization": f"Bearer {token}"},
                       json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})




def review(client: httpx.Client, token: str, audiences: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"token": token}
    if audiences is not None:
        spec["audiences"] = audiences
    resp = client.post("/apis/authentication.k8s.io/v1/tokenreviews",
                       json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec})
    assert resp.status_code == 201, resp.text
    return resp.json()["status"]


def test_kubectl_create_token_authenticates_as_the_account(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    account = create_account(client, ns)
    token = kubectl("-n", ns, "create", "token", "builder").stdout.strip()
    claims = claims_of(token)
    assert claims["iss"] == ISSUER and claims["aud"] == [ISSUER]
    assert claims["sub"] == f"system:serviceaccount:{ns}:builder"
    assert claims["exp"] - claims["iat"] == 3600 and claims["nbf"] == claims["iat"]
    assert claims["kubernetes.io"] == {"namespace": ns, "serviceaccount": {"name": "builder",
                                                                          "uid": account["metadata"]["uid"]}}
    me = whoami(client, token).json()["status"]["userInfo"]
    assert me["username"] == f"system:serviceaccount:{ns}:builder"
    assert me["uid"] == account["metadata"]["uid"]
    assert me["groups"] == ["system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"]
    assert me["extra"] == {"authentication.kubernetes.io/credential-id": [f"JTI={claims['jti']}"]}


def test_token_request_options_and_errors(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    create_account(client, ns)
    token = kubectl("-n", ns, "create", "token", "builder", "--audience", "vault", "--audience", "x",
                    "--duration", "20m").stdout.strip()
    claims = claims_of(token)
    assert claims["aud"] == ["vault", "x"] and claims["exp"] - claims["iat"] == 1200
    # A token for another audience does not open this API, but TokenReview answers for its audience.
    assert whoami(client, token).status_code == 401
    assert review(client, token)["error"] == f'token audiences ["vault" "x"] is invalid for the target audiences ' \
                                             f'["{ISSUER}"]'
    status = review(client, token, ["vault"])
    assert status["authenticated"] is True and status["audiences"] == ["vault"]
    short = kubectl("-n", ns, "create", "token", "builder", "--duration", "5m", check=False)
    assert short.returncode != 0
    assert 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 300: may not ' \
           "specify a duration less than 10 minutes" in short.stderr
    missing = kubectl("-n", ns, "create", "token", "nobody", check=False)
    assert 'serviceaccounts "nobody" not found' in missing.stderr
    bad_kind = kubectl("-n", ns, "create", "token", "builder", "--bound-object-kind", "ConfigMap",
                       "--bound-object-name", "x", check=False)
    assert bad_kind.returncode != 0


def test_token_review_answers(client: httpx.Client, kubectl: Kubectl, ns: str) -> None:
    account = create_account(client, ns)
    token = kubectl("-n", ns, "create", "token", "builder").stdout.strip()
    status = review(client, token)
    assert status == {"authenticated": True, "audiences": [ISSUER], "user": {
        "username": f"system:serviceaccount:{ns}:builder", "uid": account["metadata"]["uid"],
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/credential-id": [f"JTI={claims_of(token)['jti']}"]}}}
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert review(client, forged) == {"user": {}, "error": "invalid signature"}
    resp = client.post("/apis/authentication.k8s.io/v1/tokenreviews", json={"spec": {}})
    assert resp.status_code == 400 and resp.json()["message"] == "token is required for TokenReview in authentication"
    # The account deleted: its tokens stop working once the apiserver's watch cache has the deletion (a few ms; it
    # is not read-your-writes, as kube-apiserver's informers are not, and kube adds up to 10 s of its token cache).
    assert client.delete(f"/api/v1/namespaces/{ns}/serviceaccounts/builder").status_code == 200
    refused = wait_for(lambda: (answer := review(client, token)).get("error") and answer, timeout=5.0,
                       what="the deleted account's token to be refused")
    assert refused == {"user": {}, "error": 'serviceaccounts "builder" not found'}
    assert whoami(client, token).status_code == 401


@pytest.mark.parametrize("token", ["nonsense", "a.b.c"])
def test_a_token_no_authenticator_accepts_is_401(api_url: str, token: str) -> None:
    """Credentials that fail are refused, not taken as anonymous (anonymous is for requests without any)."""
    resp = httpx.get(f"{api_url}/api/v1/namespaces", headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 401
    assert resp.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                           "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


def test_a_pod_bound_token_dies_with_its_pod(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    create_account(client, ns)
    pod = client.post(f"/api/v1/namespaces/{ns}/pods", json=make_pod("web").build()).json()
    token = kubectl("-n", ns, "create", "token", "builder", "--bound-object-kind", "Pod",
                    "--bound-object-name", "web").stdout.strip()
    assert claims_of(token)["kubernetes.io"]["pod"] == {"name": "web", "uid": pod["metadata"]["uid"]}
    user = review(client, token)["user"]
    assert user["extra"]["authentication.kubernetes.io/pod-name"] == ["web"]
    assert user["extra"]["authentication.kubernetes.io/pod-uid"] == [pod["metadata"]["uid"]]
    assert whoami(client, token).status_code == 201
    client.delete(f"/api/v1/namespaces/{ns}/pods/web", params={"gracePeriodSeconds": "0"})
    # Refused once the apiserver's watch cache has the deletion (not read-your-writes: see the account case above).
    refused = wait_for(lambda: (answer := review(client, token)).get("error") and answer, timeout=5.0,
                       what="the deleted pod's token to be refused")
    assert refused == {"user": {}, "error": 'pods "web" not found'}
    assert whoami(client, token).status_code == 401
    wrong_uid = client.post(f"/api/v1/namespaces/{ns}/serviceaccounts/builder/token", json={
        "spec": {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "s", "uid": "x"}}})
    assert wrong_uid.status_code == 404


def test_openid_discovery_names_the_signing_key(client: httpx.Client, kubectl: Kubectl, ns: str) -> None:
    create_account(client, ns)
    token = kubectl("-n", ns, "create", "token", "builder").stdout.strip()
    config = client.get("/.well-known/openid-configuration")
    assert config.headers["cache-control"] == "public, max-age=3600"
    doc = config.json()
    assert doc["issuer"] == ISSUER and doc["jwks_uri"].endswith("/openid/v1/jwks")
    assert doc["response_types_supported"] == ["id_token"] and doc["subject_types_supported"] == ["public"]
    # the cluster's sa.key is ECDSA P-256, as kubeadm's with encryptionAlgorithm ECDSA-P256 (kubelab.pki)
    assert doc["id_token_signing_alg_values_supported"] == ["ES256"]
    jwks = client.get("/openid/v1/jwks")
    assert jwks.headers["content-type"] == "application/jwk-set+json"
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    key = next(k for k in jwks.json()["keys"] if k["kid"] == header["kid"])
    assert key["use"] == "sig" and key["kty"] == "EC" and key["crv"] == "P-256" and header["alg"] == "ES256"

    def number(text: str) -> int:
        return int.from_bytes(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), "big")

    public = ec.EllipticCurvePublicNumbers(number(key["x"]), number(key["y"]), ec.SECP256R1()).public_key()
    head, payload, signature = token.split(".")
    raw = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))  # JWS: r || s, 32 bytes each
    assert len(raw) == 64
    public.verify(encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")),
                  f"{head}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))


@pytest.mark.parametrize("body", [{"metadata": {"name": "other"}}, {"metadata": {"namespace": "elsewhere"}}])
def test_token_request_body_must_match_the_url(client: httpx.Client, ns: str, body: dict[str, Any]) -> None:
    create_account(client, ns)
    resp = client.post(f"/api/v1/namespaces/{ns}/serviceaccounts/builder/token", json=body)
    assert resp.status_code == 422
    assert "must match the service account" in resp.json()["message"]
