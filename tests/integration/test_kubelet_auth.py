"""The kubelet's own API behind TLS, authentication and authorization, and the apiserver's proxy subresources, on a
cluster as ``kubelab up`` makes it (one node): what a user meets on the kubelet's port directly, and through the
apiserver with kubectl 1.32.

The kubelet serves HTTPS with a serving certificate of the cluster CA, refuses anonymous requests (401), checks
bearer tokens with a TokenReview and every request with a SubjectAccessReview (403 with kube's text); the apiserver
reaches it with its own client certificate (``system:kubelet-api-admin``), so kubectl logs/exec/port-forward/top
work unchanged, and ``pods|services|nodes/{name}/proxy`` reach a pod, a Service's endpoint and the kubelet."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from pathlib import Path

import httpx
import pytest

import kubelab
from kubelab.api import find_kubectl
from kubelab.clusterpki import CONSOLE
from kubelab.etcd import free_port
from kubelab.pki import CertificateAuthority
from kubelab.pytest_plugin import Clusters
from support.wait import wait_for
from support.websocket import upgrade_status

NS = "default"


@pytest.fixture(scope="module")
def cluster(kubelab_clusters: Clusters) -> kubelab.Cluster:
    """The session's one-node cluster, shared with the other modules asking for it (so its objects keep to names
    of their own: pod and Service ``web``, service accounts ``viewer``, ``node-admin``, ``nobody``)."""
    return kubelab_clusters(nodes=1)


@pytest.fixture(scope="module")
def web(cluster: kubelab.Cluster) -> int:
    """Pod ``web`` (a Python HTTP server on a free port, yielded) behind Service ``web`` (port 80)."""
    port = free_port()
    cluster.kubectl("apply", "-f", "-", input=f"""
