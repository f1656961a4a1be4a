"""`kubelab join` end to end on one machine, a second data dir standing for the second host: bootstrap tokens
(`kubelab token create|list|delete`), the bootstrap signer's JWS on ``cluster-info``, discovery with the CA pin,
the kubelet's TLS bootstrapping through an auto-approved CSR, and the token cleaner; kubeadm's answers for a
wrong pin or token secret; what anonymous and a bootstrap token may do."""

from __future__ import annotations

import os
import shlex
import signal
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID
from kubernetes import client as k8s

from conftest import KUBECTL
from kubelab.api import Cluster
from kubelab.etcd import free_port
from kubelab.kubeconfig import write_kubeconfig
from kubelab.pytest_plugin import Clusters
from kubelab.state import load_state
from support.launcher import assert_nothing_left, kubelab
from support.wait import wait_for

CLUSTER_INFO = "/api/v1/namespaces/kube-public/configmaps/cluster-info"


@pytest.fixture(scope="module")
def cluster(kubelab_clusters: Clusters) -> Cluster:
    """The session's cluster of this shape, shared by test_join and test_certificatesigningrequests."""
    return kubelab_clusters(nodes=0, components=("apiserver", "controller-manager"))


def kubectl(cluster: Cluster, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([KUBECTL, "--kubeconfig", str(cluster.kubeconfig), *args], capture_output=True, text=True,
                          timeout=60, env={"HOME": str(cluster.data_dir)})
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{done.stderr}")
    return done


def token(cluster: Cluster, *args: str) -> str:
    done = kubelab("token", "create", "--data-dir", str(cluster.data_dir), *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def signed(cluster: Cluster, token_id: str) -> bool:
    """Whether cluster-info carries the token's signature (the bootstrap signer has run)."""
    data = httpx.get(f"{cluster.api_url}{CLUSTER_INFO}").json().get("data") or {}
    return f"jws-kubeconfig-{token_id}" in data


@pytest.fixture
def node_dir(tmp_path: Path) -> Iterator[Path]:
    """The joined node's data dir; whatever `kubelab join --detach` left running is stopped afterwards."""
    yield tmp_path / "node"
    state = load_state(tmp_path / "node")
    if state is not None:
        kubelab("down", "--data-dir", str(tmp_path / "node"))
        assert_nothing_left(state)


def test_join_adds_a_ready_node_with_its_own_certificate(cluster: Cluster, node_dir: Path) -> None:
    line = token(cluster, "--print-join-command", "--description", "for the joined node")
    argv = shlex.split(line)
    assert argv[:2] == ["kubelab", "join"] and argv[2] == cluster.secure_url.removeprefix("https://")
    token_id = argv[argv.index("--token") + 1].split(".")[0]
    assert argv[argv.index("--discovery-token-ca-cert-hash") + 1].startswith("sha256:")
    listed = kubelab("token", "list", "--data-dir", str(cluster.data_dir))
    assert token_id in listed.stdout and "authentication,signing" in listed.stdout
    assert "for the joined node" in listed.stdout and "system:bootstrappers:kubeadm:default-node-token" in listed.stdout

    joined = kubelab(*argv[1:], "--node-name", "joined", "--data-dir", str(node_dir), "--port", str(free_port()),
                     "--detach", timeout=180)
    assert joined.returncode == 0, joined.stdout + joined.stderr
    assert "This node has joined the cluster as joined" in joined.stdout

    v1 = k8s.CoreV1Api(cluster.api_client())

    def ready() -> bool:
        try:
            node = v1.read_node("joined")
        except k8s.ApiException:
            return False
        return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])

    wait_for(ready, timeout=60, what="node joined Ready")
    again = kubelab(*argv[1:], "--node-name", "joined", "--data-dir", str(node_dir.parent / "again"))
    assert again.returncode == 1
    assert 'a Node with name "joined" and status "Ready" already exists in the cluster' in again.stderr
    pem = (node_dir / "kubelet" / "joined" / "pki" / "kubelet-client-current.pem").read_bytes()
    cert = x509.load_pem_x509_certificate(pem)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:joined"
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == ["system:nodes"]
    ca = x509.load_pem_x509_certificate((cluster.data_dir / "pki" / "ca.crt").read_bytes())
    cert.verify_directly_issued_by(ca)

    csrs = kubectl(cluster, "get", "csr").stdout
    row = next(line for line in csrs.splitlines() if f"system:bootstrap:{token_id}" in line)
    assert "kubernetes.io/kube-apiserver-client-kubelet" in row and "Approved,Issued" in row, csrs
    whoami = subprocess.run([KUBECTL, "--kubeconfig", str(node_dir / "kubelet.conf"), "auth", "whoami"],
                            capture_output=True, text=True, timeout=60)
    assert "system:node:joined" in whoami.stdout and "system:nodes" in whoami.stdout, whoami.stderr

    # Restarted (killed, and started again by join's supervisor), the kubelet keeps its certificate: no new CSR.
    record = next(r for r in load_state(node_dir).processes if r.name == "kubelet-joined")  # type: ignore[union-attr]
    os.kill(record.pid, signal.SIGKILL)
    log = node_dir / "logs" / "kubelet-joined.log"
    wait_for(lambda: "exists and is valid, skipping bootstrap" in log.read_text(), timeout=60,
             what="the restarted kubelet reusing its kubeconfig")
    wait_for(ready, timeout=60, what="node joined Ready again")
    assert sum(f"system:bootstrap:{token_id}" in line for line in kubectl(cluster, "get", "csr").stdout.splitlines()) \
        == 1

    status = kubelab("status", "--data-dir", str(node_dir))
    assert "kubelet-joined" in status.stdout, status.stdout + status.stderr
    down = kubelab("down", "--data-dir", str(node_dir))
    assert down.returncode == 0 and "stopped kubelet-joined" in down.stdout, down.stdout + down.stderr


