"""The issue's done-when for service accounts: in a whole ``kubelab up`` cluster (HTTPS, Node,RBAC, the controllers
writing as their service accounts), a pod running a Python script with the official client's in-cluster
configuration lists the pods of its namespace only once a RoleBinding grants its service account, and the real
kubectl works with a token from ``kubectl create token`` (``--token … auth whoami``).

The script runs ``InClusterConfigLoader``, the loader ``load_incluster_config()`` calls, with the mount's paths
spelled out: the process runtime gives a container its volumes under its own directory and rewrites the absolute
mount paths written in its command, but cannot mount them at ``/var/run/secrets/…`` for a library that reads its
own constants. Everything else is what ``load_incluster_config()`` does: ``KUBERNETES_SERVICE_HOST``/``_PORT`` from
the environment, the projected token and ``ca.crt`` (which verifies the apiserver's certificate)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import kubelab
from conftest import Kubectl
from kubelab.pytest_plugin import Clusters
from support.wait import wait_for

MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
SCRIPT = f"""
import time
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.config.incluster_config import InClusterConfigLoader

configuration = client.Configuration()
InClusterConfigLoader(token_filename="{MOUNT}/token", cert_filename="{MOUNT}/ca.crt").load_and_set(configuration)
namespace = open("{MOUNT}/namespace").read()
api = client.CoreV1Api(client.ApiClient(configuration))
while True:
    try:
        names = [p.metadata.name for p in api.list_namespaced_pod(namespace).items]
        print("listed", " ".join(names), flush=True)
    except ApiException as err:
        print("refused", err.status, flush=True)
    time.sleep(0.5)
"""


@pytest.fixture(scope="module")
def cluster(kubelab_clusters: Clusters) -> kubelab.Cluster:
    """The session's one-node cluster, shared with other modules: this one works in namespaces ``team`` and ``ci``."""
    return kubelab_clusters(nodes=1)


def log_of(cluster: kubelab.Cluster, ns: str, pod: str) -> str:
    return cluster.kubectl("logs", "-n", ns, pod, check=False).stdout


def test_an_in_cluster_client_lists_pods_once_a_role_binding_grants_it(cluster: kubelab.Cluster) -> None:
    runtime = cluster.kubectl("get", "nodes", "-o",
                              "jsonpath={.items[0].status.nodeInfo.containerRuntimeVersion}").stdout
    if runtime.startswith("linux://"):
        pytest.skip("the linux runtime's python image has the host interpreter but not the test venv's kubernetes "
                    "package, which this pod's script imports (an image with the client is needed: issue 15)")
    cluster.kubectl("create", "namespace", "team")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "lister", "namespace": "team"},
           "spec": {"terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "app", "image": "python", "command": [sys.executable, "-c", SCRIPT]}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))
    wait_for(lambda: "refused 403" in log_of(cluster, "team", "lister"), timeout=90,
             what="the pod's client refused by RBAC")
    cluster.kubectl("create", "role", "pod-reader", "-n", "team", "--verb=list", "--resource=pods")
    cluster.kubectl("create", "rolebinding", "lister", "-n", "team", "--role=pod-reader",
                    "--serviceaccount=team:default")
    wait_for(lambda: "listed lister" in log_of(cluster, "team", "lister"), timeout=30,
             what="the pod's client listing pods")


def test_kubectl_with_a_created_token(cluster: kubelab.Cluster, kubectl_bin: str, tmp_path: Path) -> None:
    cluster.kubectl("create", "namespace", "ci")
    wait_for(lambda: cluster.kubectl("get", "sa", "default", "-n", "ci", check=False).returncode == 0,
             what="the default ServiceAccount")
    token = cluster.kubectl("create", "token", "default", "-n", "ci").stdout.strip()
    kubectl = Kubectl(kubectl_bin, cluster.secure_url, tmp_path)
    ca = str(cluster.data_dir / "pki" / "ca.crt")
    me = kubectl("--token", token, "--certificate-authority", ca, "auth", "whoami", "-o", "json").stdout
    assert json.loads(me)["status"]["userInfo"]["username"] == "system:serviceaccount:ci:default"
    denied = kubectl("--token", token, "--certificate-authority", ca, "get", "pods", "-n", "ci", check=False)
    assert 'User "system:serviceaccount:ci:default" cannot list resource "pods" in API group "" in the namespace ' \
           '"ci"' in denied.stderr
    assert kubectl("--token", "bogus", "--certificate-authority", ca, "get", "pods", check=False).returncode == 1
