"""Secrets encrypted at rest (``--encryption-provider-config``), checked as a cluster operator checks them: the
value etcd holds (read straight from etcd with aetcd, not through the apiserver) is kube's ``k8s:enc:…``
ciphertext without the secret in it, the API answers the plain Secret, keys rotate by restarting with a new first
key and replacing every Secret, and a Secret whose key is gone fails with kube's error while the rest is served.

Each test runs an API-only ``kubelab.Cluster`` of its own (``api_only``): an apiserver without a test's keys would
hold its Secrets undecodable. Its apiserver starts with the test's encryption config and is restarted on the same
etcd with another (``Cluster.restart(name, extra_args=...)``: a flag given again wins over the library's own)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import aetcd
import httpx
import pytest

from conftest import Kubectl, api_only
from kubelab.api import Cluster
from kubelab.cluster import StartupError

PASSWORD = "hunter2-correct-horse"
Start = Callable[[Path], Cluster]  # (re)starts the test's apiserver with an encryption config


def key(seed: int) -> str:
    return base64.b64encode(bytes([seed]) * 32).decode()


def encryption_config(path: Path, *providers: str) -> Path:
    """An EncryptionConfiguration for secrets; each provider is YAML of one list item."""
    items = "\n".join(f"      - {p}" for p in providers)
    path.write_text(f"""apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
{items}
""")
    path.chmod(0o600)
    return path


def aescbc(name: str, seed: int) -> str:
    return f'aescbc: {{keys: [{{name: {name}, secret: "{key(seed)}"}}]}}'


@pytest.fixture()
def start() -> Iterator[Start]:
    """Starts the test's cluster with an encryption config, and restarts its apiserver with another on each later
    call; stops it after the test."""
    clusters: list[Cluster] = []

    def run(config: Path) -> Cluster:
        flags = ["--encryption-provider-config", str(config)]
        if clusters:
            clusters[0].restart("apiserver", extra_args=flags)
        else:
            clusters.append(api_only(*flags).start())
        return clusters[0]

    yield run
    for cluster in clusters:
        cluster.stop()


async def stored(api: Cluster, key: str) -> bytes:
    """The value etcd holds under ``key``, read straight from the cluster's etcd."""
    async with aetcd.Client(host="127.0.0.1", port=api.running.etcd.members[0].client_port) as client:
        got = await client.get(key.encode())
        assert got is not None, key
        return bytes(got.value)


def create_secret(api: Cluster, name: str) -> str:
    ns = f"t-{uuid.uuid4().hex[:10]}"
    with httpx.Client(base_url=api.api_url, timeout=30) as c:
        assert c.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
        resp = c.post(f"/api/v1/namespaces/{ns}/secrets",
                      json={"metadata": {"name": name}, "stringData": {"password": PASSWORD}})
        assert resp.status_code == 201, resp.text
    return ns


def password(api: Cluster, ns: str, name: str) -> str:
    resp = httpx.get(f"{api.api_url}/api/v1/namespaces/{ns}/secrets/{name}", timeout=30)
    assert resp.status_code == 200, resp.text
    return base64.b64decode(resp.json()["data"]["password"]).decode()


async def test_secrets_are_ciphertext_in_etcd_and_plain_through_the_api(
        start: Start, tmp_path: Path) -> None:
    api = start(encryption_config(tmp_path / "enc.yaml", aescbc("key1", 1), "identity: {}"))
    ns = create_secret(api, "db")
    raw = await stored(api, f"/registry/secrets/{ns}/db")
    assert raw.startswith(b"k8s:enc:aescbc:v1:key1:")
    assert PASSWORD.encode() not in raw and base64.b64encode(PASSWORD.encode()) not in raw and b"password" not in raw
    assert password(api, ns, "db") == PASSWORD
    with httpx.Client(base_url=api.api_url, timeout=30) as c:
        listed = c.get(f"/api/v1/namespaces/{ns}/secrets").json()["items"]
        assert [base64.b64decode(s["data"]["password"]).decode() for s in listed] == [PASSWORD]
        paged = c.get(f"/api/v1/namespaces/{ns}/secrets", params={"limit": 1}).json()["items"]  # from etcd
        assert base64.b64decode(paged[0]["data"]["password"]).decode() == PASSWORD
        # ConfigMaps are not in the configuration: stored as plain JSON.
        assert c.post(f"/api/v1/namespaces/{ns}/configmaps",
                      json={"metadata": {"name": "plain"}, "data": {"k": "visible"}}).status_code == 201
    assert b'"visible"' in await stored(api, f"/registry/configmaps/{ns}/plain")

    # A restarted apiserver fills its watch cache from etcd and replays a watch from etcd's history: decrypted.
    rv = httpx.get(f"{api.api_url}/api/v1/namespaces/{ns}/secrets/db").json()["metadata"]["resourceVersion"]
    api = start(encryption_config(tmp_path / "enc.yaml", aescbc("key1", 1)))
    with httpx.Client(base_url=api.api_url, timeout=30) as c:
        cached = c.get(f"/api/v1/namespaces/{ns}/secrets", params={"resourceVersion": "0"}).json()["items"]
        assert base64.b64decode(cached[0]["data"]["password"]).decode() == PASSWORD
        c.patch(f"/api/v1/namespaces/{ns}/secrets/db", json={"metadata": {"labels": {"a": "b"}}},
                headers={"Content-Type": "application/merge-patch+json"}).raise_for_status()
        with c.stream("GET", f"/api/v1/namespaces/{ns}/secrets",
                      params={"watch": "1", "resourceVersion": str(int(rv) - 1), "timeoutSeconds": "5"}) as stream:
            events = [json.loads(line) for line in stream.iter_lines() if line]
    assert events and all(base64.b64decode(e["object"]["data"]["password"]).decode() == PASSWORD for e in events)