def test_a_wrong_ca_pin_or_token_secret_is_refused(cluster: Cluster, tmp_path: Path) -> None:
    argv = shlex.split(token(cluster, "--print-join-command"))[1:]
    token_id = argv[argv.index("--token") + 1].split(".")[0]
    wait_for(lambda: signed(cluster, token_id), timeout=30, what="cluster-info signed")
    wrong_pin = list(argv)
    wrong_pin[wrong_pin.index("--discovery-token-ca-cert-hash") + 1] = "sha256:" + "0" * 64
    refused = kubelab(*wrong_pin, "--data-dir", str(tmp_path / "a"), "--discovery-timeout", "10")
    assert refused.returncode == 1
    assert "cluster CA found in cluster-info ConfigMap is invalid: none of the public keys" in refused.stderr
    assert not (tmp_path / "a" / "bootstrap-kubelet.conf").exists()

    wrong_secret = list(argv)
    wrong_secret[wrong_secret.index("--token") + 1] = f"{token_id}.{'z' * 16}"
    refused = kubelab(*wrong_secret, "--data-dir", str(tmp_path / "b"), "--discovery-timeout", "10")
    assert refused.returncode == 1
    assert "failed to verify JWS signature of received cluster info object, can't trust this API Server" in \
        refused.stderr
    unpinned = [a for a in argv if not a.startswith("sha256:") and a != "--discovery-token-ca-cert-hash"]
    refused = kubelab(*unpinned, "--data-dir", str(tmp_path / "c"))
    assert refused.returncode == 1 and "--discovery-token-unsafe-skip-ca-verification" in refused.stderr


def test_an_expired_token_is_cleaned_up_and_its_signature_removed(cluster: Cluster) -> None:
    value = token(cluster, "--ttl", "3s")
    token_id = value.split(".")[0]
    wait_for(lambda: signed(cluster, token_id), timeout=30, what="cluster-info signed")
    v1 = k8s.CoreV1Api(cluster.api_client())

    def gone() -> bool:
        try:
            v1.read_namespaced_secret(f"bootstrap-token-{token_id}", "kube-system")
        except k8s.ApiException as err:
            return err.status == 404
        return False

    wait_for(gone, timeout=30, what="the expired token deleted")
    wait_for(lambda: not signed(cluster, token_id), timeout=30, what="its signature removed")


