"""kube-proxy's userspace mode with the process runtime (no pod network): a Service over two pods (``busybox httpd`` on
their loopback pod IPs) answers from both at its ClusterIP's loopback stand-in, which the pods' Service variables
name (``$WEB_SERVICE_HOST:$WEB_SERVICE_PORT`` from another pod through ``kubectl exec``); sessionAffinity ClientIP
sticks; a deleted Service's listener closes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from apimachinery.serviceip import loopback_address
from conftest import Kubectl
from support.controllers import ControllerManager
from support.kubelet import Node, running_node
from support.proxy import start_proxy
from support.wait import wait_for

SERVE = 'mkdir -p /tmp/www-$HOSTNAME && echo $HOSTNAME > /tmp/www-$HOSTNAME/index.html && ' \
        'exec busybox httpd -f -p $POD_IP:8080 -h /tmp/www-$HOSTNAME'


@pytest.fixture(scope="module")
def node(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    root = tmp_path_factory.mktemp("userspace")
    cm = ControllerManager(api_url, root / "controller-manager.log", "--leader-elect=false",
                           "--controllers=nodeipam,endpointslice")
    try:
        with running_node(api_url, f"us-{uuid.uuid4().hex[:8]}", root) as found:
            proxy = start_proxy(api_url, root / "proxy.log", "--proxy-mode", "userspace")
            try:
                yield found
            finally:
                proxy.stop()
    finally:
        cm.stop()


def _pod(api_url: str, ns: str, node: Node, name: str, command: str, app: str = "web") -> None:
    env = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
            "spec": {"nodeName": node.name, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", command],
                                     "env": env}]}}
    assert httpx.post(f"{api_url}/api/v1/namespaces/{ns}/pods", json=body).status_code == 201
    wait_for(lambda: httpx.get(f"{api_url}/api/v1/namespaces/{ns}/pods/{name}").json().get("status", {})
             .get("phase") == "Running", what=f"{name} Running")


def _service(api_url: str, ns: str, name: str, **spec: Any) -> str:
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}], **spec}}
    resp = httpx.post(f"{api_url}/api/v1/namespaces/{ns}/services", json=body)
    assert resp.status_code == 201, resp.text
    return loopback_address(resp.json()["spec"]["clusterIP"])


def _get(url: str) -> str:
    try:
        return httpx.get(url, timeout=3).text.strip()
    except httpx.TransportError:
        return ""


def test_a_service_answers_from_both_pods_at_its_loopback_stand_in(api_url: str, kubectl: Kubectl, ns: str,
                                                                   node: Node, tmp_path: Path) -> None:
    address = _service(api_url, ns, "web")
    _pod(api_url, ns, node, "web-a", SERVE)
    _pod(api_url, ns, node, "web-b", SERVE)
    _pod(api_url, ns, node, "client", "exec sleep 3600", app="client")
    url = f"http://{address}/"
    both = {"web-a", "web-b"}  # Running is not listening yet (no readiness probe): until both have answered once
    wait_for(lambda: {_get(url) for _ in range(10)} == both, what=f"{url} to answer from both pods")
    assert {_get(url) for _ in range(30)} == both
    env = kubectl("exec", "-n", ns, "client", "--", "env").stdout.splitlines()
    assert f"WEB_SERVICE_HOST={address}" in env and "WEB_SERVICE_PORT=80" in env
    body = kubectl("exec", "-n", ns, "client", "--", "sh", "-c",
                   "busybox wget -qO- http://$WEB_SERVICE_HOST:$WEB_SERVICE_PORT/").stdout.strip()
    assert body in ("web-a", "web-b")


def test_affinity_sticks_and_a_deleted_service_stops_listening(api_url: str, ns: str, node: Node) -> None:
    _pod(api_url, ns, node, "web-c", SERVE)
    _pod(api_url, ns, node, "web-d", SERVE)
    address = _service(api_url, ns, "sticky", sessionAffinity="ClientIP")
    url = f"http://{address}/"
    wait_for(lambda: _get(url).startswith("web-"), what=f"{url} to answer")
    first = _get(url)
    assert {_get(url) for _ in range(20)} == {first}
    assert httpx.delete(f"{api_url}/api/v1/namespaces/{ns}/services/sticky").status_code == 200
    wait_for(lambda: _get(url) == "", what=f"{url} to close")
