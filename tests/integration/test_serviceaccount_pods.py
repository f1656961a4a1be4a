"""Service accounts in pods, with an apiserver running the ServiceAccount admission plugin (the session apiserver
runs without it), a real controller-manager (the serviceaccount and root-CA publisher controllers) and a real
kubelet: pods get the ``default`` account and the ``kube-api-access-*`` volume, ``kube-root-ca.crt`` appears in
every namespace, and a running container reads its token, ``ca.crt`` and ``namespace`` at
``/var/run/secrets/kubernetes.io/serviceaccount`` and finds the apiserver in ``KUBERNETES_SERVICE_*``. The apiserver
is an API-only ``kubelab.Cluster`` of the module's own (HTTPS with the cluster CA, as `kubelab up`)."""

from __future__ import annotations

import ssl
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import api_only
from support.controllers import ControllerManager
from support.kubelet import Node, phase, running_node
from support.wait import wait_for

MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


class Cluster:
    def __init__(self, api: httpx.Client, node: Node, ca: bytes, root: Path) -> None:
        self.api, self.node, self.ca, self.root = api, node, ca, root

    def namespace(self) -> str:
        name = f"t-{uuid.uuid4().hex[:10]}"
        assert self.api.post("/api/v1/namespaces", json={"metadata": {"name": name}}).status_code == 201
        return name


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("sa-pods")
    with api_only("--disable-admission-plugins=") as kube:  # every plugin on, as kube-apiserver
        assert kube.running.pki is not None
        ca = kube.running.pki.ca_cert
        manager = ControllerManager(kube.api_url, tmp / "controller-manager.log", "--leader-elect=false",
                                    "--controllers=serviceaccount,namespace,root-ca-cert-publisher",
                                    "--root-ca-file", str(ca))
        try:
            (tmp / "node01").mkdir()
            with running_node(kube.api_url, "node01", tmp / "node01") as node, \
                    httpx.Client(base_url=kube.api_url, timeout=30) as client:
                wait_for(lambda: client.get("/api/v1/namespaces/default/serviceaccounts/default").status_code == 200,
                         timeout=60, what="the controller-manager at work")
                yield Cluster(client, node, ca.read_bytes(), tmp)
        finally:
            manager.stop()


def pod(name: str, *, node: str | None = None, account: str | None = None, automount: bool | None = None,
        command: str = "sleep 3600") -> dict[str, Any]:
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
                            "initContainers": [{"name": "setup", "image": "busybox", "command": ["true"]}],
                            "containers": [{"name": "app", "image": "busybox", "command": ["sh", "-c", command]}]}
    if node:
        spec["nodeName"] = node
    if account:
        spec["serviceAccountName"] = account
    if automount is not None:
        spec["automountServiceAccountToken"] = automount
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def create(cluster: Cluster, ns: str, body: dict[str, Any]) -> httpx.Response:
    return cluster.api.post(f"/api/v1/namespaces/{ns}/pods", json=body)


def token_volumes(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in obj["spec"].get("volumes") or [] if v["name"].startswith("kube-api-access-")]


def test_admission_gives_the_default_account_and_its_volume(cluster: Cluster) -> None:
    ns = cluster.namespace()
    created = create(cluster, ns, pod("web"))  # right after the namespace: the plugin waits for `default`
    assert created.status_code == 201, created.text
    obj = created.json()
    assert obj["spec"]["serviceAccountName"] == "default" and obj["spec"]["serviceAccount"] == "default"
    [volume] = token_volumes(obj)
    assert len(volume["name"]) == len("kube-api-access-") + 5
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}
    for container in (*obj["spec"]["initContainers"], *obj["spec"]["containers"]):
        assert container["volumeMounts"] == [{"name": volume["name"], "readOnly": True, "mountPath": MOUNT}]


