"""HTTPS serving and authentication, as a user meets them: the apiserver with kubeadm's PKI (``kubelab.clusterpki``),
``--client-ca-file``, ``--token-auth-file`` and ``--anonymous-auth``; kubectl 1.32 and the Python client through
the kubeconfigs kubelab writes; and a whole cluster whose components each come as their own identity."""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from conftest import Kubectl, api_only, second_apiserver
from kubelab.api import Cluster
from kubelab.clusterpki import ADMIN, ClusterPKI, Identity, make_cluster_pki
from kubelab.etcd import free_port
from kubelab.kubeconfig import write_kubeconfig
from kubelab.pki import CertificateAuthority
from kubelab.pytest_plugin import Clusters
from support.websocket import upgrade_status

TOKENS = 'alice-token,alice,1001,"dev,qa"\nbob-token,bob,1002\n'
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
SELF_REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


class SecureServer:
    """An apiserver serving HTTPS with its cluster PKI (``pki``) on ``secure_port``, beside its plain ``plain_url``,
    that also takes the static tokens of ``TOKENS`` (in ``root``)."""

    def __init__(self, root: Path, pki: ClusterPKI, secure_port: int, plain_url: str) -> None:
        self.root = root
        self.pki = pki
        self.secure_port = secure_port
        self.url = f"https://127.0.0.1:{self.secure_port}"
        self.plain_url = plain_url

    def kubeconfig(self, identity: Identity) -> Path:
        return write_kubeconfig(self.root / f"{identity.file}.conf", self.url, ca=self.pki.ca_cert,
                                client=self.pki.client(identity))

    def verify(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.pki.ca_cert))


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureServer]:
    """This module's API-only ``kubelab.Cluster`` (HTTPS with kubeadm's PKI, as `kubelab up`), with static tokens."""
    root = tmp_path_factory.mktemp("authn")
    (root / "tokens.csv").write_text(TOKENS)
    with api_only("--token-auth-file", str(root / "tokens.csv")) as cluster:
        assert cluster.running.pki is not None
        yield SecureServer(root, cluster.running.pki, urlsplit(cluster.secure_url).port or 0, cluster.api_url)


@pytest.fixture()
def https_kubectl(kubectl_bin: str, secure: SecureServer, tmp_path: Path) -> Kubectl:
    return Kubectl(kubectl_bin, secure.url, tmp_path)


def _whoami(kubectl: Kubectl, *args: str, env: dict[str, str] | None = None) -> list[list[str]]:
    return [line.split(None, 1) for line in kubectl("auth", "whoami", *args, env=env).stdout.splitlines()]


def test_admin_kubeconfig_is_cluster_admin(https_kubectl: Kubectl, secure: SecureServer) -> None:
    env = {"KUBECONFIG": str(secure.kubeconfig(ADMIN))}
    assert _whoami(https_kubectl, env=env) == [["ATTRIBUTE", "VALUE"], ["Username", "kubernetes-admin"],
                                               ["Groups", "[system:masters system:authenticated]"]]
    name = f"cm-{free_port()}"
    https_kubectl("create", "configmap", name, "--from-literal=a=b", env=env)
    assert https_kubectl("get", "configmap", name, "-o", "jsonpath={.data.a}", env=env).stdout == "b"
    https_kubectl("delete", "configmap", name, env=env)


def test_python_client_through_the_kubeconfig(secure: SecureServer) -> None:
    with k8s_config.new_client_from_config(config_file=str(secure.kubeconfig(ADMIN))) as api:
        review = k8s.AuthenticationV1Api(api).create_self_subject_review(k8s.V1SelfSubjectReview())
        assert review.status.user_info.username == "kubernetes-admin"
        names = [n.metadata.name for n in k8s.CoreV1Api(api).list_namespace().items]
        assert {"default", "kube-system"} <= set(names)