apiVersion: v1
kind: Pod
metadata: {{name: web, labels: {{app: web}}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: python:3
    command: [python3, -u, -m, http.server, "{port}"]
    ports: [{{containerPort: {port}}}]
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec:
  selector: {{app: web}}
  ports: [{{port: 80, targetPort: {port}}}]
""")
    cluster.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
    return port


@pytest.fixture(scope="module")
def kubelet(cluster: kubelab.Cluster) -> str:
    """The node's kubelet, as its Node publishes it."""
    port = cluster.kubectl("get", "node", "node01", "-o", "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}")
    return f"https://127.0.0.1:{port.stdout}"


def _tls(cluster: kubelab.Cluster, client: str | None = None) -> ssl.SSLContext:
    """Verifying the kubelet's certificate with the cluster CA (it is CA-signed), optionally presenting a client
    certificate of ``pki/clients``."""
    pki = cluster.data_dir / "pki"
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if client is not None:
        ctx.load_cert_chain(str(pki / "clients" / f"{client}.crt"), str(pki / "clients" / f"{client}.key"))
    return ctx


def _token(cluster: kubelab.Cluster, account: str) -> str:
    cluster.kubectl("create", "serviceaccount", account, check=False)
    return cluster.kubectl("create", "token", account).stdout.strip()


def _ws_status(url: str, ctx: ssl.SSLContext, headers: dict[str, str] | None = None) -> int:
    """The HTTP status a websocket upgrade (exec) gets from the kubelet (101 once accepted)."""
    return asyncio.run(upgrade_status(url, ctx, ("v4.channel.k8s.io",), headers))


def test_the_kubelet_refuses_anonymous_and_unknown_callers(cluster: kubelab.Cluster, web: int,
                                                           kubelet: str) -> None:
    ctx = _tls(cluster)  # the serving certificate is the cluster CA's, for the node's address
    logs = f"{kubelet}/containerLogs/{NS}/web/web"
    for path in (logs, f"{kubelet}/healthz", f"{kubelet}/metrics/resource"):
        resp = httpx.get(path, verify=ctx)
        assert (resp.status_code, resp.text) == (401, "Unauthorized\n")
    assert httpx.get(logs, verify=ctx, headers={"Authorization": "Bearer not-a-token"}).status_code == 401
    assert _ws_status(f"{kubelet.replace('https', 'wss')}/exec/{NS}/web/web?command=id&output=1", ctx) == 401
    # a client certificate of another CA does not even get through the TLS handshake
    other = CertificateAuthority.load_or_create(cluster.data_dir / "other-ca", "other")
    pair = other.issue(cluster.data_dir / "other-client", "mallory", organizations=("system:masters",), client=True)
    ctx_other = _tls(cluster)
    ctx_other.load_cert_chain(str(pair.cert), str(pair.key))
    with pytest.raises(httpx.TransportError):
        httpx.get(logs, verify=ctx_other)


def test_a_user_without_nodes_proxy_gets_kube_s_403(cluster: kubelab.Cluster, web: int, kubelet: str) -> None:
    token = _token(cluster, "viewer")
    user = f"system:serviceaccount:{NS}:viewer"
    headers = {"Authorization": f"Bearer {token}"}
    ctx = _tls(cluster)
    resp = httpx.get(f"{kubelet}/containerLogs/{NS}/web/web", verify=ctx, headers=headers)
    assert (resp.status_code, resp.text) == (
        403, f"Forbidden (user={user}, verb=get, resource=nodes, subresource(s)=[proxy])\n")
    resp = httpx.get(f"{kubelet}/metrics/resource", verify=ctx, headers=headers)
    assert resp.text == f"Forbidden (user={user}, verb=get, resource=nodes, subresource(s)=[metrics])\n"
    assert _ws_status(f"{kubelet.replace('https', 'wss')}/exec/{NS}/web/web?command=id&output=1", ctx,
                      headers) == 403
    # a token whose account may (kubeadm's system:kubelet-api-admin) passes
    cluster.kubectl("create", "serviceaccount", "node-admin")
    cluster.kubectl("create", "clusterrolebinding", "node-admin-kubelet", "--clusterrole=system:kubelet-api-admin",
                    f"--serviceaccount={NS}:node-admin")
    admin_token = _token(cluster, "node-admin")
    resp = httpx.get(f"{kubelet}/containerLogs/{NS}/web/web", verify=ctx,
                     headers={"Authorization": f"Bearer {admin_token}"})
    assert resp.status_code == 200, resp.text


def test_cluster_admin_s_certificate_passes(cluster: kubelab.Cluster, web: int, kubelet: str) -> None:
    ctx = _tls(cluster, "admin")
    assert httpx.get(f"{kubelet}/healthz", verify=ctx).text == "ok"
    assert "node_cpu_usage_seconds_total" in httpx.get(f"{kubelet}/metrics/resource", verify=ctx).text
    assert _ws_status(f"{kubelet.replace('https', 'wss')}/exec/{NS}/web/web?command=true&output=1", ctx) == 101


def test_the_console_reads_a_kubelet_s_informers_and_cannot_exec(cluster: kubelab.Cluster, web: int,
                                                                  kubelet: str) -> None:
    """``kubelab:console`` (kubelab.addons' read-only ClusterRole) may read the informer counters by
    ``nodes/informers``, which the kubelet asks before ``nodes/proxy`` — and nothing that ``nodes/proxy`` guards."""
    pki = cluster.running.pki
    assert pki is not None
    pki.client(CONSOLE)  # its certificate, as kubelab up writes it into the console's kubeconfig
    ctx = _tls(cluster, CONSOLE.file)
    resp = httpx.get(f"{kubelet}/debug/informers", verify=ctx)
    assert resp.status_code == 200, resp.text
    doc = resp.json()
    assert doc["kind"] == "InformerList" and doc["component"] == "kubelet node01"
    assert any(item["resource"] == "pods" for item in doc["items"]), doc
    assert _ws_status(f"{kubelet.replace('https', 'wss')}/exec/{NS}/web/web?command=id&output=1", ctx) == 403
    resp = httpx.get(f"{kubelet}/containerLogs/{NS}/web/web", verify=ctx)
    assert (resp.status_code, resp.text) == (
        403, f"Forbidden (user={CONSOLE.user}, verb=get, resource=nodes, subresource(s)=[proxy])\n")
    # without the right, both subresources were asked
    token = _token(cluster, "nobody")
    resp = httpx.get(f"{kubelet}/debug/informers", verify=_tls(cluster), headers={"Authorization": f"Bearer {token}"})
    assert (resp.status_code, resp.text) == (403, f"Forbidden (user=system:serviceaccount:{NS}:nobody, verb=get, "
                                                  "resource=nodes, subresource(s)=[informers proxy])\n")


def test_a_node_s_credentials_cannot_use_another_node_s_kubelet_api(cluster: kubelab.Cluster, web: int,
                                                                     kubelet: str) -> None:
    """The kubelet's own identity may review tokens and access (the Node authorizer's rules), not proxy to nodes."""
    conf = cluster.data_dir / "kubelet" / "node01" / "kubelet.conf"
    done = cluster.kubectl("--kubeconfig", str(conf), "auth", "can-i", "create",
                           "subjectaccessreviews.authorization.k8s.io", check=False)
    assert done.stdout.strip() == "yes"
    done = cluster.kubectl("--kubeconfig", str(conf), "get", "--raw", "/api/v1/nodes/node01/proxy/healthz",
                           check=False)
    assert done.returncode != 0 and "Forbidden" in done.stderr


def test_kubectl_logs_exec_port_forward_and_top_still_work(cluster: kubelab.Cluster, web: int) -> None:
    assert cluster.kubectl("exec", "web", "--", "echo", "through-tls").stdout == "through-tls\n"
    local = free_port()
    forward = subprocess.Popen([find_kubectl(), "--kubeconfig", str(cluster.kubeconfig), "port-forward",
                                "pod/web", f"{local}:{web}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        def served() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{local}/", timeout=2).status_code == 200
            except httpx.TransportError:
                return False
        wait_for(served, what="the forwarded port to serve")
    finally:
        forward.terminate()
        forward.communicate(timeout=10)  # reads and closes its pipes
    assert "GET / HTTP" in cluster.kubectl("logs", "web").stdout
    top = wait_for(lambda: cluster.kubectl("top", "node", "--no-headers", check=False).stdout, timeout=30,
                   what="kubectl top node")
    assert top.startswith("node01 ")


def test_proxy_subresources_reach_a_service_a_pod_and_the_kubelet(cluster: kubelab.Cluster, web: int,
                                                                   tmp_path: Path) -> None:
    listing = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/{NS}/services/web:80/proxy/").stdout
    assert "Directory listing for /" in listing
    assert "Directory listing for /" in cluster.kubectl("get", "--raw",
                                                         f"/api/v1/namespaces/{NS}/pods/web:{web}/proxy/").stdout
    assert "Directory listing for /" in cluster.kubectl("get", "--raw", f"/api/v1/namespaces/{NS}/pods/web/proxy/"
                                                        ).stdout  # the first containerPort
    assert cluster.kubectl("get", "--raw", "/api/v1/nodes/node01/proxy/healthz").stdout == "ok"
    bare = httpx.get(f"{cluster.secure_url}/api/v1/namespaces/{NS}/services/web:80/proxy?x=1",
                     verify=_tls(cluster, "admin"))
    assert (bare.status_code, bare.headers["location"]) == (301, f"/api/v1/namespaces/{NS}/services/web:80/proxy/?x=1")
    missing = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/{NS}/pods/web:{web}/proxy/no-such-file",
                              check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr, missing.stderr  # the pod's own 404
    cluster.kubectl("create", "service", "clusterip", "empty", "--tcp=80:8080")
    done = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/{NS}/services/empty:80/proxy/", check=False)
    assert 'no endpoints available for service \\"empty\\"' in done.stderr or \
        'no endpoints available for service "empty"' in done.stderr, done.stderr
    # kubectl proxy, as a user meets it
    local = free_port()
    proxy = subprocess.Popen([find_kubectl(), "--kubeconfig", str(cluster.kubeconfig), "proxy",
                              f"--port={local}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def through_proxy() -> str:
            try:
                resp = httpx.get(f"http://127.0.0.1:{local}/api/v1/namespaces/{NS}/services/web:80/proxy/",
                                 timeout=5)
                return resp.text if resp.status_code == 200 else ""
            except httpx.TransportError:
                return ""
        assert "Directory listing for /" in wait_for(through_proxy, what="kubectl proxy to the Service")
        resp = httpx.post(f"http://127.0.0.1:{local}/api/v1/namespaces/{NS}/services/web:80/proxy/", content=b"x")
        assert resp.status_code == 501  # http.server has no POST: the pod's own answer, relayed
    finally:
        proxy.terminate()
        proxy.communicate(timeout=10)  # reads and closes its pipes


def test_proxy_subresources_are_authorized_as_kube_does(cluster: kubelab.Cluster, web: int) -> None:
    headers = {"Authorization": f"Bearer {_token(cluster, 'nobody')}"}
    resp = httpx.get(f"{cluster.secure_url}/api/v1/namespaces/{NS}/services/web:80/proxy/", headers=headers,
                     verify=_tls(cluster))
    assert resp.status_code == 403
    assert resp.json()["message"] == ('services "web:80" is forbidden: User "system:serviceaccount:default:nobody" '
                                      'cannot get resource "services/proxy" in API group "" in the namespace '
                                      '"default"')


def test_discovery_lists_the_proxy_subresources(cluster: kubelab.Cluster) -> None:
    resources = cluster.kubectl("get", "--raw", "/api/v1").stdout
    for name, kind in (("pods/proxy", "PodProxyOptions"), ("services/proxy", "ServiceProxyOptions"),
                       ("nodes/proxy", "NodeProxyOptions")):
        assert f'"name":"{name}","singularName":"","namespaced":{"false" if name.startswith("nodes") else "true"},' \
               f'"kind":"{kind}","verbs":["create","delete","get","patch","update"]' in resources


def test_the_python_client_reaches_them_too(cluster: kubelab.Cluster, web: int) -> None:
    from kubernetes import client as k8s

    with cluster.api_client() as api:
        core = k8s.CoreV1Api(api)
        assert "Directory listing for /" in core.connect_get_namespaced_service_proxy("web:80", NS)  # via the 301
        assert core.connect_get_node_proxy_with_path("node01", "healthz") == "ok"
        with pytest.raises(k8s.ApiException) as missing:
            core.connect_get_namespaced_pod_proxy_with_path(f"web:{web}", NS, "no-such-file")
        assert missing.value.status == 404


def test_admission_sees_a_connect_of_pods_proxy(cluster: kubelab.Cluster, web: int) -> None:
    cluster.kubectl("apply", "-f", "-", input="""
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-secret-path}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CONNECT], resources: [pods/proxy]}]
  validations: [{expression: "object.path != '/secret'"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-secret-path}
spec: {policyName: no-secret-path, validationActions: [Deny]}
""")
    try:
        refused = wait_for(lambda: "denied request" in (r := cluster.kubectl(
            "get", "--raw", f"/api/v1/namespaces/{NS}/pods/web:{web}/proxy/secret", check=False)).stderr and r,
            what="the policy to refuse the CONNECT")
        assert "failed expression: object.path != '/secret'" in refused.stderr
        assert "Directory listing" in cluster.kubectl("get", "--raw", f"/api/v1/namespaces/{NS}/pods/web:{web}/proxy/"
                                                      ).stdout
    finally:
        cluster.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "no-secret-path")
