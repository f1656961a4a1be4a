"""Secrets against the real apiserver and etcd: the real kubectl 1.32 (create generic/tls/docker-registry, get,
describe, apply, patch) and REST errors as kube-apiserver words them. (A pod reading a Secret through a real kubelet:
``test_kubelet_runtime``; the official Python client with ``string_data``: ``test_python_client``.)"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import yaml

from conftest import Kubectl


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.strip()]


def post(client: httpx.Client, ns: str, body: dict[str, Any]) -> httpx.Response:
    return client.post(f"/api/v1/namespaces/{ns}/secrets", json={"apiVersion": "v1", "kind": "Secret", **body})


# --- kubectl -----------------------------------------------------------------------------------------------------
def test_kubectl_create_get_describe(kubectl: Kubectl, ns: str) -> None:
    out = kubectl("-n", ns, "create", "secret", "generic", "s", "--from-literal=a=b", "--from-literal=pw=s3cr3t!")
    assert out.stdout.strip() == "secret/s created"
    table = rows(kubectl("-n", ns, "get", "secrets").stdout)
    assert table[0] == ["NAME", "TYPE", "DATA", "AGE"]
    assert table[1][:3] == ["s", "Opaque", "2"]
    obj = yaml.safe_load(kubectl("-n", ns, "get", "secret", "s", "-o", "yaml").stdout)
    assert obj["kind"] == "Secret" and obj["type"] == "Opaque"
    assert obj["data"] == {"a": b64("b"), "pw": b64("s3cr3t!")}
    assert "stringData" not in obj
    described = kubectl("-n", ns, "describe", "secret", "s").stdout
    assert "Type:  Opaque" in described
    assert "a:   1 bytes" in described and "pw:  7 bytes" in described
    assert "s3cr3t" not in described
    assert kubectl("-n", ns, "get", "secrets", "--field-selector", "type=Opaque", "-o", "name").stdout.split() == \
        ["secret/s"]
    assert kubectl("-n", ns, "delete", "secret", "s").stdout.strip() == 'secret "s" deleted'


def test_kubectl_create_tls_and_docker_registry(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=kubelab",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    assert kubectl("-n", ns, "create", "secret", "tls", "web-tls", f"--cert={cert}", f"--key={key}").stdout.strip() \
        == "secret/web-tls created"
    kubectl("-n", ns, "create", "secret", "docker-registry", "pull", "--docker-server=r.example",
            "--docker-username=u", "--docker-password=p")
    table = {row[0]: row[1:3] for row in rows(kubectl("-n", ns, "get", "secrets").stdout)[1:]}
    assert table == {"web-tls": ["kubernetes.io/tls", "2"], "pull": ["kubernetes.io/dockerconfigjson", "1"]}
    tls = json.loads(kubectl("-n", ns, "get", "secret", "web-tls", "-o", "json").stdout)
    assert base64.b64decode(tls["data"]["tls.crt"]) == cert.read_bytes()
    pull = json.loads(kubectl("-n", ns, "get", "secret", "pull", "-o", "json").stdout)
    assert "r.example" in json.loads(base64.b64decode(pull["data"][".dockerconfigjson"]))["auths"]


SECRET_YAML = """\
apiVersion: v1
kind: Secret
metadata:
  name: app
type: kubernetes.io/basic-auth
stringData:
  username: admin
  password: {password}
"""


def test_kubectl_apply_string_data(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    manifest = tmp_path / "secret.yaml"
    manifest.write_text(SECRET_YAML.format(password="one"))
    assert kubectl("-n", ns, "apply", "-f", str(manifest)).stdout.strip() == "secret/app created"
    manifest.write_text(SECRET_YAML.format(password="two"))
    assert kubectl("-n", ns, "apply", "-f", str(manifest)).stdout.strip() == "secret/app configured"
    # stringData is never returned, so kubectl's three-way diff always finds it missing: "configured" again,
    # as against kube-apiserver, with nothing changed.
    assert kubectl("-n", ns, "apply", "-f", str(manifest)).stdout.strip() == "secret/app configured"
    obj = json.loads(kubectl("-n", ns, "get", "secret", "app", "-o", "json").stdout)
    assert obj["data"] == {"username": b64("admin"), "password": b64("two")}
    assert obj["type"] == "kubernetes.io/basic-auth" and "stringData" not in obj
    changed = kubectl("-n", ns, "patch", "secret", "app", "-p", '{"type":"Opaque"}', check=False)
    assert changed.returncode != 0
    assert 'The Secret "app" is invalid: type: Invalid value: "Opaque": field is immutable' in changed.stderr


# --- REST --------------------------------------------------------------------------------------------------------
def test_bad_base64_is_400(client: httpx.Client, ns: str) -> None:
    resp = post(client, ns, {"metadata": {"name": "bad"}, "data": {"a": "not base64"}})
    assert resp.status_code == 400
    assert resp.json()["message"] == \
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3'


def test_type_requirements_are_422_with_causes(client: httpx.Client, ns: str) -> None:
    resp = post(client, ns, {"metadata": {"name": "t"}, "type": "kubernetes.io/tls", "data": {"tls.crt": b64("c")}})
    assert resp.status_code == 422
    status = resp.json()
    assert status["reason"] == "Invalid"
    assert status["message"] == 'Secret "t" is invalid: data[tls.key]: Required value'
    assert status["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "data[tls.key]"}]
    resp = post(client, ns, {"metadata": {"name": "k"}, "data": {"bad key": ""}})
    assert resp.status_code == 422 and resp.json()["details"]["causes"][0]["field"] == "data[bad key]"


def test_immutable_secret(client: httpx.Client, ns: str) -> None:
    assert post(client, ns, {"metadata": {"name": "frozen"}, "stringData": {"a": "1"}, "immutable": True}) \
        .status_code == 201
    url = f"/api/v1/namespaces/{ns}/secrets/frozen"
    resp = client.patch(url, json={"stringData": {"a": "2"}},
                        headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 422
    assert resp.json()["message"] == \
        'Secret "frozen" is invalid: data: Forbidden: field is immutable when `immutable` is set'
    resp = client.patch(url, json={"metadata": {"labels": {"x": "y"}}},
                        headers={"Content-Type": "application/merge-patch+json"})
    assert resp.status_code == 200 and resp.json()["data"] == {"a": b64("1")}