@pytest.mark.parametrize("provider", ["aesgcm", "secretbox"])
async def test_other_providers_store_their_prefix(provider: str, start: Start,
                                                 tmp_path: Path) -> None:
    config = encryption_config(tmp_path / "enc.yaml", f'{provider}: {{keys: [{{name: k9, secret: "{key(9)}"}}]}}')
    api = start(config)
    ns = create_secret(api, "s")
    raw = await stored(api, f"/registry/secrets/{ns}/s")
    assert raw.startswith(f"k8s:enc:{provider}:v1:k9:".encode()) and b"password" not in raw
    assert password(api, ns, "s") == PASSWORD


async def test_rotation_by_replacing_every_secret(start: Start, tmp_path: Path,
                                                  kubectl_bin: str) -> None:
    api = start(encryption_config(tmp_path / "old.yaml", aescbc("old", 2)))
    ns = create_secret(api, "a")
    other = create_secret(api, "b")
    assert (await stored(api, f"/registry/secrets/{ns}/a")).startswith(b"k8s:enc:aescbc:v1:old:")

    # The new key first, the old one still there to read: reads work, writes use the new key.
    keys = f'{{name: new, secret: "{key(3)}"}}, {{name: old, secret: "{key(2)}"}}'
    both = encryption_config(tmp_path / "both.yaml", f"aescbc: {{keys: [{keys}]}}")
    api = start(both)
    assert password(api, ns, "a") == PASSWORD
    kubectl = Kubectl(kubectl_bin, api.api_url, tmp_path)
    everything = kubectl("get", "secrets", "-A", "-o", "json").stdout
    kubectl("replace", "-f", "-", input=everything)
    for namespace, name in ((ns, "a"), (other, "b")):
        assert (await stored(api, f"/registry/secrets/{namespace}/{name}")).startswith(
            b"k8s:enc:aescbc:v1:new:")

    # The old key can go now.
    api = start(encryption_config(tmp_path / "new.yaml", aescbc("new", 3)))
    assert password(api, ns, "a") == PASSWORD and password(api, other, "b") == PASSWORD
    assert len(json.loads(Kubectl(kubectl_bin, api.api_url, tmp_path)("get", "secrets", "-A", "-o", "json")
                          .stdout)["items"]) >= 2


async def test_identity_first_reads_encrypted_data_and_writes_plain(start: Start,
                                                                    tmp_path: Path) -> None:
    api = start(encryption_config(tmp_path / "enc.yaml", aescbc("k", 4)))
    ns = create_secret(api, "s")
    api = start(encryption_config(tmp_path / "dec.yaml", "identity: {}", aescbc("k", 4)))
    assert password(api, ns, "s") == PASSWORD
    with httpx.Client(base_url=api.api_url, timeout=30) as c:
        assert c.post(f"/api/v1/namespaces/{ns}/secrets",
                      json={"metadata": {"name": "new"}, "stringData": {"password": PASSWORD}}).status_code == 201
    assert base64.b64encode(PASSWORD.encode()) in await stored(api, f"/registry/secrets/{ns}/new")


async def test_a_missing_key_fails_those_reads_and_nothing_else(start: Start, tmp_path: Path) -> None:
    api = start(encryption_config(tmp_path / "enc.yaml", aescbc("lost", 5)))
    ns = create_secret(api, "s")
    api = start(encryption_config(tmp_path / "other.yaml", aescbc("other", 6)))
    failing = "no matching key was found for the provided AES transformer"
    with httpx.Client(base_url=api.api_url, timeout=30) as c:
        # kube's etcd3 store: a GET answers the transformer's error, a LIST names the key too.
        got = c.get(f"/api/v1/namespaces/{ns}/secrets/s")
        assert got.status_code == 500
        assert got.json()["reason"] == "InternalError"
        assert got.json()["message"] == f"Internal error occurred: {failing}"
        listed = c.get(f"/api/v1/namespaces/{ns}/secrets")
        assert listed.status_code == 500 and listed.json()["reason"] == "InternalError"
        assert listed.json()["message"] == \
            f'Internal error occurred: unable to transform key "/registry/secrets/{ns}/s": {failing}'
        assert c.get(f"/api/v1/namespaces/{ns}/secrets/s", params={"resourceVersion": "0"}).json()["message"] == \
            f"Internal error occurred: {failing}"
        assert c.delete(f"/api/v1/namespaces/{ns}/secrets/s").status_code == 500
        # Everything else is served: other resources, and Secrets this key can read.
        assert c.get(f"/api/v1/namespaces/{ns}").status_code == 200
        assert c.post(f"/api/v1/namespaces/{ns}/configmaps", json={"metadata": {"name": "c"}}).status_code == 201
        assert c.post(f"/api/v1/namespaces/{ns}/secrets",
                      json={"metadata": {"name": "fresh"}, "stringData": {"p": "x"}}).status_code == 201
        assert c.get(f"/api/v1/namespaces/{ns}/secrets/fresh").status_code == 200
        assert c.get("/readyz").text == "ok"


def test_a_bad_configuration_stops_the_start(tmp_path: Path) -> None:
    config = encryption_config(tmp_path / "bad.yaml", 'aescbc: {keys: [{name: k, secret: "MTIzNDU2Nzg="}]}')
    with pytest.raises(StartupError, match="apiserver"):
        api_only("--encryption-provider-config", str(config), data_dir=tmp_path / "data").start()
    log = (tmp_path / "data" / "logs" / "apiserver.log").read_text()
    assert (f'Error: error while parsing encryption provider configuration file "{config}": error while parsing '
            'file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of '
            'the expected length, got 8, expected one of [16 24 32]') in log
