"""What ``kubeadm init phase bootstrap-token`` makes so that nodes can join, and the token Secrets themselves.

``join_objects(server, ca_pem)`` are kubeadm's objects, created by `kubelab up` (``ensure_join_objects``) and kept
as they are when they already exist:

* the ``cluster-info`` ConfigMap of ``kube-public``: a kubeconfig with only the cluster (HTTPS server and CA
  data), which the bootstrap signer signs once per token;
* Role and RoleBinding ``kubeadm:bootstrap-signer-clusterinfo``: ``system:anonymous`` may get ``cluster-info``
  (and nothing else: the joining node trusts nothing yet, so it asks without credentials);
* ClusterRoleBindings: ``kubeadm:kubelet-bootstrap`` (``system:node-bootstrapper``: tokens of kubeadm's default
  group may create CSRs), ``kubeadm:node-autoapprove-bootstrap`` (``...:nodeclient``: their node client CSRs are
  auto-approved by the csrapproving controller), ``kubeadm:node-autoapprove-certificate-rotation``
  (``...:selfnodeclient`` for ``system:nodes``: nodes renew their own), and ``kubeadm:get-nodes``.

``token_secret(...)`` is kubeadm's ``BootstrapTokenToSecret``: the Secret ``kube-system/bootstrap-token-<id>`` of
type ``bootstrap.kubernetes.io/token``, by default for authentication and signing, in
``system:bootstrappers:kubeadm:default-node-token``, expiring after the TTL (24 h).
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Sequence
from typing import Any

import httpx
import yaml

from apimachinery import bootstraptoken as bt
from kubelab.addons import Addon, binding

__all__ = ["DEFAULT_GROUP", "DEFAULT_TTL", "DEFAULT_USAGES", "cluster_info_kubeconfig", "ensure_join_object",
           "ensure_join_objects",
           "join_objects", "token_secret"]

DEFAULT_GROUP = "system:bootstrappers:kubeadm:default-node-token"
DEFAULT_USAGES = ("signing", "authentication")
DEFAULT_TTL = datetime.timedelta(hours=24)
RBAC = "rbac.authorization.k8s.io"
CLUSTER_INFO_ROLE = "kubeadm:bootstrap-signer-clusterinfo"


def cluster_info_kubeconfig(server: str, ca_pem: bytes) -> str:
    """kubeadm's ``cluster-info`` kubeconfig: one cluster (unnamed), no users, no contexts."""
    return str(yaml.safe_dump({
        "apiVersion": "v1",
        "clusters": [{"cluster": {"certificate-authority-data": base64.b64encode(ca_pem).decode(), "server": server},
                      "name": ""}],
        "contexts": None, "current-context": "", "kind": "Config", "preferences": {}, "users": None,
    }, sort_keys=False))


def _group_binding(name: str, role: str, group: str) -> dict[str, Any]:
    return binding(name, role, group, subject_kind="Group")


def join_objects(server: str, ca_pem: bytes) -> list[Addon]:
    """(collection path, object) for each of kubeadm's objects, in creation order."""
    public = f"/api/v1/namespaces/{bt.KUBE_PUBLIC}"
    rbac_public = f"/apis/{RBAC}/v1/namespaces/{bt.KUBE_PUBLIC}"
    bindings = f"/apis/{RBAC}/v1/clusterrolebindings"
    return [
        (f"{public}/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": bt.CLUSTER_INFO, "namespace": bt.KUBE_PUBLIC},
                                  "data": {bt.KUBECONFIG_KEY: cluster_info_kubeconfig(server, ca_pem)}}),
        (f"{rbac_public}/roles", {"apiVersion": f"{RBAC}/v1", "kind": "Role",
                                  "metadata": {"name": CLUSTER_INFO_ROLE, "namespace": bt.KUBE_PUBLIC},
                                  "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"],
                                             "resourceNames": [bt.CLUSTER_INFO]}]}),
        (f"{rbac_public}/rolebindings", binding(CLUSTER_INFO_ROLE, CLUSTER_INFO_ROLE, "system:anonymous",
                                                role_kind="Role", namespace=bt.KUBE_PUBLIC)),
        (bindings, _group_binding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", DEFAULT_GROUP)),
        (bindings, _group_binding("kubeadm:node-autoapprove-bootstrap",
                                         "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
                                         DEFAULT_GROUP)),
        (bindings, _group_binding("kubeadm:node-autoapprove-certificate-rotation",
                                         "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
                                         "system:nodes")),
        (f"/apis/{RBAC}/v1/clusterroles", {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
                                           "metadata": {"name": "kubeadm:get-nodes"},
                                           "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]}]}),
        (bindings, _group_binding("kubeadm:get-nodes", "kubeadm:get-nodes", DEFAULT_GROUP)),
    ]


def ensure_join_objects(client: httpx.Client, server: str, ca_pem: bytes) -> list[str]:
    """Create whichever of ``join_objects`` is missing; an existing one is left as it is (kubeadm's
    ``CreateOrRetain``), except that ``cluster-info`` is brought up to date when the server or the CA changed (a
    secure port taken by something else since the last `up`): the bootstrap signer then signs it anew. Returns
    the problems met (a stand-in apiserver without RBAC just says no)."""
    return [problem for path, obj in join_objects(server, ca_pem)
            if (problem := ensure_join_object(client, path, obj)) is not None]


def ensure_join_object(client: httpx.Client, path: str, obj: dict[str, Any]) -> str | None:
    """One of ``join_objects`` as ``ensure_join_objects`` makes it (each is independent of the others, so a
    launcher may write them at once); the problem met, if any."""
    response = client.post(path, json=obj)
    if response.status_code == 409 and obj["kind"] == "ConfigMap":
        response = _update_cluster_info(client, f"{path}/{bt.CLUSTER_INFO}", obj["data"][bt.KUBECONFIG_KEY])
    if response.status_code not in (200, 201, 409):
        return f"{obj['kind']} {obj['metadata']['name']}: {response.status_code} {response.text[:200]}"
    return None


def _update_cluster_info(client: httpx.Client, path: str, kubeconfig: str) -> httpx.Response:
    """PUT ``cluster-info`` with ``kubeconfig`` unless it already holds it (the answer to the GET then)."""
    current = client.get(path)
    if current.status_code != 200:
        return current
    cm = current.json()
    if (cm.get("data") or {}).get(bt.KUBECONFIG_KEY) == kubeconfig:
        return current
    cm.setdefault("data", {})[bt.KUBECONFIG_KEY] = kubeconfig
    return client.put(path, json=cm)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def token_secret(token: bt.BootstrapToken, *, ttl: datetime.timedelta | None = DEFAULT_TTL, description: str = "",
                 usages: Sequence[str] = DEFAULT_USAGES, groups: Sequence[str] = (DEFAULT_GROUP,),
                 now: datetime.datetime | None = None) -> dict[str, Any]:
    """kubeadm's token Secret; ``ttl`` None or zero: a token that never expires."""
    data = {bt.TOKEN_ID_KEY: token.id, bt.TOKEN_SECRET_KEY: token.secret}
    if description:
        data[bt.DESCRIPTION_KEY] = description
    if ttl:
        expires = (now or datetime.datetime.now(datetime.UTC)) + ttl
        data[bt.EXPIRATION_KEY] = expires.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    for usage in usages:
        data[f"usage-bootstrap-{usage}"] = "true"
    if groups:
        data[bt.EXTRA_GROUPS_KEY] = ",".join(groups)
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": token.secret_name, "namespace": bt.KUBE_SYSTEM},
            "type": bt.SECRET_TYPE, "data": {k: _b64(v) for k, v in data.items()}}