def test_token_file_user(https_kubectl: Kubectl, secure: SecureServer) -> None:
    ca = ["--certificate-authority", str(secure.pki.ca_cert)]
    assert _whoami(https_kubectl, "--token", "alice-token", *ca) == [
        ["ATTRIBUTE", "VALUE"], ["Username", "alice"], ["UID", "1001"], ["Groups", "[dev qa system:authenticated]"]]
    cfg = k8s.Configuration(host=secure.url, api_key={"authorization": "bob-token"}, api_key_prefix={
        "authorization": "Bearer"})
    cfg.ssl_ca_cert = str(secure.pki.ca_cert)
    with k8s.ApiClient(cfg) as api:
        review = k8s.AuthenticationV1Api(api).create_self_subject_review(k8s.V1SelfSubjectReview())
    assert (review.status.user_info.username, review.status.user_info.groups) == ("bob", ["system:authenticated"])


def test_a_bad_token_is_401(https_kubectl: Kubectl, secure: SecureServer) -> None:
    result = https_kubectl("get", "pods", "--token", "nobody", "--certificate-authority", str(secure.pki.ca_cert),
                           check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "error: You must be logged in to the server (the server has asked for the client to provide credentials)")
    resp = httpx.get(f"{secure.url}/api/v1/pods", headers={"Authorization": "Bearer nobody"}, verify=secure.verify())
    assert resp.status_code == 401
    assert resp.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                           "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
    cfg = k8s.Configuration(host=secure.url, api_key={"authorization": "Bearer nobody"})
    cfg.ssl_ca_cert = str(secure.pki.ca_cert)
    with k8s.ApiClient(cfg) as api, pytest.raises(k8s.ApiException) as err:
        k8s.CoreV1Api(api).list_namespace()
    assert err.value.status == 401


def test_a_client_certificate_of_another_ca_is_refused(secure: SecureServer, tmp_path: Path) -> None:
    """kube answers 401; Python's ssl verifies a certificate it asks for, so the handshake refuses it instead."""
    other = CertificateAuthority.load_or_create(tmp_path / "other-ca", "other")
    pair = other.issue(tmp_path / "mallory", "mallory", organizations=["system:masters"], client=True)
    context = secure.verify()
    context.load_cert_chain(str(pair.cert), str(pair.key))
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{secure.url}/api/v1/namespaces", verify=context).raise_for_status()


def test_anonymous_over_https(secure: SecureServer) -> None:
    """Anonymous, and under RBAC (as kube's bootstrap policy) allowed only the public info, not even whoami."""
    resp = httpx.post(f"{secure.url}{WHOAMI}", json=SELF_REVIEW, verify=secure.verify())
    assert resp.status_code == 403, resp.text
    assert resp.json()["message"] == ('selfsubjectreviews.authentication.k8s.io is forbidden: User "system:anonymous" '
                                      'cannot create resource "selfsubjectreviews" in API group '
                                      '"authentication.k8s.io" at the cluster scope')
    assert httpx.get(f"{secure.url}/version", verify=secure.verify()).status_code == 200


def test_serving_certificate_names(secure: SecureServer) -> None:
    """kubeadm's SANs: clients that reach it by ``localhost`` (or inside the cluster by its Service names) verify."""
    assert httpx.get(f"https://localhost:{secure.secure_port}/healthz", verify=secure.verify()).text == "ok"
    with (ssl.create_connection(("127.0.0.1", secure.secure_port)) as sock,
          secure.verify().wrap_socket(sock, server_hostname="kubernetes.default.svc.cluster.local") as tls):
        names = {value for _, value in tls.getpeercert()["subjectAltName"]}
    assert {"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
            "localhost", "127.0.0.1", "10.96.0.1"} <= names


def test_the_secure_port_sends_no_session_ticket(secure: SecureServer) -> None:
    """No client of a cluster resumes a TLS session (client-go keeps no session cache), so the apiserver issues no
    TLS 1.3 tickets, which cost it a third of each handshake (apimachinery/tlsserver.py)."""
    context = secure.verify()
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    with (ssl.create_connection(("127.0.0.1", secure.secure_port)) as sock,
          context.wrap_socket(sock, server_hostname="localhost") as tls):
        tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := tls.recv(65536):  # tickets arrive after the handshake, before or with the answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok")
        assert tls.session is not None and not tls.session.has_ticket


def test_the_plain_port_still_answers(secure: SecureServer) -> None:
    assert httpx.get(f"{secure.plain_url}/api/v1/namespaces/default").status_code == 200