def test_anonymous_reads_only_cluster_info_and_a_token_only_bootstraps(cluster: Cluster) -> None:
    ca = ssl.create_default_context(cafile=str(cluster.data_dir / "pki" / "ca.crt"))
    with httpx.Client(base_url=cluster.secure_url, verify=ca) as anonymous:
        info = anonymous.get(CLUSTER_INFO)
        assert info.status_code == 200
        kubeconfig = info.json()["data"]["kubeconfig"]
        assert cluster.secure_url in kubeconfig and "certificate-authority-data" in kubeconfig
        for path in ("/api/v1/namespaces/kube-public/configmaps/kube-root-ca.crt",
                     "/api/v1/namespaces/kube-public/configmaps", "/api/v1/namespaces/kube-system/secrets"):
            refused = anonymous.get(path)
            assert refused.status_code == 403, path
            assert 'User "system:anonymous" cannot' in refused.json()["message"]
    value = token(cluster)
    as_token = ["--token", value, "--kubeconfig", "/dev/null", "--server", cluster.secure_url,
                "--certificate-authority", str(cluster.data_dir / "pki" / "ca.crt")]
    whoami = subprocess.run([KUBECTL, *as_token, "auth", "whoami", "-o", "jsonpath={.status.userInfo}"],
                            capture_output=True, text=True, timeout=60)
    assert f'"username":"system:bootstrap:{value.split(".")[0]}"' in whoami.stdout, whoami.stderr
    assert "system:bootstrappers:kubeadm:default-node-token" in whoami.stdout
    for verb, allowed in (("create certificatesigningrequests", "yes"), ("list secrets -n kube-system", "no"),
                          ("get nodes", "yes"), ("list pods", "no")):
        answer = subprocess.run([KUBECTL, *as_token, "auth", "can-i", *verb.split()], capture_output=True, text=True,
                                timeout=60)
        assert answer.stdout.strip() == allowed, verb
    bad = subprocess.run([KUBECTL, "--token", value[:-1] + ("a" if value[-1] != "a" else "b"), "--kubeconfig",
                          "/dev/null", "--server", cluster.secure_url, "--certificate-authority",
                          str(cluster.data_dir / "pki" / "ca.crt"), "get", "csr"], capture_output=True, text=True,
                         timeout=60)
    assert "Unauthorized" in bad.stderr
    deleted = kubelab("token", "delete", value.split(".")[0], "--data-dir", str(cluster.data_dir))
    assert deleted.returncode == 0 and f'bootstrap token "{value.split(".")[0]}" deleted' in deleted.stdout


def test_a_kubelet_whose_token_may_not_bootstrap_exits_with_the_reason(cluster: Cluster, tmp_path: Path) -> None:
    value = token(cluster, "--groups", "system:bootstrappers:elsewhere")  # not kubeadm's group: no CSRs
    bootstrap = write_kubeconfig(tmp_path / "bootstrap.conf", cluster.secure_url,
                                 ca=cluster.data_dir / "pki" / "ca.crt", token=value)
    kubelet = cluster.run_component("kubelet", "--bootstrap-kubeconfig", str(bootstrap), "--kubeconfig",
                                    str(tmp_path / "kubelet.conf"), "--node-name", "stranger", "--root-dir",
                                    str(tmp_path), "--port", str(free_port()), log=tmp_path / "kubelet.log")
    try:
        assert kubelet.wait(60) == 1
    finally:
        kubelet.stop()
    assert "cannot create certificate signing request" in kubelet.log_text()
    assert f'User "system:bootstrap:{value.split(".")[0]}" cannot create resource "certificatesigningrequests"' in \
        kubelet.log_text()
    assert not (tmp_path / "kubelet.conf").exists()