def test_automount_settings_and_missing_accounts(cluster: Cluster) -> None:
    ns = cluster.namespace()
    wait_for(lambda: cluster.api.get(f"/api/v1/namespaces/{ns}/serviceaccounts/default").status_code == 200,
             what="the default ServiceAccount")
    missing = create(cluster, ns, pod("a", account="ghost"))
    assert missing.status_code == 403
    assert missing.json()["message"] == \
        f'pods "a" is forbidden: error looking up service account {ns}/ghost: serviceaccount "ghost" not found'
    quiet = {"metadata": {"name": "quiet"}, "automountServiceAccountToken": False}
    assert cluster.api.post(f"/api/v1/namespaces/{ns}/serviceaccounts", json=quiet).status_code == 201
    assert token_volumes(create(cluster, ns, pod("b", account="quiet")).json()) == []
    assert len(token_volumes(create(cluster, ns, pod("c", account="quiet", automount=True)).json())) == 1
    assert token_volumes(create(cluster, ns, pod("d", automount=False)).json()) == []


def test_root_ca_is_published_in_every_namespace(cluster: Cluster) -> None:
    ns = cluster.namespace()

    def published() -> dict[str, Any] | None:
        resp = cluster.api.get(f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt")
        return resp.json() if resp.status_code == 200 else None

    cm = wait_for(published, what="kube-root-ca.crt")
    assert cm["data"] == {"ca.crt": cluster.ca.decode()}
    assert cm["metadata"]["annotations"]["kubernetes.io/description"].startswith("Contains a CA bundle")
    cluster.api.patch(f"/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt", json={"data": {"ca.crt": "x"}},
                      headers={"Content-Type": "application/merge-patch+json"})
    wait_for(lambda: (cm := published()) and cm["data"] == {"ca.crt": cluster.ca.decode()}, what="the CA put back")


def test_a_running_pod_reads_its_token_ca_and_namespace(cluster: Cluster) -> None:
    ns = cluster.namespace()
    script = (f"cat {MOUNT}/namespace; echo; cat {MOUNT}/token; echo; cat {MOUNT}/ca.crt; "
              "env | grep ^KUBERNETES_ | sort; sleep 3600")
    assert create(cluster, ns, pod("reader", node="node01", command=script)).status_code == 201
    wait_for(lambda: phase(cluster.api.base_url.__str__(), ns, "reader") == "Running", what="reader Running")

    def log() -> str | None:
        text = cluster.api.get(f"/api/v1/namespaces/{ns}/pods/reader/log").text
        return text if "KUBERNETES_SERVICE_PORT=" in text else None

    lines = wait_for(log, what="the container's output").splitlines()
    assert lines[0] == ns
    token = lines[1]
    review = cluster.api.post("/apis/authentication.k8s.io/v1/tokenreviews", json={"spec": {"token": token}})
    user = review.json()["status"]["user"]
    reader = cluster.api.get(f"/api/v1/namespaces/{ns}/pods/reader").json()
    assert user["username"] == f"system:serviceaccount:{ns}:default"
    assert user["extra"]["authentication.kubernetes.io/pod-name"] == ["reader"]
    assert user["extra"]["authentication.kubernetes.io/pod-uid"] == [reader["metadata"]["uid"]]
    assert user["extra"]["authentication.kubernetes.io/node-name"] == ["node01"]
    assert "\n".join(lines).count("BEGIN CERTIFICATE") == 1 and cluster.ca.decode().strip() in "\n".join(lines)
    env = dict(line.split("=", 1) for line in lines if line.startswith("KUBERNETES_"))
    host, port = env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]
    # the apiserver's secure port, reachable from the host and verified with the cluster's CA
    verify = ssl.create_default_context(cadata=cluster.ca.decode())
    assert httpx.get(f"https://{host}:{port}/healthz", verify=verify).text == "ok"
    assert env["KUBERNETES_SERVICE_PORT_HTTPS"] == port
    assert env["KUBERNETES_PORT"] == f"tcp://{host}:{port}" == env[f"KUBERNETES_PORT_{port}_TCP"]
    assert env[f"KUBERNETES_PORT_{port}_TCP_ADDR"] == host and env[f"KUBERNETES_PORT_{port}_TCP_PROTO"] == "tcp"
    # The files are the atomic writer's: links into the current generation.
    volume = token_volumes(reader)[0]["name"]
    target = cluster.root / "node01" / "root" / "pods" / reader["metadata"]["uid"] / "volumes" / \
        "kubernetes.io~projected" / volume
    assert sorted(p.name for p in target.iterdir() if not p.name.startswith("..")) == ["ca.crt", "namespace", "token"]
    assert (target / "token").readlink() == Path("..data/token") and (target / "..data").is_symlink()