def test_without_anonymous_auth_a_request_without_credentials_is_401(apiserver: Cluster, tmp_path: Path,
                                                                      kubectl_bin: str) -> None:
    # One more apiserver on the session's etcd (``second_apiserver``) without a plain port, ready once its HTTPS
    # /healthz answers the admin: a ``kubelab.Cluster``'s own apiserver always has its plain port, which its
    # launcher checks.
    (tmp_path / "tokens.csv").write_text(TOKENS)
    pki, port = make_cluster_pki(tmp_path / "pki"), free_port()
    server = SecureServer(tmp_path, pki, port, "")
    admin = server.pki.client(ADMIN)
    as_admin = server.verify()
    as_admin.load_cert_chain(str(admin.cert), str(admin.key))

    def healthy() -> bool:
        try:
            return httpx.get(f"{server.url}/healthz", verify=as_admin, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False
    bare, plain = second_apiserver(apiserver, "--secure-port", str(port), *pki.apiserver_flags(),
                                   "--token-auth-file", str(tmp_path / "tokens.csv"), "--anonymous-auth=false",
                                   "--insecure-port", "0", ready=healthy, log=tmp_path / "apiserver.log")
    try:
        resp = httpx.post(f"{server.url}{WHOAMI}", json=SELF_REVIEW, verify=server.verify())
        assert (resp.status_code, resp.json()["reason"]) == (401, "Unauthorized")
        admin = Kubectl(kubectl_bin, server.url, tmp_path)
        assert _whoami(admin, env={"KUBECONFIG": str(server.kubeconfig(ADMIN))})[1] == ["Username", "kubernetes-admin"]
        with pytest.raises(httpx.ConnectError):
            httpx.get(plain)  # --insecure-port 0: no plain port
        # a websocket upgrade (exec) is authenticated before it is accepted
        exec_url = f"{server.url}/api/v1/namespaces/default/pods/nope/exec?command=true&stdout=1"
        assert asyncio.run(upgrade_status(exec_url, server.verify())) == 401
        # the admin gets past authentication to the pod lookup, whose refusal closes the websocket before it opens
        assert asyncio.run(upgrade_status(exec_url, as_admin)) == 403
    finally:
        bare.stop()


# ---- a whole cluster: every component its own identity, over HTTPS --------------------------------------------

def test_each_component_comes_as_its_own_identity(kubelab_clusters: Clusters, kubectl_bin: str,
                                                  tmp_path: Path) -> None:
    cluster = kubelab_clusters(nodes=1)  # the session's one-node cluster, shared: the pod is named for this test
    assert cluster.secure_url.startswith("https://127.0.0.1:")
    kubeconfig = json.loads(cluster.kubectl("config", "view", "--raw", "-o", "json").stdout)
    assert kubeconfig["clusters"][0]["cluster"]["server"] == cluster.secure_url
    kubectl = Kubectl(kubectl_bin, cluster.secure_url, tmp_path)
    expected = {cluster.kubeconfig: ("kubernetes-admin", "[system:masters system:authenticated]"),
                cluster.data_dir / "controller-manager.conf": ("system:kube-controller-manager",
                                                               "[system:authenticated]"),
                cluster.data_dir / "scheduler.conf": ("system:kube-scheduler", "[system:authenticated]"),
                cluster.data_dir / "kubelet" / "node01" / "kubelet.conf": (
                    "system:node:node01", "[system:nodes system:authenticated]")}
    for path, (user, groups) in expected.items():
        assert _whoami(kubectl, env={"KUBECONFIG": str(path)})[1:] == [["Username", user], ["Groups", groups]]
        assert oct(path.stat().st_mode & 0o777) == "0o600"
    # The components reach the apiserver over HTTPS with those identities: the node is Ready and a pod runs.
    cluster.kubectl("run", "identities", "--image=busybox", "--restart=Never", "--", "sleep", "3600")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "identities", "namespace": "default"}}
    cluster.wait_for(pod, "jsonpath={.status.phase}=Running", timeout=60)
    # exec upgrades to a websocket over the same TLS connection: it is authenticated too
    assert cluster.kubectl("exec", "identities", "--", "echo", "hi").stdout == "hi\n"
    # kubectl's zero-config plain port still answers without credentials
    plain = subprocess.run([kubectl_bin, "-s", cluster.api_url, "get", "nodes", "-o", "name"], capture_output=True,
                           text=True, env={"HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none")})
    assert plain.stdout == "node/node01\n", plain.stderr
