"""etcd secured as kubeadm secures it, and the apiserver as its only client: a session-independent set-up with
an API-only ``kubelab.Cluster`` of its own with TLS etcd (``etcd_tls=True``; 1 and 3 members), its own PKI and its
own apiserver.

What a user would check: a process on the machine without etcd's client key cannot read etcd (no certificate,
or one from another CA), while the apiserver, given kube-apiserver's ``--etcd-cafile/--etcd-certfile/
--etcd-keyfile`` and https:// members in ``--etcd-servers``, serves and stores objects.

The apiserver given only part of the flags is one more on the cluster's etcd (``Cluster.run_component``), with
the flags the test chooses.
"""

from __future__ import annotations

import ssl
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import SESSION_APISERVER_ARGS, api_only
from kubelab.api import Cluster
from kubelab.cluster import StartupError
from kubelab.etcd import free_port
from kubelab.etcdcluster import EtcdCluster
from kubelab.pki import CertificateAuthority


@pytest.fixture(scope="module")
def tls_cluster() -> Iterator[Cluster]:
    with api_only(etcd_tls=True) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def tls_etcd(tls_cluster: Cluster) -> EtcdCluster:
    return tls_cluster.running.etcd


def _range(url: str, verify: ssl.SSLContext | bool = True) -> httpx.Response:
    """etcd's v3 JSON gateway: a Range over every key (what reading Secrets straight from etcd would be)."""
    return httpx.post(f"{url}/v3/kv/range", json={"key": "AA==", "range_end": "AA=="}, timeout=5, verify=verify)


def test_a_client_without_a_certificate_is_refused(tls_etcd: EtcdCluster) -> None:
    url = tls_etcd.members[0].url
    assert url.startswith("https://")
    assert tls_etcd.client_tls is not None
    with pytest.raises(httpx.HTTPError):  # the TLS handshake fails: etcd asks for a client certificate
        _range(url, verify=ssl.create_default_context(cafile=str(tls_etcd.client_tls.ca)))
    with pytest.raises(httpx.HTTPError):  # plain HTTP on the client port is not served either
        _range(url.replace("https://", "http://"))
    assert _range(url, verify=tls_etcd.client_tls.ssl_context()).status_code == 200


def test_a_certificate_of_another_ca_is_refused(tls_etcd: EtcdCluster, tmp_path: Path) -> None:
    other = CertificateAuthority.load_or_create(tmp_path / "ca", "not-etcd-ca")
    pair = other.issue(tmp_path / "intruder", "kube-apiserver-etcd-client", client=True)
    assert tls_etcd.client_tls is not None
    context = ssl.create_default_context(cafile=str(tls_etcd.client_tls.ca))
    context.load_cert_chain(str(pair.cert), str(pair.key))
    with pytest.raises(httpx.HTTPError):
        _range(tls_etcd.members[0].url, verify=context)


def test_keys_are_private_and_health_needs_no_key(tls_etcd: EtcdCluster) -> None:
    pki = tls_etcd.members[0].data_dir.parent / "pki"
    keys = sorted(pki.rglob("*.key"))
    assert {k.name for k in keys} >= {"ca.key", "server.key", "peer.key", "apiserver-etcd-client.key"}
    for key in keys:
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, key
    for directory in [pki, *(p for p in pki.rglob("*") if p.is_dir())]:
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    # kubeadm's liveness probe: /health on the metrics URL, plain HTTP, no data
    assert httpx.get(tls_etcd.members[0].health_url, timeout=5).json()["health"] == "true"


def test_the_apiserver_stores_through_a_tls_etcd(tls_cluster: Cluster, tls_etcd: EtcdCluster) -> None:
    # its command line (the log's first line): https:// members and kube-apiserver's --etcd-cafile/certfile/keyfile
    assert f"--etcd-servers {tls_etcd.servers} --etcd-cafile" in tls_cluster.logs("apiserver")
    with httpx.Client(base_url=tls_cluster.api_url, timeout=30) as c:
        assert c.post("/api/v1/namespaces", json={"metadata": {"name": "tls"}}).status_code == 201
        cm = {"metadata": {"name": "c"}, "data": {"k": "v"}}
        assert c.post("/api/v1/namespaces/tls/configmaps", json=cm).status_code == 201
        assert c.get("/api/v1/namespaces/tls/configmaps/c").json()["data"] == {"k": "v"}
    # and the object is really in that etcd, readable with the client certificate
    assert tls_etcd.client_tls is not None
    resp = httpx.post(f"{tls_etcd.members[0].url}/v3/kv/range", timeout=5, verify=tls_etcd.client_tls.ssl_context(),
                      json={"key": "L3JlZ2lzdHJ5L2NvbmZpZ21hcHMvdGxzL2M=", "count_only": True})
    assert resp.json()["count"] == "1"


def test_an_apiserver_without_the_client_key_cannot_use_etcd(tls_cluster: Cluster, tls_etcd: EtcdCluster,
                                                             tmp_path: Path) -> None:
    assert tls_etcd.apiserver_tls is not None
    port = free_port()
    server = tls_cluster.run_component("apiserver", "--etcd-servers", tls_etcd.servers, "--etcd-cafile",
                                       str(tls_etcd.apiserver_tls.ca), "--insecure-port", str(port),
                                       *SESSION_APISERVER_ARGS, log=tmp_path / "apiserver.log")

    def healthy() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False
    with pytest.raises(StartupError):  # it exits, or stays unhealthy: etcd refuses it
        server.wait_ready(healthy, timeout=15)
    assert server.poll() is not None  # stopped by wait_ready


def test_three_members_serve_the_apiserver_over_tls() -> None:
    with api_only(etcd_tls=True, etcd_members=3) as three:
        cluster = three.running.etcd
        assert len(cluster.urls) == 3 and all(u.startswith("https://") for u in cluster.urls)
        assert three.etcd_url == cluster.servers  # the apiserver's --etcd-servers: every member
        assert cluster.leader() is not None
        with httpx.Client(base_url=three.api_url, timeout=30) as c:
            assert c.post("/api/v1/namespaces", json={"metadata": {"name": "three"}}).status_code == 201
        assert cluster.client_tls is not None
        for member in cluster:  # replicated: every member answers a serializable read of the namespace
            resp = httpx.post(f"{member.url}/v3/kv/range", timeout=5, verify=cluster.client_tls.ssl_context(),
                              json={"key": "L3JlZ2lzdHJ5L25hbWVzcGFjZXMvdGhyZWU=", "serializable": True,
                                    "count_only": True})
            assert resp.json().get("count") == "1", member.name
