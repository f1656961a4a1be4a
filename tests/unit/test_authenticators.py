"""The authenticator union without a server: the token file's CSV, bearer headers, client certificate subjects,
anonymous and the 401s (apiserver.authentication, apiserver.authenticators.tokenfile)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from apimachinery import errors
from apiserver.authentication import (
    ANONYMOUS,
    PEER_CERT,
    UNSECURED,
    RequestAuthenticator,
    UserInfo,
    bearer_token,
    user_from_peer_cert,
)
from apiserver.authenticators.tokenfile import TokenFile, TokenFileError


def authenticate(authenticator: RequestAuthenticator, scheme: str = "https", **scope: Any) -> UserInfo:
    return asyncio.run(authenticator.authenticate({"type": "http", "scheme": scheme, "headers": [], **scope}))


def test_token_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text('t1,alice,1,"dev,qa"\n\nt2, bob, 2\n,nobody,3\n')
    tokens = TokenFile.load(path)
    assert asyncio.run(tokens.authenticate_token("t1")) == UserInfo("alice", ("dev", "qa"), "1")
    assert asyncio.run(tokens.authenticate_token("t2")) == UserInfo("bob", (), "2")
    assert asyncio.run(tokens.authenticate_token("")) is None
    path.write_text("t1,alice\n")
    with pytest.raises(TokenFileError, match=r"must have at least 3 columns \(token, user name, user uid\), found 2"):
        TokenFile.load(path)


def test_bearer_token_and_certificate_subject() -> None:
    assert bearer_token([(b"authorization", b"Bearer  abc ")]) == "abc"
    assert bearer_token([(b"authorization", b"Basic YTpi")]) is None
    assert bearer_token([(b"authorization", b"Bearer ")]) is None
    cert = {"subject": ((("organizationName", "system:nodes"),), (("commonName", "system:node:n1"),))}
    assert user_from_peer_cert(cert) == UserInfo("system:node:n1", ("system:nodes",))
    assert user_from_peer_cert({"subject": ((("organizationName", "x"),),)}) is None


def test_the_union(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("good,alice,1\n")
    union = RequestAuthenticator([TokenFile.load(tmp_path / "t.csv")])
    token = [(b"authorization", b"Bearer good")]
    assert authenticate(union, headers=token) == UserInfo("alice", ("system:authenticated",), "1")
    cert = {"subject": ((("commonName", "admin"),),)}
    assert authenticate(union, **{PEER_CERT: cert}, headers=token).username == "admin"  # x509 first, as kube
    assert authenticate(union) == ANONYMOUS
    with pytest.raises(errors.Unauthorized):
        authenticate(union, headers=[(b"authorization", b"Bearer bad")])
    closed = RequestAuthenticator(anonymous=False)
    with pytest.raises(errors.Unauthorized):
        authenticate(closed)
    assert authenticate(closed, scheme="http") == UNSECURED  # the plain port: no credentials, full rights
