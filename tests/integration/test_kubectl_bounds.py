"""The real kubectl 1.32 against out-of-range and oversize input: what it prints is kube-apiserver's answer."""

from __future__ import annotations

import json

import httpx

from conftest import Kubectl
from support.builders import make_pod, make_rc


def test_kubectl_create_rc_with_overflowing_replicas(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    rc = json.dumps(make_rc("web", 1)).replace('"replicas": 1', '"replicas": 2147483648')
    result = kubectl("create", "-n", ns, "-f", "-", input=rc, check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'Error from server (BadRequest): error when creating "STDIN": ReplicationController in version "v1" cannot '
        "be handled as a ReplicationController: json: cannot unmarshal number 2147483648 into Go struct field "
        "ReplicationControllerSpec.spec.replicas of type int32")
    yaml_rc = ("apiVersion: v1\nkind: ReplicationController\nmetadata:\n  name: big\nspec:\n"
               "  replicas: 9223372036854775808\n  selector: {app: big}\n  template:\n    metadata:\n"
               "      labels: {app: big}\n    spec:\n      containers: [{name: c, image: busybox}]\n")
    result = kubectl("apply", "-n", ns, "-f", "-", input=yaml_rc, check=False)
    assert result.returncode == 1
    # kubectl reads YAML numbers as float64 and sends 2^63 as Go formats that float: the server names what it got
    assert "cannot unmarshal number 9223372036854776000 into Go struct field ReplicationControllerSpec.spec.replicas " \
           "of type int32" in result.stderr
    assert client.get(f"/api/v1/namespaces/{ns}/replicationcontrollers").json()["items"] == []


def test_kubectl_oversize_body_is_413(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
          "data": {"a": "x" * (3 * 1024 * 1024 + 1)}}
    result = kubectl("create", "-n", ns, "-f", "-", input=json.dumps(cm), check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == ('Error from server (RequestEntityTooLarge): error when creating "STDIN": '
                                     "Request entity too large: limit is 3145728")
    assert client.get(f"/api/v1/namespaces/{ns}/configmaps/big").status_code == 404


def test_kubectl_object_over_etcds_limit_is_413(kubectl: Kubectl, client: httpx.Client, ns: str) -> None:
    pod = make_pod("many").build()
    pod["spec"]["containers"] = [{"name": f"c{i}", "image": "busybox"} for i in range(10_000)]
    result = kubectl("create", "-n", ns, "-f", "-", input=json.dumps(pod), check=False, timeout=120)
    assert result.returncode == 1
    assert result.stderr.startswith('Error from server (RequestEntityTooLarge): error when creating "STDIN": '
                                    "Request entity too large: etcdserver: request is too large")
    assert client.get(f"/api/v1/namespaces/{ns}/pods/many").status_code == 404
