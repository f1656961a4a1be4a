"""The kubelet's projected volumes without a server: the atomic writer's layout and swaps, the payload of the
admission's kube-api-access volume, and the token manager's refresh rule."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from apiserver.admission.serviceaccount import token_volume
from kubelet import atomicwriter
from kubelet.projected import ProjectionError, projected_files, projected_references, token_keys
from kubelet.sources import CONFIG_MAP, SECRET
from kubelet.token import Token, TokenKey, TokenManager

POD = {"metadata": {"name": "web", "namespace": "ci", "uid": "u1", "labels": {"app": "web"}},
       "spec": {"serviceAccountName": "builder", "volumes": [token_volume("kube-api-access-abcde")]}}
CA = {"data": {"ca.crt": "PEM"}}


def test_atomic_writer_swaps_generations(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    assert atomicwriter.write(target, {"token": (b"one", 0o644), "sub/x": (b"x", 0o600)})
    first = os.readlink(target / "..data")
    assert (target / "token").read_bytes() == b"one" and os.readlink(target / "token") == "..data/token"
    assert (target / "sub" / "x").stat().st_mode & 0o777 == 0o600
    assert not atomicwriter.write(target, {"token": (b"one", 0o644), "sub/x": (b"x", 0o600)})  # unchanged
    assert atomicwriter.write(target, {"token": (b"two", 0o644)})
    assert (target / "token").read_bytes() == b"two" and os.readlink(target / "..data") != first
    assert sorted(p.name for p in target.iterdir()) == sorted(["..data", os.readlink(target / "..data"), "token"])
    with pytest.raises(atomicwriter.PayloadError):
        atomicwriter.write(target, {"../escape": (b"", 0o644)})


def test_the_kube_api_access_volume_payload() -> None:
    [(volume, key)] = token_keys(POD)
    assert volume == "kube-api-access-abcde"
    assert key == TokenKey("ci", "builder", (), 3607, "web", "u1")
    assert projected_references(POD) == {(CONFIG_MAP, "kube-root-ca.crt")}
    files = projected_files(POD, POD["spec"]["volumes"][0]["projected"], {(CONFIG_MAP, "kube-root-ca.crt"): CA},
                            {key: "TOKEN"}, pod_ip="10.0.0.1", host_ip="127.0.0.1", allocatable={})
    assert files == {"token": (b"TOKEN", 0o644), "ca.crt": (b"PEM", 0o644), "namespace": (b"ci", 0o644)}
    with pytest.raises(ProjectionError, match='configmap "kube-root-ca.crt" not found'):
        projected_files(POD, POD["spec"]["volumes"][0]["projected"], {}, {key: "TOKEN"}, pod_ip="", host_ip="",
                        allocatable={})


def test_secret_projections_name_their_object_in_name() -> None:
    volume = {"defaultMode": 0o400, "sources": [
        {"secret": {"name": "creds", "items": [{"key": "user", "path": "u", "mode": 0o600}]}},
        {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}
    pod = {**POD, "spec": {"volumes": [{"name": "v", "projected": volume}]}}
    assert projected_references(pod) == {(SECRET, "creds")}
    files = projected_files(pod, volume, {(SECRET, "creds"): {"data": {"user": "YWxpY2U="}}}, {}, pod_ip="",
                            host_ip="", allocatable={})
    assert files == {"u": (b"alice", 0o600), "labels": (b'app="web"', 0o400)}


class FakeClient:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.service_accounts = self

    async def create(self, body: dict[str, Any], namespace: str, *, subresource: str) -> dict[str, Any]:
        self.requests.append(body)
        return {"spec": body["spec"], "status": {"token": f"t{len(self.requests)}",
                                                 "expirationTimestamp": "1970-01-01T01:00:00Z"}}  # t=3600


def test_token_manager_refreshes_at_80_percent() -> None:
    client, now = FakeClient(), [0.0]
    manager = TokenManager(client, clock=lambda: now[0])  # type: ignore[arg-type]
    key = TokenKey("ci", "builder", ("vault",), 3600, "web", "u1")
    assert asyncio.run(manager.token(key)) == "t1"
    assert client.requests[0]["spec"] == {"expirationSeconds": 3600, "audiences": ["vault"], "boundObjectRef": {
        "apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "u1"}}
    now[0] = 2800.0  # before 80 % (2880 s) less the jitter of at most 10 s
    assert asyncio.run(manager.token(key)) == "t1"
    now[0] = 2881.0
    assert asyncio.run(manager.token(key)) == "t2"
    manager.forget("u1")
    assert manager.cache == {}
    assert Token("x", 100_000.0, 100_000).requires_refresh(24 * 3600.0, 0.0)  # a day old: refreshed anyway
